#!/usr/bin/env bash
# device.sh builds xsect's static GPU binaries here and runs them on the GPU
# machine, which has no Go toolchain.
#
#   scripts/device.sh build              # here: static binaries into .device-bin/
#   scripts/device.sh run [quick|large|full]
#                                        # there: xsect devices, every GPU package's tests
#                                        # (-test.v), the pairwise benchmark;
#                                        # a short table last
#   scripts/device.sh profile            # there: Nsight Compute on the kernels
#   scripts/device.sh build-kernels      # here: .device-bin/kernelgen
#   scripts/device.sh kernels            # there: prebuild every kernel with NVRTC
#                                        # into $OUT/kernels.tgz; here, unpack it at
#                                        # the root (tar xzf) and commit the files
#   scripts/device.sh build-allpairs     # here: .device-bin/gpuallpairs.test and
#                                        # .device-data/ (the MISI benchmark's data files)
#   scripts/device.sh allpairs           # there: the GPU all-pairs tests and the
#                                        # MISI benchmark (BENCH=0: tests only)
#
# run and allpairs set XSECT_REQUIRE_GPU=1: there a test that finds no GPU fails
# instead of skipping (internal/gpurt/gputest).
# Environment: TESTRUN (a -test.run pattern), NOBENCH=1 (tests only), DATA=1 (build:
# carry the real data the GPU tests read), GPUPKGS (build: the GPU packages),
# IPITEMS (ip block shapes to compare, e.g. 512x23f,256x15). For allpairs:
# BENCH=0 (no MISI benchmark), ONLY (its shapes or groups: table1,
# table1-10k, ...), TECHS, REPS, MAX (skip techniques estimated over MAX s);
# MMJOIN=default|SHAPES (the MMJoin benchmark),
# MMJOIN_TECHS (device:technique pairs), CONTAINMENT (its query's degree).
#
# From the session, one device call does everything:
#   scripts/device.sh build && run(command="bash scripts/device.sh run", carry=[".device-bin"])
# Logs go to $OUT (or .device-out/ when OUT is unset).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
. scripts/device-lib.sh

