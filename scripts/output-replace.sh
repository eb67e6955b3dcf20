#!/usr/bin/env bash
# output-replace.sh times a command that writes its result over an earlier
# result of the same size: WORDS-100K's pairs of overlap >= 540 (92 million,
# 1.4 GB), written again over the file a first run left. It alternates, for
# ROUNDS rounds, the old file freed in the rename on the user's clock
# (XSECT_GPU_TEARDOWN=exit) and handed to the teardown helper, freed after
# the exit (the default; docs/GPU.md), and prints each run's wall seconds.
#
#   bash scripts/output-replace.sh          # on the device: .device-bin/xsect
#
# Environment: XSECT (the binary; default .device-bin/xsect, else xsect on
# PATH), DEVICE (default gpu), ROUNDS (default 3), WORK (scratch, default
# /tmp/output-replace).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
work=${WORK:-/tmp/output-replace}
. scripts/device-lib.sh
unpack
mkdir -p "$work"
x=${XSECT:-$bin/xsect}
[ -x "$x" ] || x=$(command -v xsect) || { echo "no xsect binary" >&2; exit 1; }
first_commands
lookalike_bin words || exit 1
in=$work/words.bin
out=$work/pairs.out
cmd=("$x" allpairs "$in" --min-overlap 540 --device "${DEVICE:-gpu}" -o "$out")
"${cmd[@]}" || exit 1 # the file to replace, and the page cache warm
echo "# ${cmd[*]}: $(wc -c <"$out") bytes replaced each run; $(nproc) cores; $(date -u +%FT%TZ)"
for r in $(seq "${ROUNDS:-3}"); do
	for mode in exit helper; do
		sleep 2
		if [ $mode = exit ]; then
			w=$(timed env XSECT_GPU_TEARDOWN=exit "${cmd[@]}")
		else
			w=$(timed "${cmd[@]}")
		fi
		echo "round $r $mode $w s"
	done
done
rm -f "$out"
