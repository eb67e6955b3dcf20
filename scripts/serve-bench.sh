#!/usr/bin/env bash
# serve-bench.sh measures xsect serve under xsect loadgen: gcide's index and
# the TREC 2005 efficiency queries of 2+ terms (issue 13's anchor), on the
# CPU, with 1, 8 and 64 clients of one query per request, then with
# requests of 16 queries; each configuration ROUNDS times. It prints one
# loadgen report per run, then checks that SIGTERM ends the server with
# status 0.
#
#   scripts/serve-bench.sh [XSECT] [DATA_DIR]
#
# XSECT is the xsect binary (default: built here into OUT). DATA_DIR is the
# shared data folder (default ../shared/data from the repository root).
# Environment: ROUNDS (default 3), DURATION (default 10s), CLIENTS (default
# "1 8 64"), BATCHES (default "1 16"), DEVICE (default cpu), GPUS (passed as
# --gpus: "0," one GPU, "0,0" two owners of GPU 0, "all" every GPU; unset:
# the server's default, every GPU), PORT (default 18080), SERVE_FLAGS (more flags for xsect serve), SERVE_ENV (variables
# for the server alone, such as GOGC=400), SERVER_CORES and LOADGEN_CORES
# (taskset lists: the server and the load generator each on cores of its
# own), OUT (scratch folder, default a temporary one).
#
# The server and the load generator share the machine: on a machine of few
# cores, the figures are those of both together.
set -eu -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
xsect=${1:-}
if [ -z "$xsect" ]; then
	xsect=$out/xsect
	(cd "$root" && go build -o "$xsect" ./cmd/xsect)
fi
data=${2:-$root/../shared/data}
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
port=${PORT:-18080}
gcide=$data/ir/gcide

if [ ! -f "$out/gcide.idx" ]; then
	"$xsect" index build "$gcide/gcide.docs.sets.gz" -o "$out/gcide.idx"
fi
awk 'NF >= 2' "$gcide/gcide.q.topics.terabyte05.efficiency.txt.sets" >"$out/q2.sets"
echo "# $(wc -l <"$out/q2.sets") queries of 2+ terms; $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# shellcheck disable=SC2086
env ${SERVE_ENV:-} ${SERVER_CORES:+taskset -c "$SERVER_CORES"} "$xsect" serve "$out/gcide.idx" --addr "127.0.0.1:$port" --device "${DEVICE:-cpu}" ${GPUS:+--gpus "$GPUS"} ${SERVE_FLAGS:-} 2>"$out/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do
	grep -q 'msg=ready' "$out/serve.log" && break
	kill -0 $server 2>/dev/null || { cat "$out/serve.log"; exit 1; }
	sleep 0.1
done
grep -h 'msg=ready' "$out/serve.log"

# batches prints the server's count of the queries in batches, of the
# batches, the seconds of the batches in the engine, the requests' (their
# pieces') seconds of waiting for their batch and their number (0 0 0 0,0
# without curl), and the server's CPU
# seconds (user and system, from /proc).
batches() {
	if command -v curl >/dev/null; then
		curl -s "http://127.0.0.1:$port/metrics" | awk '
			/^xsect_batch_size_sum /{q=$2} /^xsect_batch_size_count /{b=$2}
			/^xsect_batch_duration_seconds_sum /{d=$2} /^xsect_queue_wait_seconds_sum /{w=$2} /^xsect_queue_wait_seconds_count /{n=$2}
			END {printf "%s %s %s %s,%s ", q+0, b+0, d+0, w+0, n+0}'
	else
		printf "0 0 0 0,0 "
	fi
	awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$server/stat" 2>/dev/null || echo 0
}

for batch in ${BATCHES:-1 16}; do
	for clients in ${CLIENTS:-1 8 64}; do
		for round in $(seq "$rounds"); do
			echo "## batch $batch, clients $clients, round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
			read -r q0 b0 d0 w0 c0 <<<"$(batches)"
			TIMEFORMAT="loadgen CPU: %U s user, %S s system"
			# A run with failed requests exits 1: its report says which, and
			# the other runs go on.
			time ${LOADGEN_CORES:+taskset -c "$LOADGEN_CORES"} "$xsect" loadgen "http://127.0.0.1:$port" "$out/q2.sets" --clients "$clients" --duration "$duration" --batch "$batch" ||
				echo "loadgen failed: exit $?"
			read -r q1 b1 d1 w1 c1 <<<"$(batches)"
			awk -v q="$((q1 - q0))" -v b="$((b1 - b0))" -v d="$d0 $d1" -v w="$w0 $w1" -v c="$c0 $c1" 'BEGIN {
				split(d, D, " "); split(w, W, "[ ,]"); split(c, C, " "); bb = b > 0 ? b : 1; nn = W[4] - W[2]; nn = nn > 0 ? nn : 1
				printf "server: %d batches, %.2f queries per batch, %.3f ms a batch in the engine, %.3f ms a request waiting for its batch, %.2f CPU s\n",
					b, q / bb, (D[2] - D[1]) * 1e3 / bb, (W[3] - W[1]) * 1e3 / nn, C[2] - C[1] }'
		done
	done
done

command -v curl >/dev/null && curl -s "http://127.0.0.1:$port/metrics" | grep -E '^xsect_(queries_total|batches_total|batch_size_(sum|count)|errors_total)' | grep -v ' 0$' || true
kill -TERM $server
wait $server && echo "# server exited 0 after SIGTERM" || echo "# server exited $? after SIGTERM"
trap - EXIT
