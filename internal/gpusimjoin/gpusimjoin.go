// Package gpusimjoin adds GPU engines to package simjoin: the set
// similarity join's verification on an NVIDIA GPU, overlapped with
// filtering on the CPU, after Bellas & Gounaris, "Speeding-up the
// Verification Phase of Set Similarity Joins in the GPGPU paradigm".
// Importing it (the public simjoin package does) registers one engine per
// filter (allpairs, ppjoin, groupjoin, pairjoin) on the GPU; the planner
// weighs them against the CPU engines, each priced as the CPU's filtering
// plus what of the device's work the filtering does not hide.
//
// A run uploads the records of both sides once (the caller's sets, sorted,
// and each record's place) to every owner of its GPUs (a gpurt.Set of
// simjoin.Problem.GPUs), then streams the candidate pairs that the
// filters find on every core (simjoin.Candidates) to the devices in chunks
// through gpurt's pinned staging: the filters fill a chunk while the
// devices verify the ones before (an owner that is free takes the next
// sealed chunk), and goroutines hand the similar pairs that come back to
// the caller meanwhile. The overlap each pair needs is
// computed by the filters in exact integer arithmetic and travels with
// the pair: the device only compares counts.
//
// The kernels are the paper's three alternatives (section 3.3.2): a thread
// per probing record (thread), a block per probing record with the probe
// in shared memory (block), and a tile of threads per candidate pair that
// share the merge by Intersect Path (pair). The planner picks one from the
// records' lengths and the candidates per probe, sizes blocks, tiles and
// chunks from the data, and says so in its estimate's detail;
// simjoin.Options.GPUKernel forces one. It also chooses whether the
// filters apply the bitmap filter or hand every pair past Mann et al.'s
// bound to the device (simjoin.Filter.NoBitmap), whichever makes the
// whole join shorter.
package gpusimjoin

import (
	"context"
	"embed"
	"fmt"
	"sync"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/simjoin"
)

//go:embed kernels
var kernelFiles embed.FS

var source = gpurt.EmbeddedSource(kernelFiles, "kernels/verify.cu")

// KernelSources returns the sources the engines load, for
// internal/kernelgen to prebuild.
func KernelSources() []gpurt.Source { return []gpurt.Source{source} }

func init() {
	for _, name := range []string{"allpairs", "ppjoin", "groupjoin", "pairjoin"} {
		simjoin.Register(gpuEngine{name: name})
	}
}

// gpuEngine filters with the CPU engine of the same name and verifies on
// the GPU, planned with tune (the registered engines: the zero tuning).
type gpuEngine struct {
	name string
	tune tuning
}

// tuning is what an engine changes of the planner's choices: tests make
// engines with theirs to reach paths that small inputs do not (many
// chunks, every tile size) and to force a filter configuration; the zero
// value leaves every choice to the planner.
type tuning struct {
	// chunkLimit, if positive, caps a chunk's candidates, and its probes
	// to a third of that.
	chunkLimit int
	// tile, if positive, is the pair kernel's threads per pair.
	tile int
	// bitmap, if not bitmapAuto, forces the bitmap filter on or off.
	bitmap int
	// cpuTail, if positive, is the CPU's share of the chunks left at the
	// end, in candidates, and it takes no more (builder.split without
	// prices); if negative, the device verifies every chunk.
	cpuTail int
}

// tuning.bitmap's values.
const (
	bitmapAuto = iota // the planner's choice
	bitmapOn
	bitmapOff
)

func (e gpuEngine) Name() string { return e.name }

func (gpuEngine) Kind() engine.Kind { return engine.GPU }

// Device checks only that a GPU is present: the device opens when the
// engine runs (the filters start meanwhile), not while the planner
// compares estimates, so that a plan that picks the CPU never pays for it.
func (gpuEngine) Device() (engine.Device, error) {
	if err := gpurt.Present(); err != nil {
		return engine.Device{Kind: engine.GPU, Name: "no GPU"}, engine.Unavailable(engine.Cannot("%v", err))
	}
	info := gpurt.FirstInfo()
	return engine.Device{Kind: engine.GPU, Name: info.Name, Parallelism: info.SMs}, nil
}

// Estimate estimates e's run of p on the GPUs that pay, once per problem:
// where p leaves them to the planner, the first GPU alone, or every GPU
// where the run is long enough (gpurt.WeighOnce). Run takes the same
// GPUs.
func (e gpuEngine) Estimate(p *simjoin.Problem) (engine.Estimate, error) {
	info := gpurt.FirstInfo()
	w, err := gpurt.WeighOnce(p, e.weighKey(), p.GPUs, func(list []int) (engine.Estimate, float64, error) {
		sp := spreadOf(list)
		sp.wait = gpurt.SetLeft(list).Seconds()
		pl, err := e.plan(p, info, sp)
		if err != nil {
			return engine.Estimate{}, 0, engine.Cannot("%v", err)
		}
		if pl.devMemory > int64(info.Memory)/int64(sp.share) {
			return engine.Estimate{}, 0, engine.Cannot("needs %s of device memory for the records and two chunks per owner, %s has %s for each of %d owners",
				gpurt.FormatBytes(uint64(pl.devMemory)), info.Name, gpurt.FormatBytes(info.Memory/uint64(sp.share)), sp.share)
		}
		est := engine.Estimate{Seconds: pl.seconds, Memory: pl.hostMemory, Detail: pl.detail(info)}
		if p.GPUs == nil {
			est.DeviceName = gpurt.WeighedName(sp.devices, info)
		}
		return est, pl.seconds, nil
	})
	if err != nil {
		return engine.Estimate{}, err
	}
	est := w.Plan
	est.Detail = w.Noted(est.Detail)
	return est, nil
}