case "${1:-}" in
build)
	set -e
	mkdir -p "$bin"
	export CGO_ENABLED=0
	if go build -ldflags=-s -o "$bin/xsect" ./cmd/xsect 2>"$bin/xsect.build.log"; then
		echo "built $bin/xsect"
	else
		echo "warning: the CLI does not build yet; see $bin/xsect.build.log" >&2
		rm -f "$bin/xsect"
	fi
	for pkg in gpurt ${GPUPKGS:-gpuintersect gpuallpairs gpubatmap gpusimjoin gpuquery}; do
		go test -c -ldflags=-s -o "$bin/$pkg.test" "./internal/$pkg"
		echo "built $bin/$pkg.test"
	done
	# The query server (its tests serve the GPU engine where there is one).
	go test -c -ldflags=-s -o "$bin/serve.test" ./internal/serve
	echo "built $bin/serve.test"
	# The public gpu package (devices, the resident pairwise engine).
	go test -c -ldflags=-s -o "$bin/gpu.test" ./gpu
	echo "built $bin/gpu.test"
	# The prebuilt kernels, each loaded as a cubin and as PTX.
	go test -c -ldflags=-s -o "$bin/kernelgen.test" ./internal/kernelgen
	echo "built $bin/kernelgen.test"
	# The real data the GPU tests read (DATA=1), compressed to travel.
	if [ "${DATA:-}" = 1 ]; then
		data=${XSECT_DATA:-/work/shared/data}
		mkdir -p "$bin/data/fimi" "$bin/data/hypergraphs" "$bin/data/ir/gcide"
		for f in fimi/BMS2.dat fimi/retail.dat fimi/kosarak_head36682.dat hypergraphs/tags-math-sx.dedup.sets; do
			[ -f "$bin/data/$f.gz" ] || gzip -c "$data/$f" >"$bin/data/$f.gz"
		done
		for f in ir/gcide/gcide.docs.sets.gz ir/gcide/gcide.q.topics.terabyte05.efficiency.txt.sets; do
			[ -f "$bin/data/$f" ] || cp "$data/$f" "$bin/data/$f"
		done
		du -sh "$bin/data"
	fi
	# The probe of a GPU process's exit (scripts/gpu-exit.sh).
	go build -ldflags=-s -o "$bin/exitprobe" ./internal/gpurt/exitprobe
	echo "built $bin/exitprobe"
	# The CLI's GPU tests (xsect devices, --device gpu), if the CLI builds.
	if go test -c -ldflags=-s -o "$bin/cli.test" ./cmd/xsect/internal/cli >"$bin/cli.build.log" 2>&1; then
		echo "built $bin/cli.test"
	else
		rm -f "$bin/cli.test"
	fi
	for f in "$bin"/*.test "$bin/xsect" "$bin/exitprobe"; do
		if [ -e "$f" ]; then gzip -f "$f"; fi
	done
	du -sh "$bin"
	;;
run)
	unpack
	out="${OUT:-.device-out}"
	mkdir -p "$out"
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
	echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	export XSECT_CACHE_DIR=/tmp/xsect-cache XSECT_REQUIRE_GPU=1
	if [ -d "$bin/data" ]; then
		# The tests read plain files where the data folder has them plain.
		rm -rf /tmp/xsect-data && cp -r "$bin/data" /tmp/xsect-data
		gunzip -f /tmp/xsect-data/fimi/*.gz /tmp/xsect-data/hypergraphs/*.gz
		export XSECT_DATA=/tmp/xsect-data
	fi
	summary=""
	if [ -x "$bin/xsect" ]; then
		echo "=== xsect devices"
		"$bin/xsect" devices
	fi
	for name in gpurt kernelgen gpu gpuintersect gpuallpairs gpubatmap gpusimjoin gpuquery serve cli; do
		t="$bin/$name.test"
		[ -x "$t" ] || continue
		run=${TESTRUN:-.}
		[ "$name" = cli ] && run='Devices|IntersectDevice|GPU|DeviceErrors'
		[ "$name" = kernelgen ] && run='PrebuiltLoad'
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
build-allpairs)
	unpack
	set -e
	mkdir -p "$bin" .device-data/fimi .device-data/ir/gcide
	CGO_ENABLED=0 go test -c -ldflags=-s -o "$bin/gpuallpairs.test" ./internal/gpuallpairs
	rm -f "$bin/gpuallpairs.test.gz"
	echo "built $bin/gpuallpairs.test"
	data=${XSECT_DATA:-/work/shared/data}
	for f in fimi/retail.dat fimi/kosarak_head36682.dat fimi/BMS2.dat ir/gcide/gcide.docs.sets.gz; do
		[ -f ".device-data/$f" ] || cp "$data/$f" ".device-data/$f"
	done
	du -sh "$bin/gpuallpairs.test" .device-data
	echo 'run with: run(command="bash scripts/device.sh allpairs", carry=[".device-bin/gpuallpairs.test", ".device-data"])'
	;;
allpairs)
	out="${OUT:-.device-out}"
	mkdir -p "$out"
	export XSECT_CACHE_DIR=/tmp/xsect-cache XSECT_REQUIRE_GPU=1
	t="$bin/gpuallpairs.test"
	echo "=== gpuallpairs tests"
	start=$(date +%s)
	"$t" -test.v -test.count=1 -test.timeout=400s -test.run "${TESTRUN:-.}" >"$out/gpuallpairs.log" 2>&1
	rc=$?
	grep -E '^(--- FAIL|panic|FAIL|ok)' "$out/gpuallpairs.log" | head -40
	printf 'gpuallpairs pass %d fail %d skip %d exit %d (%ds)\n' "$(grep -c -- '--- PASS' "$out/gpuallpairs.log")" \
		"$(grep -c -- '--- FAIL' "$out/gpuallpairs.log")" "$(grep -c -- '--- SKIP' "$out/gpuallpairs.log")" "$rc" $(( $(date +%s) - start ))
	if [ "$rc" -ne 0 ]; then grep -B2 -A12 -m3 -E -- '--- FAIL|panic:' "$out/gpuallpairs.log" | head -80; fi
	if [ "${BENCH:-1}" != 0 ]; then
		echo "=== MISI benchmark (ms, collection in host memory to counts in host memory)"
		"$t" -test.run '^$' -test.bench '^BenchmarkMISI$' -test.benchtime 1x -test.timeout 400s \
			-misi.data .device-data -misi.table "$out/misi.txt" ${ONLY:+-misi.only "$ONLY"} \
			${TECHS:+-misi.techs "$TECHS"} ${REPS:+-misi.reps "$REPS"} ${MAX:+-misi.max "$MAX"} >"$out/misi.log" 2>&1
		echo "benchmark exit $?"
		grep -E 'FAIL|panic|Error|error' "$out/misi.log" | head -10
		cat "$out/misi.txt" 2>/dev/null
	fi
	if [ -n "${MMJOIN:-}" ]; then
		# MMJOIN=default (or shape names): MMJoin across devices against the CPU's.
		echo "=== MMJoin benchmark (ms, counting qualifying pairs)"
		only=""
		[ "$MMJOIN" != default ] && only="$MMJOIN"
		"$t" -test.run '^$' -test.bench '^BenchmarkMMJoin$' -test.benchtime 1x -test.timeout 400s \
			-misi.data .device-data ${only:+-mmjoin.only "$only"} ${MMJOIN_TECHS:+-mmjoin.techs "$MMJOIN_TECHS"} \
			${CONTAINMENT:+-mmjoin.containment "$CONTAINMENT"} ${REPS:+-misi.reps "$REPS"} >"$out/mmjoin.log" 2>&1
		echo "benchmark exit $?"
		grep -E -v '^(goos|goarch|pkg|cpu|PASS|ok|Benchmark)' "$out/mmjoin.log" | head -60
	fi
	;;
build-kernels)
	set -e
	mkdir -p "$bin"
	CGO_ENABLED=0 go build -ldflags=-s -o "$bin/kernelgen" ./internal/kernelgen
	rm -f "$bin/kernelgen.gz" && gzip -f "$bin/kernelgen"
	echo 'run with: run(command="bash scripts/device.sh kernels", carry=[".device-bin/kernelgen.gz"])'
	;;
kernels)
	unpack
	set -e
	out="${OUT:-.device-out}"
	mkdir -p "$out"
	"$bin/kernelgen" -root .
	"$bin/kernelgen" -root . -check
	tar czf "$out/kernels.tgz" internal/*/kernels/generated.txt internal/*/kernels/*.gz
	du -ch internal/*/kernels/*.gz | tail -1
	;;
profile)
	unpack
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
	echo "usage: $0 build | run [quick|large|full] | profile | build-allpairs | allpairs | build-kernels | kernels" >&2
	exit 2
	;;
esac
