package gpusimjoin

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

func TestClampPow2(t *testing.T) {
	for _, tc := range []struct{ n, lo, hi, want int }{
		{0, 4, 256, 4}, {5, 4, 256, 4}, {31, 4, 256, 16}, {32, 4, 256, 32}, {1000, 4, 256, 256}, {100, 32, 256, 64},
	} {
		if got := clampPow2(tc.n, tc.lo, tc.hi); got != tc.want {
			t.Errorf("clampPow2(%d, %d, %d) = %d, want %d", tc.n, tc.lo, tc.hi, got, tc.want)
		}
	}
	if b := blockFor(10, 5000); b != 256 {
		t.Errorf("blockFor(10, 5000) = %d", b)
	}
	if b := blockFor(100, 150); b != 32 {
		t.Errorf("blockFor(100, 150) = %d", b)
	}
}

// TestChoose: the paper's rule, a block per probe for short records and
// the pair kernel for long ones, a thread per probe where probes have
// about one candidate.
func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		avgLen, perProbe float64
		want             kernel
	}{{5, 50, kBlock}, {10, 1.2, kThread}, {2000, 2, kPair}, {300, 100, kPair}, {60, 14, kPair}} {
		if got := choose(tc.avgLen, tc.perProbe); got != tc.want {
			t.Errorf("choose(%g, %g) = %s, want %s", tc.avgLen, tc.perProbe, got, tc.want)
		}
	}
}

// TestEstimate: the estimate, which needs no GPU, reports the kernel and
// says whether it was forced; the planner's chunks grow with the pairs.
func TestEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := simjointest.Random(rng, 4000, 40, 300)
	th := mustThreshold(t, simjoin.Jaccard, "0.5")
	for _, kernel := range append([]string{"auto"}, simjoin.GPUKernels...) {
		pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Device: "cpu", GPUKernel: kernel})
		if err != nil {
			t.Fatal(err)
		}
		est, err := gpuEngine{name: "ppjoin"}.Estimate(pl.Problem)
		if err != nil {
			t.Fatal(err)
		}
		want := "(chosen:"
		if kernel != "auto" {
			want = "kernel " + kernel + " (forced:"
		}
		if !strings.Contains(est.Detail, want) || est.Seconds <= 0 || est.Memory <= 0 {
			t.Errorf("kernel %s: estimate %+v, want %q in its detail", kernel, est, want)
		}
	}
	if _, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, GPUKernel: "warp"}); err == nil || !strings.Contains(err.Error(), "unknown GPU kernel") {
		t.Errorf("GPUKernel warp: %v", err)
	}
	if small, large := clampPow2(int(1e5/perChunk), minChunk, maxChunk), clampPow2(int(1e9/perChunk), minChunk, maxChunk); small != minChunk || large != maxChunk {
		t.Errorf("chunks of %d and %d candidates, want %d and %d", small, large, minChunk, maxChunk)
	}
}

// TestNoGPU: where there is no GPU, the GPU engines cannot run and say
// why, and the planner runs on the CPU.
func TestNoGPU(t *testing.T) {
	if gpurt.Present() == nil {
		t.Skip("a GPU may be present: this test is for machines without one")
	}
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{1, 2, 3, 4})
	th := mustThreshold(t, simjoin.Jaccard, "0.5")
	_, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Device: "gpu", Technique: "ppjoin"})
	if !errors.Is(err, engine.ErrCannotRun) || !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "gpu: ") {
		t.Fatalf("device gpu without a GPU: %v", err)
	}
	pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th})
	if err != nil || pl.Chosen.Engine.Kind() != engine.CPU {
		t.Fatalf("device auto without a GPU: %v", err)
	}
}

