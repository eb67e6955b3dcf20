#!/usr/bin/env bash
# pairwise-peers.sh times xsect's pairwise intersection and a peer driver on
# the same generated pairs (1M elements against 1:1 to 1:10000 smaller sets,
# selectivities 1% and 30%), alternating the two on one core, ROUNDS rounds,
# and prints the raw timings and then, per pair and contender, the median,
# minimum and maximum.
#
#   PEERS=/path/to/driver scripts/pairwise-peers.sh > docs/results/pairwise-peers-<cpu>.txt
#
# The pairs come from `benchmarks/cmd/pairfiles write` (raw little-endian
# uint32 files, NAME.a the smaller set, NAME.b the larger), and xsect is
# timed by `pairfiles time`. The peer driver is a program of its own, built
# outside this repository from the peers' public code (none of it is kept
# here), called as
#
#   DRIVER DIR NAME WANT
#
# which must check its answers against WANT and print one line per function
# it times, "NAME peer=<impl> ns=<ns per op> n=<count>", timed as pairfiles
# times (loops of growing length until one lasts 50 ms, then one timed loop).
# Without PEERS only xsect is timed.
#
# Environment: ROUNDS (default 5), CORE (default 1), DIR (scratch, default
# /tmp/pairwise-peers), PAIRFILES (a pairfiles binary built before, for a
# machine without Go; XSECT_REV then names its commit), PAIRFLAGS (extra flags for pairfiles write), IMPLS
# and PEER_IMPLS (the xsect methods, as xsect-<method>, and the peer
# functions to time; all when empty).
set -eu -o pipefail
cd "$(dirname "$0")/.."
dir=${DIR:-/tmp/pairwise-peers}
core=${CORE:-1}
mkdir -p "$dir"
if [ -n "${PAIRFILES:-}" ]; then
	cp "$PAIRFILES" "$dir/pairfiles"
else
	(cd benchmarks && go build -o "$dir/pairfiles" ./cmd/pairfiles)
fi
"$dir/pairfiles" write -dir "$dir" ${PAIRFLAGS:-} >"$dir/manifest"

# XSECT_REV names the commit where the tree is a copy without git.
echo "# xsect ${XSECT_REV:-$(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')}, $(date -u +%FT%TZ)"
grep -m1 'model name' /proc/cpuinfo | sed 's/^/# /'
echo "# cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
echo "# avx512_vp2intersect: $(grep -qw avx512_vp2intersect /proc/cpuinfo && echo yes || echo no); $(nproc) cores; pinned to core $core"
echo "# peers: ${PEERS:-none}"

raw="$dir/raw.txt"
: >"$raw"
for round in $(seq "${ROUNDS:-5}"); do
	echo "# round $round, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
	while read -r name want; do
		taskset -c "$core" "$dir/pairfiles" time -dir "$dir" "$name" "$want" ${IMPLS:-} | sed "s/^/round=$round /" | tee -a "$raw"
		if [ -n "${PEERS:-}" ]; then
			taskset -c "$core" "$PEERS" "$dir" "$name" "$want" ${PEER_IMPLS:-} | sed "s/^/round=$round /;s/ peer=/ impl=/" | tee -a "$raw"
		fi
	done <"$dir/manifest"
done

echo
echo "# summary: microseconds per operation over the rounds"
printf '%-24s %-28s %10s %10s %10s\n' pair impl median min max
awk "$(cat scripts/median.awk)"'{
	split($3, i, "="); split($4, t, "=")
	if ($4 !~ /^ns=/) next
	k = $2 " " i[2]
	if (!(k in cnt)) order[++nk] = k
	v[k, ++cnt[k]] = t[2] / 1000
}
END {
	for (o = 1; o <= nk; o++) {
		k = order[o]
		m = med(v, k, cnt[k])
		split(k, p, " ")
		printf "%-24s %-28s %10.2f %10.2f %10.2f\n", p[1], p[2], m, lo, hi
	}
}' "$raw"
grep WRONG "$raw" && exit 1 || true
