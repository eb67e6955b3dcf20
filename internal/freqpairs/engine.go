package freqpairs

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/internal/registry"
)

// Engine is one way of mining pairs on one device. The CPU engines are
// built in; other packages (GPU engines) add theirs with Register. An
// engine must be safe for concurrent use.
type Engine interface {
	// Name is the technique: "apriori", "eclat", "fpgrowth", "batmap".
	// Engines of different devices that compute alike share a name.
	Name() string
	// Device is "cpu" or "gpu".
	Device() string
	// Available returns nil, or an error (wrapping ErrCannotRun) saying
	// why the engine cannot run on this machine.
	Available() error
	// Estimate predicts the engine's time and peak memory (beyond the
	// Data) on d, or says why it cannot run d. It must be cheap.
	Estimate(d *Data) (Estimate, error)
	// Run reports every pair of ranks with support at least
	// d.MinSupport through writers of out, exactly once each. It returns
	// soon after ctx is done or out.Err() is set.
	Run(ctx context.Context, d *Data, out *Output) error
}

// Estimate is an engine's prediction for one problem.
type Estimate struct {
	// Seconds is the predicted time of Run, output excluded.
	Seconds float64
	// Memory is the bytes Run allocates beyond the Data.
	Memory int64
	// Detail says how the engine would run, for Explain.
	Detail string
}

var registered = registry.New("pairs", func(e Engine) (string, string) { return e.Name(), e.Device() })

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

func (cpu) Device() string   { return "cpu" }
func (cpu) Available() error { return nil }

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
