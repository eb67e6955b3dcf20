package pairs

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/xsect/xsect/internal/engine"
)

// Engine is one way of mining pairs on one device: Run reports every
// pair of ranks with support at least d.MinSupport through writers of
// out, exactly once each, and returns soon after ctx is done or out.Err()
// is set. Estimate predicts the time and the peak memory beyond the Data.
type Engine = engine.Engine[*Data, *Output]

// Candidate is one engine's estimate for a plan.
type Candidate = engine.Candidate[Engine]

// Estimate is an engine's prediction for one problem.
type Estimate = engine.Estimate

// ErrCannotRun is wrapped by the errors of engines or devices that cannot
// run a problem: too much memory, no GPU.
var ErrCannotRun = engine.ErrCannotRun

var registered = engine.NewRegistry[Engine]("pairs")

// Register adds an engine. It panics if one with the same name and device
// is registered already.
func Register(e Engine) { registered.Register(e) }

// Engines returns the registered engines.
func Engines() []Engine { return registered.Engines() }

// EngineNames returns the names of the registered engines, sorted, once
// each.
func EngineNames() []string { return registered.Names() }

func init() {
	Register(apriori{})
	Register(eclat{})
	Register(fpgrowth{})
	Register(batmapEngine{})
	Register(bitmapEngine{})
}

// cpu is the part the built-in engines share.
type cpu struct{}

func (cpu) Kind() engine.Kind { return engine.CPU }

func (cpu) Device() (engine.Device, error) { return engine.CPUDevice(), nil }

// forItemsBytes is the memory forItems takes for f items: their order and
// weights.
func forItemsBytes(f int) int64 { return 12 * int64(f) }

// writersBytes is the memory of the Output's writers of threads
// goroutines.
func writersBytes(threads int) int64 { return int64(threads) * 4096 * int64(unsafe.Sizeof(Pair{})) }

// forItems runs fn(worker, rank) for every rank in [0, f) on threads
// goroutines, heaviest ranks (by weight) first so that workers finish
// together. It stops at ctx's end or out's error.
func forItems(ctx context.Context, threads, f int, weight func(r int) int64, out *Output, stage string, fn func(w int, r int)) error {
	order := make([]int32, f)
	for i := range order {
		order[i] = int32(i)
	}
	ws := make([]int64, f)
	var total int64
	for i := range ws {
		ws[i] = weight(i) + 1
		total += ws[i]
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(ws[b], ws[a]) })
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for w := range min(max(threads, 1), max(f, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && out.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= f {
					return
				}
				r := int(order[i])
				fn(w, r)
				out.Progress(stage, done.Add(ws[r]), total)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
