#!/usr/bin/env bash
# pairwise-ab.sh compares two builds of xsect's pairwise kernels on one
# core: `pairfiles sweep` (benchmarks/cmd/pairfiles) of build A, then of
# build B, ROUNDS rounds, at every size and selectivity given, and prints
# the raw sweeps, then per size, selectivity, ratio and method each build's
# median (min-max) µs over the rounds and B/A. Each sweep's own figure is a
# median of 3 runs.
#
#   A=/tmp/old/pairfiles B=/tmp/new/pairfiles scripts/pairwise-ab.sh
#
# Build the two here (cd benchmarks && CGO_ENABLED=0 go build -o DIR/pairfiles
# ./cmd/pairfiles, at each commit) and carry them for a machine without Go.
# Environment: A, B (the binaries; required), SIZES (larger set, values;
# default "250000 1000000"), SELECTIVITIES (default "0.01 0.3"), ROUNDS
# (default 3), CORE (default 1), RATIOS and METHODS (pairfiles' -ratios
# and methods).
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${A:?A: the first pairfiles binary}" "${B:?B: the second}"
core=${CORE:-1}
ratios=${RATIOS:-1,2,4,8,12,16,24,32,48,64,96,128,256,512,1000,2000,4000,10000}
# shellcheck disable=SC2206
methods=(${METHODS:-auto avx512 lanes-avx512 skip-avx512 search-simd ladder-avx512})
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

grep -m1 'model name' /proc/cpuinfo | sed 's/^/# /'
echo "# cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' '); pinned to core $core; $(date -u +%FT%TZ)"
echo "# A=$A B=$B"
for size in ${SIZES:-250000 1000000}; do
	for sel in ${SELECTIVITIES:-0.01 0.3}; do
		for round in $(seq "${ROUNDS:-3}"); do
			for v in A B; do
				echo "### build $v size $size selectivity $sel round $round, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
				taskset -c "$core" "${!v}" sweep -size "$size" -selectivity "$sel" -rounds 3 -ratios "$ratios" "${methods[@]}"
			done
		done
	done
done | tee "$raw"

echo
echo "# summary: median (min-max) µs over the rounds, and B/A of the medians"
printf '%-8s %-5s %-7s %-14s %24s %24s %6s\n' size sel ratio method A B B/A
awk "$(cat "$here/median.awk")"'
/^### build/ { b = $3; size = $5; sel = $7; next }
/^ratio/ { nc = NF - 1; for (c = 2; c <= NF; c++) col[c] = $c; next }
/^1:/ {
	for (c = 2; c <= nc; c++) {
		if (col[c] == "fastest" || col[c] == "auto/best") continue
		k = size SUBSEP sel SUBSEP $1 SUBSEP col[c]
		if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
		v[k SUBSEP b, ++cnt[k SUBSEP b]] = $c
	}
}
END {
	for (o = 1; o <= nk; o++) {
		k = order[o]; split(k, p, SUBSEP)
		ma = med(v, k SUBSEP "A", cnt[k SUBSEP "A"]); la = lo; ha = hi
		mb = med(v, k SUBSEP "B", cnt[k SUBSEP "B"]); lb = lo; hb = hi
		printf "%-8s %-5s %-7s %-14s %9.2f (%5.2f-%5.2f) %9.2f (%5.2f-%5.2f) %6.3f\n", p[1], p[2], p[3], p[4], ma, la, ha, mb, lb, hb, mb / ma
	}
}' "$raw"
