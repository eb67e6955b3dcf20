#!/usr/bin/env bash
# gpu-process.sh times whole xsect processes on the GPU machine: the Table 1
# look-alikes at 100K sets and BATMAP pairs, on 1 GPU, on every GPU, on the
# CPU's cores and with --device auto, alternated round by round; then one
# --explain run of each on every GPU, for where the process's time goes.
#
# Here:  scripts/device.sh build (or just the CLI: CGO_ENABLED=0 go build -o .device-bin/xsect ./cmd/xsect, gzipped)
#        run(command="bash scripts/gpu-process.sh", carry=[".device-bin"])
# Environment: ROUNDS (3), ONLY (problem names, space-separated; the
# look-alikes at 400K sets, NAME-400k, run only when named), SETTLE
# (seconds of sleep before every timed run), IDLE (seconds: also time each
# problem's GPU run right after another and after the GPU idled), EXTRA (more
# variants, separated by ';'), ACCOUNT (rounds: also each problem's wall
# seconds beside its own account, --explain's process line), LINGER (the
# helper's XSECT_GPU_LINGER; 0 by default), VARIANTS (in place of the
# default variants, separated by ';'), ORDER (shuffle, the default: each
# round runs the variants in an order of its own, written to
# $OUT/order.txt; fixed: as listed, as every run up to 2026-11-29's run I),
# OLD (the older build's variants,
# separated by ';'; "--device gpu --gpus N", every GPU, by default). An older
# xsect beside it, .device-bin/xsect-old(.gz), runs each problem in each
# round too; and the PyTorch peer, .device-bin/allpairs_gpu.py (cp
# ../shared/baselines/allpairs_gpu.py .device-bin/), each all-pairs problem
# (its dense fp16 A x A^T, every pair counted on the device).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
. scripts/device-lib.sh
unpack
x=$bin/xsect
out=${OUT:-.device-out}
mkdir -p "$out"
work=/tmp/gpu-process
mkdir -p "$work"
rounds=${ROUNDS:-3}
first_commands # LINGER=3s: commands that follow one another
ngpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c
echo "host: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

# problems: NAME|GEN FLAGS (empty: the command generates its input; =NAME:
# NAME's input; @PATH: a file of the carried data)|COMMAND. The *-pairs
# problems write about 10^8 pairs to a file, those of overlap at least the
# threshold scripts/pairs-threshold.sh finds (words-pairs' 540, 9.2e7, is
# older than it: 538 would give 1.0e8).
problems=(
	"enron|$(lookalike enron)|allpairs IN --count-only"
	"orkut|$(lookalike orkut)|allpairs IN --count-only"
	"words|$(lookalike words)|allpairs IN --count-only"
	"twitter|$(lookalike twitter)|allpairs IN --count-only"
	"words-pairs|=words|allpairs IN --min-overlap 540 -o OUTFILE"
	"enron-pairs|=enron|allpairs IN --min-overlap 27 -o OUTFILE"
	"orkut-pairs|=orkut|allpairs IN --min-overlap 75 -o OUTFILE"
	"twitter-pairs|=twitter|allpairs IN --min-overlap 25 -o OUTFILE"
	"batmap||pairs --gen-items 128000 --min-support 0.003 --count --engine batmap"
	"containment|=enron|containment IN --min-degree 0.1 --count-only"
	"simjoin|@ir/gcide/gcide.docs.sets.gz|simjoin IN --measure jaccard --threshold 0.5 --distinct --count-only"
	# At 400K sets, 16 times the pairs: seconds on one GPU, minutes on the
	# CPU. Only when ONLY names them.
	"enron-400k|$(lookalike enron-400k)|allpairs IN --count-only"
	"orkut-400k|$(lookalike orkut-400k)|allpairs IN --count-only"
	"words-400k|$(lookalike words-400k)|allpairs IN --count-only"
	"twitter-400k|$(lookalike twitter-400k)|allpairs IN --count-only"
)

