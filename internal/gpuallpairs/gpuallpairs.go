// Package gpuallpairs adds GPU engines to package allpairs: the all-pairs
// techniques of Bellas & Gounaris, "Exploiting GPUs for fast intersection
// of large sets" (sections 3.2 to 4), on NVIDIA GPUs, through internal/gpurt. Importing it (for its side effects) registers
// them; the planner then weighs them against the CPU engines.
//
//   - "mm": the collection as a 0/1 matrix M over the elements that some
//     pair can share, counts = M·Mᵀ with cuBLAS on the tensor cores: int8
//     inputs with int32 accumulation, which is exact (float16 inputs with
//     float32 accumulation, exact below 2^24, where int8 is not offered).
//     Matrices too large for the device are multiplied in slices of
//     columns, accumulating.
//   - "scancount": sf-gssjoin, a static inverted index with per-probe
//     accumulation: one block per probe set walks the inverted lists of its
//     elements and counts the candidates in shared memory.
//   - "bitmap": BI-naive, every set's bitmap resident, AND and popcount in
//     32×32 tiles of pairs staged through shared memory.
//   - "bitmap-dynamic": BI-dynamic, one block per probe set builds its
//     bitmap in shared memory and tests the candidates' elements.
//   - "merge": per-pair intersection, one warp per pair, the smaller set's
//     elements binary-searched in the larger (OBS).
//
// Every engine computes super-tiles of counts on the device, cuts them into
// the caller's tiles (zeroing what lies on or below the diagonal of a
// self-join) and copies them to pinned host memory while the next
// super-tile is computed on another stream; the host hands tiles to
// allpairs.Output while the device goes on. Memory is planned from the
// device's free memory before anything is allocated: no more than a few
// super-tiles of counts exist at once, on the device or the host.
package gpuallpairs

import (
	"context"
	"embed"
	"fmt"
	"sync"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
)

//go:embed kernels
var kernelFiles embed.FS

var source = gpurt.EmbeddedSource(kernelFiles, "kernels/allpairs.cu")

// KernelSources returns the sources the engines load, for
// internal/kernelgen to prebuild.
func KernelSources() []gpurt.Source { return []gpurt.Source{source} }

func init() {
	for _, t := range []technique{mmTech{}, scanTech{}, bitmapTech{}, dynamicTech{}, mergeTech{}, mmscanTech{}} {
		allpairs.Register(&engine{t: t, tune: defaultTuning()})
	}
	allpairs.Register(mmjoinEngine{tune: defaultTuning()})
}

// engine adapts a technique to allpairs.Engine.
type engine struct {
	t    technique
	tune tuning
}

func (e *engine) Name() string { return e.t.name() }

func (e *engine) Kind() allpairs.DeviceKind { return allpairs.GPU }

// Opening reports whether the default GPU is opening or open already
// (engine.Opening): the planner then estimates this engine beside the
// CPU's.
func (e *engine) Opening() bool { return gpurt.DefaultStarted() }

// Device describes every GPU of the host (the default choice), opening
// the first at first use (gpurt.PlanningGPUs); the planner asks
// DeviceFor.
func (e *engine) Device() (allpairs.Device, error) { return gpuDevice(nil, needsBLAS(e.t)) }

// DeviceFor describes the GPUs p runs on (Problem.GPUs), opening them,
// and only them, at first use; the analysis the estimates share runs
// meanwhile (startAnalysis).
func (e *engine) DeviceFor(p *allpairs.Problem) (allpairs.Device, error) {
	startAnalysis(p)
	return gpuDevice(p.GPUs, needsBLAS(e.t))
}

// gpuDevice opens the GPUs of list (nil: all) at first use, keeping them
// open, and describes them: their names and owners, the multiprocessors
// of the first, and the memory of the owner with the least (see
// openSet). Nothing else is opened: a run with --gpus 1, never touches
// GPU 0. Where the list is every GPU of a host of several, it opens the
// first alone: how many more pay is the estimate's to weigh (weighed).
// A technique that needs cuBLAS (needBLAS) is unavailable where the
// library does not load.
func gpuDevice(list []int, needBLAS bool) (allpairs.Device, error) {
	d := allpairs.Device{Kind: allpairs.GPU, Name: "no GPU"}
	if needBLAS {
		if _, err := gpurt.BLASLibrary(); err != nil {
			return d, fmt.Errorf("%w: needs cuBLAS: %v", allpairs.ErrCannotRun, err)
		}
	}
	set, free, err := openSet(gpurt.PlanningGPUs(list))
	if err != nil {
		return d, err
	}
	d.Name, d.Parallelism, d.Memory = gpurt.PlanningName(list, set), set.Owner(0).Info().SMs, free
	return d, nil
}

// openSet opens the GPUs of a choice (nil: all) at first use and returns
// them and the memory each owner may have: its GPU's free memory divided
// by the owners sharing it, plus this package's pooled buffers of the
// owner, which a plan may release; the least over the owners.
func openSet(list []int) (*gpurt.Set, int64, error) {
	set, err := gpurt.OpenSet(list)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
	}
	least := int64(-1)
	for i := range set.Len() {
		dev := set.Owner(i)
		free, _, err := dev.FreeMemory()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
		}
		f := int64(free)/int64(set.Share(i)) + stateOf(dev).devPool.Pooled()
		if least < 0 || f < least {
			least = f
		}
	}
	return set, least, nil
}

