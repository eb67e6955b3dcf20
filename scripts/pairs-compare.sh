#!/usr/bin/env bash
# pairs-compare.sh times whole runs of several xsect builds side by side on
# the BATMAP paper's instance (n items, p = 5%, 10^7 occurrences, support 0.3%),
# all pairs written to a file: ROUNDS rounds (default 5), each running every
# build in turn, so that the machine's drift hits them alike. It prints one
# line per run (build, wall milliseconds, --timings), then the md5 of the
# last run's sorted pairs for each build.
#
#   scripts/pairs-compare.sh N XSECT [XSECT...]
#
# Environment: ENGINE (default bitmap), DEVICE (default auto), OUT (a
# scratch directory, default /tmp/pairs-compare).
set -eu -o pipefail
n=$1
shift
out=${OUT:-/tmp/pairs-compare}
mkdir -p "$out"
data="$out/bernoulli-$n.dat"
[ -f "$data" ] || "$1" pairs --gen-items "$n" --gen-out "$data"
now() { date +%s%N; }
for round in $(seq "${ROUNDS:-5}"); do
	for x in "$@"; do
		rm -f "$out/pairs.txt"
		start=$(now)
		"$x" pairs "$data" --min-support 0.003 --engine "${ENGINE:-bitmap}" --device "${DEVICE:-auto}" --timings -o "$out/pairs.txt" 2>"$out/stderr.txt"
		end=$(now)
		echo "round $round $x $(((end - start) / 1000000)) ms $(grep '^timings' "$out/stderr.txt")"
	done
done
for x in "$@"; do
	"$x" pairs "$data" --min-support 0.003 --engine "${ENGINE:-bitmap}" --device "${DEVICE:-auto}" -o "$out/pairs.txt"
	echo "$x $(sort "$out/pairs.txt" | md5sum)"
done