// weighKey is the key of e's weighing of the GPUs (gpurt.WeighOnce).
func (e gpuEngine) weighKey() string { return fmt.Sprintf("gpusimjoin.%s %+v", e.name, e.tune) }

func (e gpuEngine) Run(ctx context.Context, p *simjoin.Problem, out *simjoin.Output) error {
	gpus := gpurt.RunGPUs(p, e.weighKey(), p.GPUs)
	// The wait as the estimate has it: the filters' choice weighs it.
	sp := spreadOf(gpus)
	sp.wait = gpurt.SetLeft(gpus).Seconds()
	gpurt.PrewarmGPUs(gpus) // opens while the filters start
	pl, err := e.plan(p, gpurt.FirstInfo(), sp)
	if err != nil {
		return err
	}
	pl.gpus = gpus
	return run(ctx, p, pl, out)
}

// plan plans e's run on p with the filter configuration that makes it
// shortest by the cost model: with the bitmap filter, and, where the
// sample counts the pairs past the bound (not GroupJoin's), without.
func (e gpuEngine) plan(p *simjoin.Problem, info gpurt.Info, sp gpuSpread) (*runPlan, error) {
	offs := []bool{false}
	switch {
	case e.tune.bitmap == bitmapOff:
		offs = []bool{true}
	case e.tune.bitmap == bitmapAuto && e.name != "groupjoin":
		offs = []bool{false, true}
	}
	var best *runPlan
	for _, off := range offs {
		f := simjoin.Filter{Technique: e.name, NoBitmap: off}
		w, err := simjoin.CandidateWork(p, f)
		if err != nil {
			return nil, err
		}
		pl := plan(p, w, info, sp, e.tune)
		pl.filter, pl.filterForced = f, e.tune.bitmap != bitmapAuto
		if best == nil || pl.seconds < best.seconds {
			best = pl
		}
	}
	return best, nil
}

// gpuSpread is how a choice of GPUs (gpurt.ParseGPUs) spreads a run, as far
// as is known without opening them: its owners, its distinct GPUs and the
// most owners of one GPU.
type gpuSpread struct {
	owners, devices, share int
	wait                   float64 // seconds the run still waits for its GPUs to open (gpurt.SetLeft)
}

// spreadOf guesses the spread of list (nil: every GPU, one owner each,
// counted without loading the driver when it has not answered yet).
func spreadOf(list []int) gpuSpread {
	if list == nil {
		n := 0
		if infos := gpurt.KnownDevices(); infos != nil {
			n = len(infos)
		} else {
			n = gpurt.GuessDevices(nil)
		}
		return gpuSpread{owners: n, devices: n, share: 1}
	}
	sp := gpuSpread{owners: max(len(list), 1), devices: gpurt.GuessDevices(list), share: 1}
	per := map[int]int{}
	for _, o := range list {
		per[o]++
		sp.share = max(sp.share, per[o])
	}
	return sp
}

// state is an owner's state for this package: its module and a stager,
// kept from run to run.
type state struct {
	mu sync.Mutex // one run at a time

	// Owned by the device's goroutine: the module, the staging, the
	// stream that uploads the records, the slots of chunks in flight
	// (kept while the next run's chunks fit them), and a buffer for each
	// side's records.
	mod                   *gpurt.Module
	stage                 *gpurt.Stager
	up                    *gpurt.Stream
	slots                 [numSlots]*slot
	slotProbes, slotCands int
	recs                  [2]gpurt.Buffer
}

// Pinned staging: enough slots in flight to keep the bus busy, of 1 MiB,
// which a run pins at its start in a quarter of the time 4 MiB ones take
// and which copy as fast (BenchmarkStager, docs/GPU.md).
const (
	stageSlots = 8
	stageBytes = 1 << 20
)

var states gpurt.PerDevice[*state]

// stateOf returns the state of owner dev, made at first use.
func stateOf(dev *gpurt.Device) *state {
	return states.Get(dev, func() *state { return &state{stage: gpurt.NewStager(stageSlots, stageBytes)} })
}

// pooled returns the device bytes st keeps from its last run, which a
// run reuses or frees. st.mu is held.
func (st *state) pooled() int64 {
	n := int64(st.recs[0].Len() + st.recs[1].Len())
	if st.slots[0] != nil {
		n += numSlots * slotBytes(st.slotProbes, st.slotCands)
	}
	return n
}

// errorf wraps a failure of the device in the run's terms.
func errorf(format string, args ...any) error {
	return fmt.Errorf("gpusimjoin: "+format, args...)
}