func (e *engine) Estimate(p *allpairs.Problem) (allpairs.Estimate, error) {
	return weighed(p, e.key(), func(list []int) (allpairs.Estimate, error) {
		// Before openSet, which opens the GPUs.
		startup := gpurt.StartupLeftOn(list).Seconds()
		set, free, err := openSet(gpurt.PlanningGPUs(list))
		if err != nil {
			return allpairs.Estimate{}, err
		}
		pl, err := planWith(p, e.t, e.tune, set.Owner(0).Info(), e.tune.budget(free), false)
		if err != nil {
			return allpairs.Estimate{}, err
		}
		devices, _, name := gpurt.Spreading(list, set)
		pl.spread(devices, name)
		return allpairs.Estimate{Seconds: startup + pl.seconds, Memory: pl.memory, Detail: pl.detail, DeviceName: name}, nil
	})
}

func (e *engine) Run(ctx context.Context, p *allpairs.Problem, out *allpairs.Output) error {
	set, err := gpurt.OpenSet(gpurt.RunGPUs(p, e.key(), p.GPUs))
	if err != nil {
		return err
	}
	return runSet(ctx, set, p, e.t, e.tune, out)
}

// key names the engine's weighing in a problem's memo (gpurt.WeighOnce):
// its technique and its tuning, since tests make engines of one technique
// with several.
func (e *engine) key() string { return fmt.Sprintf("gpuallpairs.%s %+v", e.t.name(), e.tune) }

// weighed is the estimate of the engine keyed key on p over the GPUs that
// pay (gpurt.WeighOnce: where p leaves them to the planner, the first GPU
// alone or every GPU, whichever is estimated faster), made once per
// problem: Run takes the same GPUs (gpurt.RunGPUs). est estimates the run
// on a list of GPUs, the wait for them included.
func weighed(p *allpairs.Problem, key string, est func(list []int) (allpairs.Estimate, error)) (allpairs.Estimate, error) {
	sp, err := gpurt.WeighOnce(p, key, p.GPUs, func(list []int) (allpairs.Estimate, float64, error) {
		e, err := est(list)
		return e, e.Seconds, err
	})
	if err != nil {
		return allpairs.Estimate{}, err
	}
	e := sp.Plan
	e.Detail = sp.Noted(e.Detail)
	return e, nil
}

// reserve is device memory left unplanned, for the context, cuBLAS's
// workspace and other users.
const reserve = 768 << 20

// tuning holds the sizes that plans are cut to and the costs that MMJoin's
// split is optimised with. The registered engines use defaultTuning; tests
// make engines with their own, to force tiling, slicing and splits.
type tuning struct {
	// tileCounts is the most counts of one super-tile.
	tileCounts int64
	// memoryLimit, if positive, caps the planned device memory.
	memoryLimit int64
	// mmjoinWordNS, if positive, replaces the product's cost per pair-word
	// given to MMJoin's optimiser (a tiny value makes many elements heavy).
	mmjoinWordNS float64
	// bandCounts is the most counts of one band of MMJoin's heavy product.
	bandCounts int64
	// bandHostBytes caps the host memory of the bands computed ahead.
	bandHostBytes int64
	// half multiplies in float16 even where cuBLAS multiplies int8: the
	// path of devices without an int8 product, which tests take with it.
	half bool
	// layout, if not layoutAuto, replaces the layout of MMJoin's index
	// part that its optimiser chose (tests run both).
	layout int
}

// MMJoin's layouts (tuning.layout).
const (
	layoutAuto    = iota // the optimiser's
	layoutProbe          // probe by probe
	layoutElement        // element by element
)

func defaultTuning() tuning {
	return tuning{tileCounts: 16 << 20, bandCounts: 4 << 20, bandHostBytes: 1 << 30}
}

// budget is the device memory a plan may use when free bytes are free.
func (tu tuning) budget(free int64) int64 {
	if tu.memoryLimit > 0 {
		free = min(free, tu.memoryLimit+reserve)
	}
	return max(free-reserve, 0)
}

// state is one owner's engine state: the device, its module, and pinned
// host memory that grows to the largest run and is kept for the next.
type state struct {
	dev *gpurt.Device
	mu  sync.Mutex // one run at a time

	// Owned by the device's goroutine.
	mod    *gpurt.Module
	int8OK int            // 0 unknown, 1 cuBLAS multiplies int8, -1 it does not
	pinned []gpurt.Pinned // each slot's host copy of its super-tile
	stage  *gpurt.Stager  // uploads from Go memory

	// Pinned buffers of MMJoin's bands, free for the taking; released from
	// the CPU's workers.
	hostPool gpurt.PinnedPool

	// Device buffers of earlier runs, kept for the next; planning counts
	// them as free.
	devPool gpurt.BufferPool
}

var states gpurt.PerDevice[*state]

// stateOf returns the engine state of an owner, made at first use and
// kept with the device (owners are never closed).
func stateOf(dev *gpurt.Device) *state {
	return states.Get(dev, func() *state { return &state{dev: dev, stage: gpurt.NewStager(stageSlots, stageBytes)} })
}

// device returns the state of the process's default GPU, opening it at
// first use.
func device() (*state, error) {
	dev, err := gpurt.Default()
	if err != nil {
		return nil, err
	}
	return stateOf(dev), nil
}

// columns maps the problem's elements to the columns of the matrices and
// bitmaps: only elements that some pair can share (in at least two sets of
// a self-join; in both collections of a join) get one, in increasing order.
type columns struct {
	colOf []int32
	k     int
}

// columnsOf is the problem's shared column numbering (computed once, in
// parallel, by allpairs).
func columnsOf(p *allpairs.Problem) *columns {
	colOf, k := p.SharedColumns()
	return &columns{colOf: colOf, k: k}
}
