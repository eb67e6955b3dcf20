package gpuintersect

import (
	"math"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
)

// multiples returns the multiples of k in [0, n).
func multiples(k, n int) []uint32 {
	s := make([]uint32, 0, n/k+1)
	for x := 0; x < n; x += k {
		s = append(s, uint32(x))
	}
	return s
}

// TestGPUSeconds checks the GPU's side of the pairwise decision against the
// H100 host's measurements, and the decisions it implies there: counting
// 100M + 100M took 20.8 ms end to end, listing its 10M common elements
// 23.9 ms; the 16 cores counted at 0.055 ns an element (so the CPU keeps
// every count), one core at 0.9 ns (so the GPU wins past about 0.3 G
// elements).
func TestGPUSeconds(t *testing.T) {
	h100 := gpurt.ReferenceH100().SpeedOver(gpurt.ReferenceH100())
	n := int64(200e6)
	if got := gpuSeconds(n, 0, false, h100, 0); math.Abs(got-20.8e-3) > 2e-3 {
		t.Errorf("count of 100M+100M, started: %.1f ms, measured 20.8", got*1e3)
	}
	if got := gpuSeconds(n, 10e6, true, h100, 0); math.Abs(got-23.9e-3) > 3e-3 {
		t.Errorf("intersection of 100M+100M, started: %.1f ms, measured 23.9", got*1e3)
	}
	for _, c := range []struct {
		n     int64
		cpuNS float64
		gpu   bool
	}{
		{200e6, 0.055, false}, // 16 cores
		{4e9, 0.055, false},   // the largest pair of sets
		{200e6, 0.9, false},   // one core, the GPU's start dominates
		{1e9, 0.9, true},      // one core, large
	} {
		g := gpuSeconds(c.n, 0, false, h100, startupSeconds)
		if got := g < float64(c.n)*c.cpuNS*1e-9; got != c.gpu {
			t.Errorf("%d elements, CPU at %.3g ns: GPU %.3g s, GPU chosen %v, want %v", c.n, c.cpuNS, g, got, c.gpu)
		}
	}
	// A device with faster memory runs the kernels faster, not the bus.
	fast := h100
	fast.Memory = 2
	if a, b := gpuSeconds(n, 0, false, fast, 0), gpuSeconds(n, 0, false, h100, 0); !(a < b && b-a < 1e-3) {
		t.Errorf("twice the bandwidth: %.4g s against %.4g", a, b)
	}
}

func TestChoose(t *testing.T) {
	// Small or disjoint inputs stay on the CPU without being timed.
	small := Choose(multiples(2, 1<<20), multiples(3, 1<<20), true, 0)
	if small.GPU || small.CPUSeconds != 0 || !strings.Contains(small.Reason, "before a GPU starts") {
		t.Errorf("small sets: %+v", small)
	}
	if c := Choose([]uint32{1, 2, 3}, []uint32{7, 8}, false, 0); c.GPU || c.CPUSeconds != 0 {
		t.Errorf("disjoint ranges: %+v", c)
	}
	if c := Choose(nil, []uint32{7, 8}, false, 0); c.GPU {
		t.Errorf("an empty set: %+v", c)
	}

	// The CPU's sample: multiples of 2 and of 3 share the multiples of 6,
	// a fifth of their elements in any window.
	a, b := multiples(2, 1<<24), multiples(3, 1<<24)
	for _, mat := range []bool{false, true} {
		ns, frac := cpuSample(a, b, mat, 2)
		if ns <= 0 || math.IsInf(ns, 0) || math.Abs(frac-0.2) > 0.01 {
			t.Errorf("materialise %v: %.3g ns an element, result fraction %.4f, want > 0 and 0.2", mat, ns, frac)
		}
	}
	if testing.Short() {
		return
	}
	// Large enough to be timed: the answer follows the two estimates.
	a, b = multiples(2, 1<<27), multiples(3, 1<<27)
	c := Choose(a, b, false, 0)
	if c.CPUSeconds <= 0 || c.GPUSeconds < startupSeconds-driverSeconds || c.GPU != (c.GPUSeconds < c.CPUSeconds) || !strings.Contains(c.Reason, "CPU threads") {
		t.Errorf("large sets: %+v", c)
	}
}
