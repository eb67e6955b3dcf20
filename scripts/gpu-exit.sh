#!/usr/bin/env bash
# gpu-exit.sh times the exit of a process that used a GPU, on the GPU
# machine: internal/gpurt/exitprobe with nothing allocated and with device
# memory, pinned host memory and registered host memory, ending with
# everything open (exit), after handing the teardown off (handoff), and
# after freeing everything and closing the device (destroy). One line per
# run: the probe's own figures, exit_ms (from the probe's last moment to
# its end as the shell sees it) and then the next process's opening of
# the GPU, started at once (does a teardown still running slow it?).
#
#   scripts/device.sh build     # builds .device-bin/exitprobe too
#   run(command="bash scripts/gpu-exit.sh", carry=[".device-bin"])
#
# Environment: ROUNDS (1), SETTLE (seconds of idle before each run, 1.5).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
. scripts/device-lib.sh
first_commands
unpack
p=$bin/exitprobe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c
for round in $(seq "${ROUNDS:-1}"); do
	for size in "-dev 0" "-dev 16384" "-dev 100000" "-pinned 1024" "-pinned 4096" "-register 1024" "-register 4096" "-dev 16384 -pinned 1024 -register 1024"; do
		for mode in exit handoff destroy; do
			sleep "${SETTLE:-1.5}"
			s=$(date +%s%N)
			out=$("$p" -mode "$mode" $size 2>&1)
			e=$(date +%s%N)
			ready=$(echo "$out" | sed -n 's/.*ready_ns=\([0-9]*\).*/\1/p')
			next=$("$p" -mode exit | sed 's/ ready_ns=.*//')
			if [ -z "$ready" ]; then
				echo "round $round $mode [$size] failed: $out"
				continue
			fi
			echo "round $round $mode [$size] ${out% ready_ns=*} exit_ms=$(((e - ready) / 1000000)) total_ms=$(((e - s) / 1000000)) next: $next"
		done
	done
done
