#!/usr/bin/env bash
# batmap-bench.sh times whole runs of "xsect pairs" (loading, preprocessing,
# mining, writing the pairs), as Borgelt's miners are timed in
# docs/BATMAP.md: the BATMAP paper's instance (each of n items in each transaction
# with probability 5%, transactions until 10^7 occurrences, support 0.3%)
# and the FIMI files at supports 0.1% and 0.01%.
#
#   scripts/batmap-bench.sh XSECT FIMI_DIR OUT_DIR [n...]
#
# XSECT is the binary, FIMI_DIR holds retail.dat, T10I4D100K.dat and
# kosarak_head36682.dat (skipped if it does not exist), OUT_DIR receives
# the generated instances and the output. Every run prints "name engine
# seconds pairs" and the run's stages (--timings); the "auto" runs also
# print the plan (--explain). Engines are named ENGINE@DEVICE: batmap@gpu
# is --engine batmap --device gpu (run only where a GPU is), auto is both
# left to the planner. The output file is removed before every run (so
# that replacing the last run's file is not timed; the figures in
# docs/BATMAP.md say where it matters). Environment: REPEAT (default 3),
# the least time is printed; ENGINES, to replace the engine lists.
# Borgelt's figures come from his apriori, eclat and fpgrowth run the same
# way (see docs/BATMAP.md).
set -u -o pipefail
xsect=$1
fimi=$2
out=$3
shift 3
sizes=${*:-1000 4000 16000 64000}
mkdir -p "$out"
echo "host: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
gpu=""
if ! "$xsect" devices 2>&1 | grep -q "^No GPU"; then gpu="batmap@gpu"; fi

# run NAME ENGINE@DEVICE ARGS...: timed whole runs (the least of REPEAT,
# default 3); the pairs go to a file.
run() {
	local name=$1 spec=$2
	shift 2
	local engine=${spec%@*} device=auto
	[ "$spec" != "$engine" ] && device=${spec#*@}
	local start end best=""
	for _ in $(seq "${REPEAT:-3}"); do
		rm -f "$out/pairs.txt"
		start=$(date +%s.%N)
		if ! "$xsect" pairs --engine "$engine" --device "$device" --timings -o "$out/pairs.txt" "$@" 2>"$out/stderr.txt"; then
			echo "$name $spec failed: $(tail -1 "$out/stderr.txt")"
			return
		fi
		end=$(date +%s.%N)
		best=$(awk -v s="$start" -v t="$end" -v b="$best" 'BEGIN { d = t - s; if (b == "" || d < b) b = d; print b }')
	done
	local pairs
	pairs=$(wc -l <"$out/pairs.txt")
	if [ "${COUNT:-0}" = 1 ]; then pairs=$(cat "$out/pairs.txt"); fi
	awk -v n="$name" -v e="$spec" -v t="$best" -v p="$pairs" 'BEGIN { printf "%s %s %.3f %s\n", n, e, t, p }'
	grep -E '^(timings|gpu):' "$out/stderr.txt" | sed 's/^/    /'
	if [ "$engine" = auto ]; then grep -vE '^(timings|gpu):' "$out/stderr.txt" | sed 's/^/    /'; fi
}

for n in $sizes; do
	f="$out/bernoulli-$n.dat"
	[ -s "$f" ] || "$xsect" pairs --gen-items "$n" --gen-p 0.05 --gen-occurrences 1e7 --gen-seed 1 --gen-out "$f"
	engines="auto $gpu batmap@cpu apriori@cpu"
	[ "$n" -le 4000 ] && engines="$engines fpgrowth@cpu eclat@cpu"
	for e in ${ENGINES:-$engines}; do
		if [ "$n" -ge 64000 ]; then
			# Hundreds of millions of pairs: count them, do not print them.
			COUNT=1 run "bernoulli-$n" "$e" --min-support 0.003 --count --explain "$f"
		else
			run "bernoulli-$n" "$e" --min-support 0.003 --explain "$f"
		fi
	done
done

[ -d "$fimi" ] || exit 0
for data in retail T10I4D100K kosarak_head36682; do
	for s in 0.1% 0.01%; do
		for e in ${ENGINES:-auto apriori@cpu fpgrowth@cpu batmap@cpu $gpu eclat@cpu}; do
			run "$data@$s" "$e" --min-support "$s" --explain "$fimi/$data.dat"
		done
	done
done
