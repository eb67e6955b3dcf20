package gpuintersect

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/intersect"
)

// The GPU's side of a pairwise problem from host memory, measured on the
// H100 host (docs/GPU.md, 100M + 100M elements): starting the GPU costs
// 0.22 s (driver 98 ms, context 119 ms, cached kernels 7 ms); the inputs
// then cross the bus at about 40 GB/s from Go memory through pinned
// staging (PCIe 5 there, which gpurt.Info does not describe: other hosts
// keep this figure), the ip kernels read them at 1.8 TB/s (count) and 0.8
// TB/s (intersect) on the H100, scaled by the device's peak bandwidth,
// and each element of a materialised result costs 0.33 ns more (its copy
// back into Go memory).
const (
	startupSeconds = 0.22
	driverSeconds  = 0.1 // the part of startupSeconds a probed driver has paid
	busRate        = 40e9
	countKernel    = 1.8e12
	listKernel     = 0.8e12
	resultNS       = 0.33
)

// minProbe is the size, both sets together, below which Choose does not
// time the CPU: at 3 ns per element, slower than one core of any CPU
// measured (0.1 to 0.9 ns), the CPU still finishes before the GPU would
// have started.
const minProbe = 1 << 26

// Choice is Choose's answer: whether the GPU is faster, and the estimates.
type Choice struct {
	GPU                    bool
	CPUSeconds, GPUSeconds float64 // 0 where not estimated
	Reason                 string
}

// Choose says whether intersecting a and b (strictly increasing) on the
// GPU, starting it for this, beats the CPU path on threads goroutines
// (intersect.CountParallel or IntersectParallel, all CPUs when threads <=
// 0). materialise asks for the elements, not only their number. The
// CPU's side is measured: it times the parallel count or intersection on a
// slice of the inputs' shared value range (about 1/32 of the work, 2^20 to
// 2^23 elements) and scales it up, so that it reflects this machine's
// cores, memory and kernels, and the data's density and skew. Sets under
// 2^26 elements together stay on the CPU without that measurement.
func Choose(a, b []uint32, materialise bool, threads int) Choice {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	a, b = trim(a, b)
	n := len(a) + len(b)
	if len(a) == 0 || len(b) == 0 {
		return Choice{Reason: "the sets share no value range"}
	}
	if n < minProbe {
		return Choice{Reason: fmt.Sprintf("%d elements: the CPU finishes before a GPU starts", n)}
	}
	cpuNS, outFrac := cpuSample(a, b, materialise, threads)
	c := Choice{CPUSeconds: cpuNS * float64(n) / 1e9}
	speed := gpurt.Speed{Compute: 1, Tensor: 1, Memory: 1}
	startup := startupSeconds
	if gpurt.Probed() {
		if infos, err := gpurt.Devices(); err == nil && len(infos) > 0 {
			speed = infos[0].SpeedOver(gpurt.ReferenceH100())
			startup -= driverSeconds
		}
	}
	c.GPUSeconds = gpuSeconds(int64(n), outFrac*float64(n), materialise, speed, startup)
	c.GPU = c.GPUSeconds < c.CPUSeconds
	c.Reason = fmt.Sprintf("%d elements: %.3g s on %d CPU threads, %.3g s on the GPU (start included)", n, c.CPUSeconds, threads, c.GPUSeconds)
	return c
}

// gpuSeconds estimates a run on the GPU of n input elements with out
// result elements, on a device of the given speed over the H100, after
// startup seconds of starting it.
func gpuSeconds(n int64, out float64, materialise bool, speed gpurt.Speed, startup float64) float64 {
	bytes := 4 * float64(n)
	kernel := countKernel
	if materialise {
		kernel = listKernel
	}
	s := startup + bytes/busRate + bytes/(kernel*speed.Memory)
	if materialise {
		s += out * resultNS * 1e-9
	}
	return s
}

// cpuSample times the CPU path on a slice of the value range a and b
// share (both trimmed to it), from the middle, and returns nanoseconds per
// input element and the fraction of the input the result holds (its
// size over len(a)+len(b)). The first run is the measure, as the real
// one reads its inputs from memory too; a second, cached one bounds it in
// case the first was interrupted.
func cpuSample(a, b []uint32, materialise bool, threads int) (ns, outFrac float64) {
	if len(a) > len(b) {
		a, b = b, a
	}
	n := len(a) + len(b)
	want := min(max(n/32, 1<<20), 1<<23)
	// A window of the smaller set, and the part of the larger one over the
	// same values: its share of the window grows with the ratio of sizes.
	m := max(1, int(float64(len(a))*float64(want)/float64(n)))
	i0 := (len(a) - m) / 2
	i1 := i0 + m
	j0, _ := slices.BinarySearch(b, a[i0])
	j1 := len(b)
	if i1 < len(a) {
		j1, _ = slices.BinarySearch(b, a[i1])
	}
	sa, sb := a[i0:i1], b[j0:j1]
	var runs [2]time.Duration
	found := 0
	var dst []uint32
	for r := range runs {
		start := time.Now()
		if materialise {
			dst = intersect.IntersectParallel(dst[:0], sa, sb, threads)
			found = len(dst)
		} else {
			found = intersect.CountParallel(sa, sb, threads)
		}
		runs[r] = time.Since(start)
	}
	t := min(runs[0], 2*runs[1])
	elems := float64(len(sa) + len(sb))
	return float64(t.Nanoseconds()) / elems, float64(found) / elems
}

// Worthwhile reports whether intersecting a and b on the GPU pays, with
// its start, against the CPU on all its cores (see Choose).
func Worthwhile(a, b []uint32, materialise bool) bool { return Choose(a, b, materialise, 0).GPU }
