#!/usr/bin/env bash
# query-compare.sh measures 'xsect query --count' against the plain Go
# engine of ../shared/baselines/qbase side by side: ROUNDS rounds (default
# 7), each running qbase then xsect on the same THREADS goroutines
# (default 2), REPS passes over the queries each (default 20), so that the
# machine's drift hits both alike. Only the query loop is timed by either
# (qbase's own timer; xsect's --timings), index loading excluded. Queries
# are those of 2+ terms (awk 'NF>=2'), as in the anchors. It prints each
# round, then the median, minimum and maximum queries/s of each engine and
# of the per-round ratio, and the load average before and after.
#
#   scripts/query-compare.sh XSECT QBASE DOCS QUERIES
#
# QBASE is a binary built from ../shared/baselines/qbase (cd there, go
# build). Environment: ROUNDS, REPS, THREADS, DEVICE (xsect's --device,
# default cpu), OUT (a scratch directory, default /tmp/query-compare).
set -eu -o pipefail
xsect=$1 qbase=$2 docs=$3 queries=$4
out=${OUT:-/tmp/query-compare}
rounds=${ROUNDS:-7} reps=${REPS:-20} threads=${THREADS:-2}
mkdir -p "$out"
awk 'NF>=2' "$queries" >"$out/q2.sets"
"$xsect" index build "$docs" -o "$out/index"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(wc -l <"$out/q2.sets") queries, $threads threads, $reps passes a run"
for round in $(seq "$rounds"); do
	b=$("$qbase" -threads "$threads" -reps "$reps" "$docs" "$out/q2.sets")
	bsum=$(echo "$b" | awk '{print $2}') bq=$(echo "$b" | awk '{print $NF}')
	"$xsect" query "$out/index" "$out/q2.sets" --count --device "${DEVICE:-cpu}" --threads "$threads" --repeat "$reps" --timings -o "$out/counts" 2>"$out/stderr"
	xq=$(grep -o '[0-9]* queries/s;' "$out/stderr" | awk '{print $1}')
	xsum=$(awk '{s += $1} END {print s}' "$out/counts")
	[ "$bsum" = "$xsum" ] || { echo "counts differ: qbase $bsum, xsect $xsum" >&2; exit 1; }
	echo "round $round qbase $bq xsect $xq ratio $(awk -v a="$xq" -v b="$bq" 'BEGIN {printf "%.2f", a / b}') (sum $xsum)"
done | tee "$out/rounds"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -g | awk '{v[NR] = $1} END {printf "median %.0f min %.0f max %.0f", v[int((NR + 1) / 2)], v[1], v[NR]}'; }
echo "qbase queries/s: $(awk '{print $4}' "$out/rounds" | stats)"
echo "xsect queries/s: $(awk '{print $6}' "$out/rounds" | stats)"
echo "ratio xsect/qbase: $(awk '{print $8 * 100}' "$out/rounds" | stats | awk '{printf "median %.2f min %.2f max %.2f", $2 / 100, $4 / 100, $6 / 100}')"