# The start-up alone: a small problem's whole process against its own
# account of its time (what --explain's "process" line leaves out is the exit).
echo "=== a small problem: wall seconds against the process's own account"
for r in $(seq "$rounds"); do
	w=$(timed "$x" pairs --gen-items 4000 --min-support 0.003 --count --engine batmap --device gpu --explain)
	echo "wall $w s; $(grep -E '^(gpu start|process)' "$work/last.err" | tr '\n' ';')"
done

# outcome says what the last command gave: its count, or the lines and
# bytes it wrote (the same whatever their order; the tests compare pairs).
outcome() {
	if [ -s "$work/pairs.out" ]; then
		echo "$(wc -lc <"$work/pairs.out" | awk '{print $1 " lines, " $2 " bytes"}')"
		rm -f "$work/pairs.out"
	else
		head -c 40 "$work/last"
	fi
}

variants=("--device gpu --gpus 1")
[ "$ngpus" -gt 1 ] && variants+=("--device gpu --gpus $ngpus")
variants+=("--device cpu" "--device auto")
# VARIANTS: these in place of the above, separated by ';' (e.g. "--device
# gpu --gpus 1" alone, beside an old build: what a change of the GPU path
# gains, without the CPU's minutes).
[ -n "${VARIANTS:-}" ] && IFS=';' read -r -a variants <<<"$VARIANTS"
# EXTRA: more variants, separated by ';' (e.g. "--device gpu --gpus 0,0": two
# owners of GPU 0, what a second owner costs on a host of one GPU).
extra=()
[ -n "${EXTRA:-}" ] && IFS=';' read -r -a extra <<<"$EXTRA"
variants+=("${extra[@]}")
# An older binary beside it (.device-bin/xsect-old), on every GPU.
old=$bin/xsect-old
IFS=';' read -r -a oldvariants <<<"${OLD:-"--device gpu --gpus $ngpus"}"
peer=$bin/allpairs_gpu.py
printf '%-8s %-26s %s\n' problem variant "wall seconds (rounds)"
for p in "${problems[@]}"; do
	IFS='|' read -r name gen cmd <<<"$p"
	[ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]] && continue
	[ -z "${ONLY:-}" ] && [[ $name == *-400k ]] && continue
	input=$name
	if [[ $gen == =* ]]; then
		input=${gen#=}
		gen=$(printf '%s\n' "${problems[@]}" | grep "^$input|" | cut -d'|' -f2)
	fi
	if [[ $gen == @* ]]; then
		# A real data set, carried by scripts/device.sh build with DATA=1.
		[ -f "$bin/data/${gen#@}" ] || { echo "$name: no $bin/data/${gen#@} (build with DATA=1)"; continue; }
		cmd=${cmd/IN/$bin/data/${gen#@}}
		gen=
	fi
	if [ -n "$gen" ] && [ ! -f "$work/$input.bin" ]; then
		# shellcheck disable=SC2086
		"$x" gen $gen --format binary -o "$work/$input.bin" || exit 1
	fi
	cmd=${cmd/IN/$work/$input.bin}
	cmd=${cmd/OUTFILE/$work/pairs.out}
	# One untimed run first: the page cache holds the input and the kernel
	# cache what a stale prebuilt kernel compiles, for every round alike.
	# shellcheck disable=SC2086
	"$x" $cmd --device gpu >/dev/null 2>&1
	# Its output removed, as after every timed run: replacing a file of
	# 10^8 pairs frees 1.4 GB of pages, 0.5-1 s of the first round's run.
	rm -f "$work/pairs.out"
	declare -A row=()
	declare -A result=()
	for r in $(seq "$rounds"); do
		# The variants in an order of the round's own (ORDER=fixed: as
		# listed): the driver's start depends on what the process before
		# used (cuInit is about 0.1 s slower after a run that left a GPU
		# idle), so no variant should always follow the same one
		# (docs/PERFORMANCE.md, runs E to I).
		order=$(seq 0 $((${#variants[@]} - 1)))
		if [ "${ORDER:-shuffle}" != fixed ]; then
			seed=$(cksum <<<"$name $r" | cut -d' ' -f1)
			order=$(awk -v s="$seed" 'BEGIN { srand(s) } { print rand(), $0 }' <<<"$order" | sort -n | cut -d' ' -f2)
		fi
		echo "$name round $r order: $(tr '\n' ' ' <<<"$order")" >>"$out/order.txt"
		for k in $order; do
			v=${variants[$k]}
			# A GPU run after the GPU idled (the CPU variant's seconds) is
			# slower than one right after another: SETTLE idles it alike
			# before every run.
			[ -n "${SETTLE:-}" ] && sleep "$SETTLE"
			# shellcheck disable=SC2086
			row[$v]+="$(timed "$x" $cmd $v) "
			result[$v]=$(outcome)
		done
		if [ -x "$old" ]; then
			for v in "${oldvariants[@]}"; do
				[ -n "${SETTLE:-}" ] && sleep "$SETTLE"
				# shellcheck disable=SC2086
				row[old $v]+="$(timed "$old" $cmd $v) "
				result[old $v]=$(outcome)
			done
		fi
		if [ -f "$peer" ] && [[ $cmd == allpairs*--count-only ]] && python3 -c 'import torch' 2>/dev/null; then
			row[peer]+="$(timed python3 "$peer" "$work/$name.bin" dense) "
			result[peer]=$(grep -o 'pairs>=1: [0-9]*.*' "$work/last")
		fi
	done
	for v in "${variants[@]}"; do
		printf '%-8s %-26s %s  -> %s\n' "$name" "$v" "${row[$v]:-}" "${result[$v]:-}"
	done
	if [ -x "$old" ]; then
		for v in "${oldvariants[@]}"; do
			printf '%-8s %-26s %s  -> %s\n' "$name" "old $v" "${row[old $v]}" "${result[old $v]}"
		done
	fi
	if [ -n "${row[peer]:-}" ]; then
		printf '%-8s %-26s %s  -> %s\n' "$name" "PyTorch fp16 (1 GPU)" "${row[peer]}" "${result[peer]}"
	fi
	unset row result
	if [ -n "${IDLE:-}" ]; then
		# The same GPU run right after another, and after the GPU has
		# idled for IDLE seconds (as it does while the CPU variant runs).
		for r in $(seq "$rounds"); do
			# shellcheck disable=SC2086
			"$x" $cmd --device gpu --gpus 1 >/dev/null 2>&1
			# shellcheck disable=SC2086
			busy=$(timed "$x" $cmd --device gpu --gpus 1)
			sleep "$IDLE"
			# shellcheck disable=SC2086
			idle=$(timed "$x" $cmd --device gpu --gpus 1)
			echo "$name --gpus 1 after a GPU run: $busy s; after ${IDLE} s idle: $idle s"
		done
	fi
	if [ -n "${ACCOUNT:-}" ]; then
		# Wall seconds beside the process's own account of them (--explain's
		# process line: from its start to its output), alternated: what a
		# variant spends outside the account (the program's start, the exit).
		for r in $(seq "$ACCOUNT"); do
			for v in "--device gpu --gpus 1" "--device auto" "${extra[@]}"; do
				[ -n "${SETTLE:-}" ] && sleep "$SETTLE"
				# shellcheck disable=SC2086
				w=$(timed "$x" $cmd $v --explain)
				printf '%-8s %-26s wall %s s; %s\n' "$name" "$v" "$w" "$(grep -E '^process' "$work/last.err")"
				{ echo "=== $name $v --explain, wall $w s"; cat "$work/last.err"; } >>"$out/account.txt"
				rm -f "$work/pairs.out"
			done
		done
	fi
	for v in "--device gpu --gpus $ngpus" "--device auto" "${extra[@]}"; do
		echo "=== $name $v --explain" >>"$out/explain.txt"
		# shellcheck disable=SC2086
		"$x" $cmd $v --explain 2>&1 >/dev/null | tee -a "$out/explain.txt" | grep -E '^(gpu start|process|ran|choice)'
		rm -f "$work/pairs.out"
	done
done
