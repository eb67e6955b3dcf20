#!/usr/bin/env bash
# startup.sh measures, on the GPU machine, what a GPU costs a whole process
# on first use, and checks that xsect runs with the CUDA driver alone (no
# NVRTC, no cuBLAS), with the same results.
#
# Here:  scripts/device.sh build, and an older xsect to compare with, gzipped,
#        as .device-bin/xsect-old.gz (optional), then
#        run(command="bash scripts/startup.sh", carry=[".device-bin"])
#        run(command="bash scripts/startup.sh tests", carry=[".device-bin"])
#        (the second: every GPU package's tests with the driver alone, through
#        device.sh run, so with XSECT_REQUIRE_GPU=1: a test that finds no GPU
#        fails; those that need NVRTC or cuBLAS skip, saying so)
# There: for each command, whole-process wall seconds, alternating the binaries,
#        each with empty kernel caches (xsect's and the driver's) and warm;
#        then with the toolkit's libnvrtc and libcublas moved out of the
#        loader's sight: xsect devices, the same commands, their output
#        compared with the CPU's. The libraries are put back at the end.
# Environment: ROUNDS (3).
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
. scripts/device-lib.sh
first_commands
unpack
out=${OUT:-.device-out}
mkdir -p "$out"
rounds=${ROUNDS:-3}
x=$bin/xsect
bins=("$x")
[ -x "$bin/xsect-old" ] && bins+=("$bin/xsect-old")
export XSECT_CACHE_DIR=/tmp/xsect-cache
work=/tmp/startup
mkdir -p "$work"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "host: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

# The inputs: a collection like ENRON's at 20,000 sets, binary.
"$x" gen --sets 20000 --avg-size 258 --universe 1100000 --dist zipf --seed 7 --format binary -o "$work/enron20k.bin"

# cmds are the measured commands, after the binary: NAME|ARGS.
cmds=(
	"batmap|pairs --gen-items 4000 --min-support 0.003 --count --engine batmap"
	"allpairs|allpairs $work/enron20k.bin --count-only"
	"containment|containment $work/enron20k.bin --min-degree 0.5 --count-only"
	"intersect|intersect --count --from $work/enron20k.bin 1 2 3"
)

lib=/usr/local/cuda/targets/x86_64-linux/lib
hidden=/tmp/hidden-toolkit

# hide moves the toolkit's NVRTC and cuBLAS out of the loader's sight, as
# in a container with the driver alone; unhide puts them back.
hide() {
	mkdir -p "$hidden"
	mv "$lib"/libnvrtc* "$lib"/libcublas* "$hidden"/
	ldconfig
	echo "loader sees: $(ldconfig -p | grep -cE 'libnvrtc|libcublas') NVRTC or cuBLAS libraries"
}
unhide() {
	mv "$hidden"/* "$lib"/
	ldconfig
	echo "loader sees: $(ldconfig -p | grep -cE 'libnvrtc|libcublas') NVRTC or cuBLAS libraries again"
}

if [ "${1:-}" = tests ]; then
	hide
	NOBENCH=1 bash scripts/device.sh run
	unhide
	exit
fi

cold() { rm -rf "$XSECT_CACHE_DIR" "$HOME/.nv/ComputeCache"; }

# table DEVICE CACHE prints a row per command and binary: the rounds' wall
# seconds, alternating the binaries within each round.
table() {
	local device=$1 cache=$2 c name args b r line
	for c in "${cmds[@]}"; do
		name=${c%%|*}
		args=${c#*|}
		declare -A row=()
		for r in $(seq "$rounds"); do
			for b in "${bins[@]}"; do
				[ "$cache" = cold ] && cold
				# shellcheck disable=SC2086
				row[$b]+="$(timed "$b" $args --device "$device") "
			done
		done
		for b in "${bins[@]}"; do
			printf '%-12s %-5s %-5s %-16s %s\n' "$name" "$device" "$cache" "$(basename "$b")" "${row[$b]}"
		done
		unset row
	done
}

echo "=== whole processes, wall seconds, $rounds alternated rounds (toolkit present)"
printf '%-12s %-5s %-5s %-16s %s\n' command dev cache binary seconds
table gpu cold
table gpu warm
all=("${bins[@]}")
bins=("$x")
XSECT_KERNELS=ptx table gpu cold | sed 's/ cold / ptx  /'
table cpu warm
bins=("${all[@]}")

# The reference outputs, on the CPU.
for c in "${cmds[@]}"; do
	name=${c%%|*}
	args=${c#*|}
	# shellcheck disable=SC2086
	"$x" $args --device cpu >"$work/$name.cpu" 2>&1
done

echo "=== the driver alone: libnvrtc and libcublas hidden from the loader"
hide
"$x" devices
bins=("$x")
table gpu cold
for c in "${cmds[@]}"; do
	name=${c%%|*}
	args=${c#*|}
	# shellcheck disable=SC2086
	"$x" $args --device gpu >"$work/$name.gpu" 2>&1
	if cmp -s "$work/$name.cpu" "$work/$name.gpu"; then
		echo "$name: GPU output equals the CPU's ($(head -c 60 "$work/$name.gpu" | tr '\n' ' '))"
	else
		echo "$name: GPU output DIFFERS from the CPU's"
		head -5 "$work/$name.cpu" "$work/$name.gpu"
	fi
done
"$x" allpairs "$work/enron20k.bin" --count-only --device gpu --explain 2>&1 | grep -E 'mm|chosen' | head -8
if [ -x "$bin/xsect-old" ]; then
	echo "the older binary:"
	cold
	"$bin/xsect-old" pairs --gen-items 4000 --min-support 0.003 --count --engine batmap --device gpu 2>&1 | head -3
fi
unhide
