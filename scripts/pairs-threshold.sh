#!/usr/bin/env bash
# pairs-threshold.sh finds, for each Table 1 look-alike at 100K sets, the
# overlap threshold whose pairs number about TARGET (10^8): the smallest
# --min-overlap whose count is at most TARGET, by bisection over counts on
# the GPU, and the count one below it. gpu-process.sh's *-pairs problems
# write the pairs above these thresholds.
#
# Here:  scripts/device.sh build (or just the CLI, gzipped into .device-bin)
#        run(command="bash scripts/pairs-threshold.sh", carry=[".device-bin"])
# Environment: TARGET (10^8), ONLY (problem names), DEVICE (gpu).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
. scripts/device-lib.sh
unpack
x=$bin/xsect
work=/tmp/gpu-process # gpu-process.sh's inputs, made alike
mkdir -p "$work"
target=${TARGET:-100000000}
count() { "$x" allpairs "$1" --count-only --min-overlap "$2" --device "${DEVICE:-gpu}"; }
for name in ${ONLY:-enron orkut words twitter}; do
	lookalike_bin "$name" || exit 1
	in=$work/$name.bin
	# The largest overlap is at most the largest set's size.
	hi=$("$x" info "$in" | awk '/size/ { for (i = 1; i < NF; i++) if ($i == "max") { print $(i + 1); exit } }')
	[ -n "$hi" ] || { echo "$name: no maximum size in xsect info's output"; "$x" info "$in"; exit 1; }
	lo=1
	while [ "$lo" -lt "$hi" ]; do
		mid=$(((lo + hi) / 2))
		c=$(count "$in" "$mid") || exit 1
		echo "$name: overlap >= $mid: $c pairs"
		if [ "$c" -le "$target" ]; then hi=$mid; else lo=$((mid + 1)); fi
	done
	echo "$name: --min-overlap $lo gives $(count "$in" "$lo") pairs, $((lo - 1)) gives $(count "$in" $((lo - 1)))"
done
