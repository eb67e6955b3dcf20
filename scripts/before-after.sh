#!/usr/bin/env bash
# before-after.sh times whole xsect runs of two builds side by side, in
# rounds (each round runs every command with the old build, then the new
# one), so that the machine's drift hits both alike, and prints for every
# command the median, min and max wall time of each build and the ratio of
# the medians. The outputs of the two builds are compared as well: any
# difference fails the script.
#
#   scripts/before-after.sh OLD_XSECT NEW_XSECT [DATA_DIR]
#
# DATA_DIR is the shared data folder (default ../shared/data from the
# repository root). Environment: ROUNDS (default 7), OUT (scratch folder,
# default a temporary one), DEVICE (cpu, gpu or auto: passed as --device to
# every command that takes it; default: the commands' own default, auto).
set -eu -o pipefail
old=$1
new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
data=${3:-$root/../shared/data}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
rounds=${ROUNDS:-7}
dev=${DEVICE:+--device $DEVICE}

# datafile names a data file, compressed or not (xsect reads gzip transparently).
datafile() { if [ -f "$data/$1" ]; then echo "$data/$1"; else echo "$data/$1.gz"; fi; }

# name|arguments (relative paths are inside DATA_DIR or the repository)
cmds=(
	"allpairs retail o>=10|allpairs $(datafile fimi/retail.dat) --min-overlap 10 --count-only $dev"
	"allpairs kosarak o>=3|allpairs $(datafile fimi/kosarak_head36682.dat) --min-overlap 3 --count-only $dev"
	"containment retail d>=0.8|containment $(datafile fimi/retail.dat) --min-degree 0.8 --count-only $dev"
	"containment msweb R x S|containment $(datafile containment/msweb.data.test.sets) --with $(datafile containment/msweb.data.train.sets) --min-degree 0.5 --count-only $dev"
	"pairs retail s=10|pairs $(datafile fimi/retail.dat) --min-support 10 --count $dev"
	"pairs T10I4D100K s=20|pairs $(datafile fimi/T10I4D100K.dat) --min-support 20 -o $out/pairs.txt $dev"
	"info threads-math-sx|info $(datafile hypergraphs/threads-math-sx.dedup.sets)"
	"intersect wikileaks|intersect --count --from $root/data/wikileaks-noquotes.sets.gz 11 53 92 $dev"
)

now() { date +%s%N; }
declare -A times
for c in "${cmds[@]}"; do
	name=${c%%|*}
	args=${c#*|}
	for build in old new; do
		x=$old
		[ $build = new ] && x=$new
		# shellcheck disable=SC2086
		$x $args >"$out/$build.txt" 2>"$out/$build.err" || { echo "$name: $build failed: $(cat "$out/$build.err")" >&2; exit 1; }
		[ -f "$out/pairs.txt" ] && sort "$out/pairs.txt" >>"$out/$build.txt" && rm "$out/pairs.txt"
	done
	cmp -s "$out/old.txt" "$out/new.txt" || { echo "$name: the builds' outputs differ" >&2; exit 1; }
done
for round in $(seq "$rounds"); do
	for c in "${cmds[@]}"; do
		name=${c%%|*}
		args=${c#*|}
		for build in old new; do
			x=$old
			[ $build = new ] && x=$new
			start=$(now)
			# shellcheck disable=SC2086
			$x $args >/dev/null 2>&1
			end=$(now)
			times["$name|$build"]+="$(((end - start) / 1000000)) "
		done
	done
done
stats() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%g %d %d", m, v[1], v[NR]}'; }
printf '| command | old median (min-max) ms | new median (min-max) ms | new/old |\n|---|---|---|---|\n'
for c in "${cmds[@]}"; do
	name=${c%%|*}
	read -r om omin omax <<<"$(echo "${times["$name|old"]}" | stats)"
	read -r nm nmin nmax <<<"$(echo "${times["$name|new"]}" | stats)"
	printf '| %s | %s (%s-%s) | %s (%s-%s) | %.2f |\n' "$name" "$om" "$omin" "$omax" "$nm" "$nmin" "$nmax" "$(awk -v n="$nm" -v o="$om" 'BEGIN {print n / o}')"
done
