#!/usr/bin/env bash
# device.sh builds xsect's static GPU binaries here and runs them on the GPU
# machine, which has no Go toolchain.
#
#   scripts/device.sh build              # here: static binaries into .device-bin/
#   scripts/device.sh run [quick|large|full]
#                                        # there: xsect devices, the GPU tests
#                                        # (-test.v), the pairwise benchmark;
#                                        # a short table last
#   scripts/device.sh profile            # there: Nsight Compute on the kernels
#
# Environment: TESTRUN (a -test.run pattern), NOBENCH=1 (tests only),
# IPITEMS (ip block shapes to compare, e.g. 512x23f,256x15).
#
# From the session, one device call does everything:
#   scripts/device.sh build && run(command="bash scripts/device.sh run", carry=[".device-bin"])
# Logs go to $OUT (or .device-out/ when OUT is unset).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin

case "${1:-}" in
build)
	set -e
	mkdir -p "$bin"
	export CGO_ENABLED=0
	if go build -o "$bin/xsect" ./cmd/xsect 2>"$bin/xsect.build.log"; then
		echo "built $bin/xsect"
	else
		echo "warning: the CLI does not build yet; see $bin/xsect.build.log" >&2
		rm -f "$bin/xsect"
	fi
	for pkg in gpu gpuintersect; do
		go test -c -o "$bin/$pkg.test" "./$pkg"
		echo "built $bin/$pkg.test"
	done
	# The CLI's GPU tests (xsect devices, --device gpu), if the CLI builds.
	if go test -c -o "$bin/cli.test" ./internal/cli >"$bin/cli.build.log" 2>&1; then
		echo "built $bin/cli.test"
	else
		rm -f "$bin/cli.test"
	fi
	;;
run)
	out="${OUT:-.device-out}"
	mkdir -p "$out"
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
	echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	export XSECT_CACHE_DIR=/tmp/xsect-cache
	summary=""
	if [ -x "$bin/xsect" ]; then
		echo "=== xsect devices"
		"$bin/xsect" devices
	fi
	for name in gpu gpuintersect cli; do
		t="$bin/$name.test"
		[ -x "$t" ] || continue
		run=${TESTRUN:-.}
		[ "$name" = cli ] && run='Devices|IntersectDevice'
		echo "=== $name tests"
		start=$(date +%s)
		"$t" -test.v -test.count=1 -test.timeout=300s -test.run "$run" >"$out/$name.log" 2>&1
		rc=$?
		grep -E '^(--- FAIL|panic|FAIL|ok)|expected error|device 0' "$out/$name.log" | head -40
		pass=$(grep -c -- '--- PASS' "$out/$name.log")
		fail=$(grep -c -- '--- FAIL' "$out/$name.log")
		skip=$(grep -c -- '--- SKIP' "$out/$name.log")
		summary+=$(printf '%-14s pass %4d  fail %3d  skip %3d  exit %d  (%ds)' "$name" "$pass" "$fail" "$skip" "$rc" $(( $(date +%s) - start )))$'\n'
		if [ "$rc" -ne 0 ]; then tail -30 "$out/$name.log"; fi
	done
	if [ -x "$bin/gpuintersect.test" ] && [ "${NOBENCH:-}" = "" ]; then
		echo "=== benchmark"
		"$bin/gpuintersect.test" -test.run '^$' -test.bench '^BenchmarkSISI$' -test.benchtime 1x -test.timeout 480s \
			-sisi.grid "${GRID:-${2:-full}}" -sisi.table "$out/table.txt" ${IPITEMS:+-sisi.ipitems "$IPITEMS"} >"$out/bench.log" 2>&1
		echo "benchmark exit $?"
		tail -5 "$out/bench.log"
	fi
	echo
	echo "=== tests"
	printf '%s' "$summary"
	if [ -f "$out/table.txt" ]; then
		echo "=== benchmark (ms; GB/s = input bytes / kernel time)"
		cat "$out/table.txt"
	fi
	;;
profile)
	# Nsight Compute on the main kernels of one 100M pair, for tuning.
	out="${OUT:-.device-out}"
	mkdir -p "$out"
	export XSECT_CACHE_DIR=/tmp/xsect-cache
	ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
	for k in ${KERNELS:-ip_total ip_partition bmd_total}; do
		"$ncu" -k "$k" -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
			--section MemoryWorkloadAnalysis --section SchedulerStats \
			"$bin/gpuintersect.test" -test.run '^$' -test.bench '^BenchmarkSISI$' -test.benchtime 1x \
			-sisi.grid one -sisi.reps 1 -sisi.methods "${METHODS:-ip,bitmap-dynamic}" >"$out/ncu-$k.txt" 2>&1
		echo "=== ncu $k"
		grep -E 'Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Issued Warp|No Eligible|Eligible Warps|One or More|Dynamic Shared|Static Shared|Waves' "$out/ncu-$k.txt" | sed 's/  */ /g' | head -40
	done
	;;
*)
	echo "usage: $0 build | run [quick|large|full] | profile" >&2
	exit 2
	;;
esac
