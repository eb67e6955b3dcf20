#!/usr/bin/env bash
# query-device.sh measures the query engines on a GPU machine (docs/QUERY.md):
# the GPU tests, the command line's query tests, then gcide with the TREC 2005
# efficiency log (queries of 2+ terms, once and twice over) on the CPU's 16
# threads and on the GPU, counting, --limit 10 and all ids, 40 passes each,
# and counting 32 times over (1,005,824 queries), checking that both
# outputs are the same. GPUS (passed to xsect query as --gpus: "0," one GPU,
# "0,0" two owners of GPU 0, "all" every GPU; default all) picks the GPUs of
# the GPU runs.
#
#   scripts/query-device.sh build DIR   # here: static binaries and the data into DIR
#   DIR/query-device.sh run             # there (no Go toolchain needed)
#
# From the session: build into /work/main/.device-query, then
# run(command="bash .device-query/query-device.sh run", carry=[".device-query"]).
set -u -o pipefail
case "${1:-}" in
build)
	set -e
	dir=$2
	cd "$(dirname "$0")/.."
	mkdir -p "$dir/data/ir/gcide"
	export CGO_ENABLED=0
	go test -c -ldflags=-s -o "$dir/gpuquery.test" ./internal/gpuquery
	go test -c -ldflags=-s -o "$dir/cli.test" ./cmd/xsect/internal/cli
	go build -ldflags=-s -o "$dir/xsect" ./cmd/xsect
	cp ../shared/data/ir/gcide/gcide.docs.sets.gz ../shared/data/ir/gcide/gcide.q.topics.terabyte05.efficiency.txt.sets "$dir/data/ir/gcide/"
	cp scripts/query-device.sh "$dir/"
	;;
run)
	cd "$(dirname "$0")"
	export XSECT_CACHE_DIR=/tmp/xc XSECT_DATA=$PWD/data XSECT_REQUIRE_GPU=1 # a GPU test that finds no GPU fails
	nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
	echo "cores $(nproc); load $(cut -d' ' -f1-3 /proc/loadavg); --gpus ${GPUS:-all}"
	timeout 240 ./gpuquery.test -test.v -test.run GPU 2>&1 | grep -v '^=== RUN' | tail -20
	(cd /tmp && timeout 200 "$OLDPWD/cli.test" -test.run Query 2>&1 | tail -5)
	./xsect index build data/ir/gcide/gcide.docs.sets.gz -o /tmp/g.idx
	awk 'NF>=2' data/ir/gcide/gcide.q.topics.terabyte05.efficiency.txt.sets >/tmp/q2.sets
	cat /tmp/q2.sets /tmp/q2.sets >/tmp/q4.sets
	for _ in $(seq 16); do cat /tmp/q4.sets; done >/tmp/q64.sets
	for qf in /tmp/q2.sets /tmp/q4.sets /tmp/q64.sets; do
		modes="--count --limit=10 --limit=-1"
		[ "$qf" = /tmp/q64.sets ] && modes=--count
		for mode in $modes; do
			echo "== $qf $mode"
			./xsect query /tmp/g.idx "$qf" "$mode" --device cpu --threads 16 --repeat 40 --timings -o /tmp/cpu.out 2>&1 | grep -o 'passes.*'
			rm -f /tmp/gpu.out
			./xsect query /tmp/g.idx "$qf" "$mode" --device gpu --gpus "${GPUS:-all}" --repeat 40 --timings --explain -o /tmp/gpu.out 2>&1 | grep -v '^  \|^index\|^queries\|^ran\|^\*'
			cmp /tmp/cpu.out /tmp/gpu.out && echo SAME
		done
	done
	;;
*)
	echo "usage: $0 build DIR | run" >&2
	exit 2
	;;
esac
