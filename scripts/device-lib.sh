# device-lib.sh: shell functions the device scripts (device.sh, startup.sh,
# gpu-process.sh, gpu-exit.sh, gpu-linger.sh, pairs-threshold.sh) share; they
# source it after setting bin and work.

# The binaries travel gzipped (the carry is limited to 64 MiB with the
# working tree); unpack unpacks them there.
unpack() {
	local f
	for f in "$bin"/*.gz; do
		[ -e "$f" ] || continue
		gunzip -f "$f" && chmod +x "${f%.gz}"
	done
}

# timed runs "$@" with its output in $work/last and $work/last.err, and
# prints its wall seconds, and its exit status and the start of its error
# where it failed.
timed() {
	local s e rc
	s=$(date +%s%N)
	"$@" >"$work/last" 2>"$work/last.err"
	rc=$?
	e=$(date +%s%N)
	awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
	[ "$rc" -ne 0 ] && printf ' (exit %d: %s)' "$rc" "$(head -c 200 "$work/last.err" | tr '\n' ' ')"
	return 0
}

# first_commands makes every xsect process the script starts a first one:
# the teardown helper of the one before keeps no driver started
# (XSECT_GPU_LINGER, docs/GPU.md), which the scripts' idle between runs
# would not outlast. LINGER (e.g. 3s) keeps it, to time commands that
# follow one another.
first_commands() {
	export XSECT_GPU_LINGER=${LINGER:-0}
}

# lookalike prints the xsect gen flags of a Table 1 look-alike at 100K sets
# (enron, orkut, words or twitter), which gpu-process.sh, gpu-linger.sh,
# pairs-threshold.sh and output-replace.sh generate alike; NAME-400k is
# the same at 400K sets.
lookalike() {
	case $1 in
	*-400k) lookalike "${1%-400k}" | sed 's/--sets 100000/--sets 400000/' ;;
	enron) echo "--sets 100000 --avg-size 258 --universe 1100000 --dist zipf" ;;
	orkut) echo "--sets 100000 --avg-size 905 --universe 8700000 --dist zipf" ;;
	words) echo "--sets 100000 --avg-size 2021 --universe 11000 --dist uniform" ;;
	twitter) echo "--sets 100000 --avg-size 140 --universe 37000 --dist zipf" ;;
	*) echo "lookalike: no look-alike $1" >&2; return 1 ;;
	esac
}

# lookalike_bin makes $work/NAME.bin, look-alike NAME in xsect's binary
# format written by $x, unless it is there already.
lookalike_bin() {
	local flags
	[ -f "$work/$1.bin" ] && return
	flags=$(lookalike "$1") || return
	# shellcheck disable=SC2086
	"$x" gen $flags --format binary -o "$work/$1.bin"
}