// TestSpread: a choice of GPUs gives the owners, distinct GPUs and most
// owners of one GPU (without opening them), and the plan divides the
// devices' time by the GPUs, keeps a host chunk more per further owner and
// says so; one owner plans as before.
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		list []int
		want gpuSpread
	}{
		{[]int{0}, gpuSpread{owners: 1, devices: 1, share: 1}},
		{[]int{0, 0}, gpuSpread{owners: 2, devices: 1, share: 2}},
		{[]int{0, 0, 0}, gpuSpread{owners: 3, devices: 1, share: 3}},
		{[]int{0, 1}, gpuSpread{owners: 2, devices: 2, share: 1}},
		{[]int{2, 0, 2, 1}, gpuSpread{owners: 4, devices: 3, share: 2}},
	} {
		if got := spreadOf(tc.list); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.list, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	c := simjointest.Random(rng, 4000, 40, 300)
	th := mustThreshold(t, simjoin.Jaccard, "0.5")
	sp, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	p := sp.Problem
	w, err := simjoin.CandidateWork(p, simjoin.Filter{Technique: "ppjoin"})
	if err != nil {
		t.Fatal(err)
	}
	// A device much slower than the filters, so that its time shows.
	info := gpurt.ReferenceH100()
	info.SMs, info.ClockKHz = 1, info.ClockKHz/1000
	// Many chunks: one chunk has nothing to spread.
	tu := tuning{chunkLimit: 10}
	one := plan(p, w, info, gpuSpread{owners: 1, devices: 1, share: 1}, tu)
	two := plan(p, w, info, gpuSpread{owners: 2, devices: 2, share: 1}, tu)
	same := plan(p, w, info, gpuSpread{owners: 3, devices: 1, share: 3}, tu)
	if one.hostChunks != numChunks || two.hostChunks != numChunks+1 || same.hostChunks != numChunks+2 {
		t.Errorf("host chunks %d, %d, %d; want %d, %d, %d", one.hostChunks, two.hostChunks, same.hostChunks, numChunks, numChunks+1, numChunks+2)
	}
	if one.gpuSec != two.gpuSec || two.seconds >= one.seconds || same.seconds != one.seconds {
		t.Errorf("device %g s; estimates %g s on one GPU, %g s on two, %g s with three owners of one", one.gpuSec, one.seconds, two.seconds, same.seconds)
	}
	if strings.Contains(one.detail(info), "spread") || !strings.Contains(two.detail(info), "spread over 2 owners on 2 GPUs") ||
		!strings.Contains(same.detail(info), "spread over 3 owners on 1 GPUs") {
		t.Errorf("details:\n%s\n%s\n%s", one.detail(info), two.detail(info), same.detail(info))
	}
	if two.hostMemory <= one.hostMemory {
		t.Errorf("host memory %d with two owners, %d with one", two.hostMemory, one.hostMemory)
	}
}

// TestFilterChoice: the planner takes the filter configuration, with the
// bitmap filter or without, that its model finds shorter (GroupJoin keeps
// its bitmap filter), a tuning forces either and the detail says so;
// without the bitmap filter more pairs go to the device.
func TestFilterChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := simjointest.Random(rng, 4000, 40, 300)
	sp, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: mustThreshold(t, simjoin.Jaccard, "0.5"), Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	p, info, one := sp.Problem, gpurt.ReferenceH100(), gpuSpread{owners: 1, devices: 1, share: 1}
	for _, tech := range techniques {
		auto, err1 := gpuEngine{name: tech}.plan(p, info, one)
		on, err2 := gpuEngine{tech, tuning{bitmap: bitmapOn}}.plan(p, info, one)
		off, err3 := gpuEngine{tech, tuning{bitmap: bitmapOff}}.plan(p, info, one)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if on.filter.NoBitmap || !off.filter.NoBitmap || auto.filterForced || !on.filterForced || off.pairs < on.pairs {
			t.Errorf("%s: on %+v, off %+v, auto %+v", tech, on.filter, off.filter, auto.filter)
		}
		wantOff := tech != "groupjoin" && off.seconds < on.seconds
		if auto.filter.NoBitmap != wantOff || auto.seconds != min(on.seconds, off.seconds) && tech != "groupjoin" {
			t.Errorf("%s: chose no bitmap %v in %g s; with it %g s, without %g s", tech, auto.filter.NoBitmap, auto.seconds, on.seconds, off.seconds)
		}
		if d := off.detail(info); !strings.Contains(d, "without the bitmap filter (forced)") {
			t.Errorf("%s: detail %q", tech, d)
		}
		if d := auto.detail(info); !strings.Contains(d, "the bitmap filter;") || strings.Contains(d, "forced") {
			t.Errorf("%s: detail %q", tech, d)
		}
	}
}
