#!/usr/bin/env bash
# gpu-linger.sh measures what keeping the driver started between commands
# (XSECT_GPU_LINGER, docs/GPU.md) gives, on the GPU machine: the teardown
# tests with a GPU required, then ENRON-100K and WORDS-100K counted on the
# GPU in alternating blocks without the linger and with the default (each
# block a first untimed run, then 3 runs 2 s apart: wall seconds and the
# driver's start), then runs 6 s apart, after the linger; and with HOLD=1
# first the driver's start while nothing, a process holding only the
# driver, or one holding a context, is alive (exitprobe -mode hold).
#
# Here:  CGO_ENABLED=0 go build -o .device-bin/xsect ./cmd/xsect; go test -c -o .device-bin/gpurt.test ./internal/gpurt;
#        go build -o .device-bin/exitprobe ./internal/gpurt/exitprobe; gzip .device-bin/*  (or scripts/device.sh build)
#        run(command="bash scripts/gpu-linger.sh", carry=[".device-bin"])
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
work=/tmp/gpu-linger
mkdir -p "$work"
. scripts/device-lib.sh
unpack
x=$bin/xsect
start() { grep -o 'driver [0-9.]* ms' "$work/last.err" | cut -d' ' -f2; }
if [ "${HOLD:-}" = 1 ]; then
	small() { timed "$x" pairs --gen-items 4000 --min-support 0.003 --count --engine batmap --device gpu --explain >/dev/null; start; }
	echo "== the driver's start (ms), 3 s after the last command: nothing held"; for r in 1 2 3; do sleep 3; small; done
	for ctx in false true; do
		echo "== ... while a process holds the driver (context: $ctx)"
		"$bin/exitprobe" -mode hold -hold 20s -context="$ctx" & h=$!
		sleep 1
		for r in 1 2 3; do sleep 3; small; done
		kill $h; wait $h 2>/dev/null
	done
fi
[ -x "$bin/gpurt.test" ] && XSECT_REQUIRE_GPU=1 "$bin/gpurt.test" -test.run 'Teardown|Linger|HandOff' -test.v 2>&1 | grep -E "^(---|ok|FAIL|PASS)"
for n in enron words; do
	lookalike_bin "$n" || exit 1
	for block in 1 2; do
		for L in 0 3s; do
			XSECT_GPU_LINGER=$L "$x" allpairs "$work/$n.bin" --count-only --device gpu >/dev/null 2>&1
			row="" drv=""
			for r in 1 2 3; do
				sleep 2
				row+="$(XSECT_GPU_LINGER=$L timed "$x" allpairs "$work/$n.bin" --count-only --device gpu --explain) "
				drv+="$(start),"
			done
			echo "$n block $block XSECT_GPU_LINGER=$L wall: $row driver ms: $drv result $(cat "$work/last")"
		done
	done
done
echo "== 6 s after the last command (the linger over), the default linger"
for r in 1 2 3; do
	sleep 6
	echo "$(timed "$x" allpairs "$work/enron.bin" --count-only --device gpu --explain) s, driver $(start) ms"
done
