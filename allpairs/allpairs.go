// Package allpairs computes the intersection sizes of all pairs of sets in a
// collection (a self-join) or between two collections (R × S), and reports
// the pairs a query asks for: those sharing at least N elements, or those
// whose degree of containment |Si ∩ Sj| / min(|Si|, |Sj|) reaches a
// threshold (a set containment join). It can also hand over all the counts
// as dense tiles, so that no caller ever needs k² counts in memory at once.
//
// Several techniques compute the same counts, on the CPU and on a GPU:
// per-pair merging with the SIMD kernels of package intersect, an inverted
// index with per-probe counting (scan-count), resident and dynamic bitmaps,
// a bit-packed matrix product (on the GPU an int8 matrix product), MMJoin's
// split into light and heavy parts, BATMAP, and prefix filtering for
// threshold queries. A planner measures the problem (sizes, universe,
// document frequencies, the work of every technique), asks every technique
// allowed by Options.Device and Options.Technique for an estimate, and runs
// the fastest; Plan.Explain says what it saw. Without a GPU, or without the
// CUDA libraries, everything runs on the CPU.
package allpairs

import (
	"context"
	"io"
	"time"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/sets"

	// The GPU engines register themselves; the CUDA libraries are loaded
	// only when the planner considers a GPU.
	_ "github.com/xsect/xsect/internal/gpuallpairs"
	_ "github.com/xsect/xsect/internal/gpubatmap"
)

// Pair is one reported pair: I indexes the first collection (r), J the
// second (s, or r again in a self-join, where I < J), both by the sets'
// original positions; Count is |r[I] ∩ s[J]|.
type Pair = sets.Pair

// Ratio is an exact fraction Num/Den, the form in which containment
// thresholds are compared: no rounding ever decides whether a pair is kept.
type Ratio = allpairs.Ratio

// ParseRatio parses a threshold such as "1", "0.8", "2/3" or "5e-1" exactly.
// It must be in [0, 1], and its reduced numerator and denominator must fit
// in 64 bits.
func ParseRatio(s string) (Ratio, error) { return allpairs.ParseRatio(s) }

// Query says which pairs a join reports: MinOverlap keeps pairs with
// |Si ∩ Sj| >= MinOverlap (0 keeps every pair, disjoint ones included);
// a Containment ratio with a non-zero Den makes the join a set containment
// join, which ignores empty sets and keeps a pair when |Si ∩ Sj| /
// min(|Si|, |Sj|) >= Num/Den.
type Query = allpairs.Query

// Options tune how a plan runs. The zero value runs on every core within
// half of the machine's memory and lets the planner choose the technique
// and the device.
type Options struct {
	// Device is where the planner may run the join: "cpu", "gpu" (an
	// error wrapping ErrUnavailable where there is none) or "auto", which
	// takes a GPU only where one is present and its technique's estimate
	// beats the CPU's (a GPU is not even opened when a CPU estimate is
	// below its start-up). The default value is "auto" (also written "").
	Device string
	// Technique forces one technique, a name of Techniques, rather than
	// the fastest estimate. The default value is "auto" (also written
	// "").
	Technique string
	// Threads is the number of CPU goroutines a plan runs on. The default
	// value, 0, means runtime.GOMAXPROCS(0).
	Threads int
	// Largest, when positive, keeps only the Largest largest sets of each
	// collection (ties go to the lower id), so that a sample of the
	// heaviest pairs costs a fraction of the whole join; pairs and tiles
	// still carry the sets' original ids. The default value, 0, keeps
	// every set.
	Largest int
	// Memory bounds the bytes that the prepared sets and a CPU technique's
	// structures may take: a technique predicted to need more cannot run
	// (ErrOverBudget). A GPU technique's device memory is bounded by the
	// GPU instead. The default value, 0, means half of the machine's
	// physical memory.
	Memory int64
	// Progress, if set, is called now and then, from any goroutine, with
	// the pairs done so far and their total, for a progress bar. The
	// default value, nil, reports nothing.
	Progress func(done, total int64)
	// Rows and Cols, when not the zero Range, restrict the run to one tile
	// of the pair space: the pairs (i, j) with the set id i in Rows and j
	// in Cols (see sets.Range), exactly as the whole run reports them
	// (Largest and the dropping of empty sets still choose among all the
	// sets), so that the tiles of a grid, run apart (on several
	// machines), give the whole run's pairs. In a self-join they must be
	// equal (the tile's own self-join) or disjoint (rows before columns:
	// an R × S join; after: no pair). The default value, the zero Range
	// for both, runs the whole pair space.
	Rows, Cols sets.Range
	// GPUs are the GPUs, by ordinal, that a GPU technique spreads its
	// tiles over; an ordinal listed twice gets two owners on that GPU,
	// which gains nothing but runs the splitting on one GPU. gpu.ParseGPUs
	// reads the forms of xsect's --gpus flag. The default value, nil,
	// means every GPU of the host where that pays: the planner weighs
	// the first GPU alone against all of them, the others' start
	// included, and Explain says which it took.
	GPUs []int
	// CountOnly says that the plan will only count its pairs (Plan.Count,
	// as Count does): a GPU technique then counts them on the device, and
	// its estimate leaves out the pairs' way back to the host. Such a
	// plan can still Join; its estimate was then low. The default value,
	// false, plans for the pairs.
	CountOnly bool
}

// internal is the one place where opt becomes the internal planner's
// options.
func (opt Options) internal() allpairs.Options {
	return allpairs.Options{
		Device:    opt.Device,
		Technique: opt.Technique,
		Threads:   opt.Threads,
		Largest:   opt.Largest,
		Memory:    opt.Memory,
		Progress:  opt.Progress,
		Rows:      opt.Rows,
		Cols:      opt.Cols,
		GPUs:      opt.GPUs,
		CountOnly: opt.CountOnly,
	}
}

// Tile is a dense block of counts: Counts[x*Cols+y] is |r[Row0+x] ∩
// s[Col0+y]|, where rows and columns index the sets the plan kept, in
// their original order; RowIDs and ColIDs give their original ids. In a
// self-join only the entries above the diagonal are counted; the others
// are 0.
type Tile = allpairs.Tile

// Stats describes a problem as the planner measured it.
type Stats = allpairs.Stats

// ErrCannotRun is wrapped by the errors of a forced technique or device
// that cannot run a problem (a bitmap over a huge universe, no GPU), and of
// a problem no technique can run within the memory budget.
var ErrCannotRun = engine.ErrCannotRun

// ErrOverBudget is wrapped, beside ErrCannotRun, by the error of a problem
// that a technique could run within a larger Options.Memory: the remedy is
// to raise the budget, not to ask for another technique.
var ErrOverBudget = engine.ErrOverBudget

// ErrUnavailable is wrapped, beside ErrCannotRun, by the error of a plan
// whose only techniques run on a device this machine lacks (Device "gpu"
// without a GPU or its driver): nothing about the problem stops them.
var ErrUnavailable = engine.ErrUnavailable

// Techniques returns the names of the techniques, sorted.
func Techniques() []string { return allpairs.Techniques() }

// Plan is a measured problem with the technique and device chosen to run
// it. A plan runs once.
//
// A plan that cannot run is still returned, beside the error, so that its
// Explain can say why each technique cannot run the problem; its Technique
// and Device are then "", its Estimate zero, and Join, Count, Collect and
// Tiles return an error wrapping ErrCannotRun. A nil plan comes only with
// an error found before any technique was weighed: invalid options or
// input, or no technique of the name asked for on the device asked for.
type Plan struct{ pl *allpairs.Plan }

// NewPlan measures r × s (s == nil: the self-join of r) for query q and
// picks the technique and device with the lowest estimated time among those
// that opt allows. When none can run the problem, the error says why for
// each (see Plan).
func NewPlan(r, s *sets.Collection, q Query, opt Options) (*Plan, error) {
	return wrap(allpairs.NewPlan(r, s, q, opt.internal()))
}

// NewTilePlan is NewPlan for dense tiles of at most rows × cols counts.
func NewTilePlan(r, s *sets.Collection, rows, cols int, opt Options) (*Plan, error) {
	return wrap(allpairs.NewTilePlan(r, s, rows, cols, opt.internal()))
}

func wrap(pl *allpairs.Plan, err error) (*Plan, error) {
	if pl == nil {
		return nil, err
	}
	return &Plan{pl}, err
}

// Technique returns the name of the chosen technique ("" for a plan that
// cannot run).
func (p *Plan) Technique() string { return p.pl.Technique() }

// Device returns the kind of device the chosen technique runs on: "cpu" or
// "gpu" ("" for a plan that cannot run).
func (p *Plan) Device() string { return p.pl.DeviceKind() }

// Estimate returns the chosen technique's predicted time and peak memory
// (on its device), which the planner ranked it by.
func (p *Plan) Estimate() (time.Duration, int64) { return p.pl.Estimated() }

// Memory returns the CPU memory the plan is predicted to take at its
// peak, beyond the caller's collections: the sets it prepared (selected,
// renumbered) and the chosen technique's structures (for a technique on a
// GPU, only the former). A caller budgets what else it runs beside the
// plan with it.
func (p *Plan) Memory() int64 { return p.pl.Memory() }

// Stats returns the problem's statistics, as the planner measured them.
func (p *Plan) Stats() Stats { return p.pl.Problem.Stats }

// Prepared returns the time spent selecting, renumbering, measuring and
// estimating, which a run's time does not include.
func (p *Plan) Prepared() time.Duration { return p.pl.Prepare }

// Explain writes the problem's statistics, every candidate's estimate (or
// why it cannot run) and the choice.
func (p *Plan) Explain(w io.Writer) error { return p.pl.Explain(w) }

// Notes returns what the chosen technique reported about its run: where
// its time went (on a GPU, its transfers and kernels), in how many pieces.
// It is empty before the run and for techniques that report nothing.
func (p *Plan) Notes() string { return p.pl.Notes() }

// Join runs the plan, calling fn with batches of pairs from several
// goroutines at once (fn must be safe for that); a batch is only valid
// during the call. An error from fn stops the join and is returned. The
// order of pairs is unspecified.
func (p *Plan) Join(ctx context.Context, fn func([]Pair) error) error { return p.pl.Join(ctx, fn) }

// Count runs the plan and returns the number of qualifying pairs.
func (p *Plan) Count(ctx context.Context) (int64, error) { return p.pl.Count(ctx) }

// Collect runs the plan and returns its pairs sorted by I, then J.
func (p *Plan) Collect(ctx context.Context) ([]Pair, error) { return p.pl.Collect(ctx) }

// Tiles runs a tile plan, calling fn with each tile of the grid, one call
// at a time; t.Counts is reused after fn returns.
func (p *Plan) Tiles(ctx context.Context, fn func(t *Tile) error) error { return p.pl.Tiles(ctx, fn) }

// Join reports every pair of r × s that q asks for (s == nil: the
// self-join of r, pairs I < J), calling fn with batches of pairs as
// Plan.Join does. The plan, if not nil, can Explain.
func Join(ctx context.Context, r, s *sets.Collection, q Query, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return p, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of pairs of r × s that q asks for. The plan, if
// not nil, can Explain.
func Count(ctx context.Context, r, s *sets.Collection, q Query, opt Options) (int64, *Plan, error) {
	opt.CountOnly = true
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return 0, p, err
	}
	n, err := p.Count(ctx)
	return n, p, err
}

// Collect returns the pairs of r × s that q asks for, sorted by I, then J.
func Collect(ctx context.Context, r, s *sets.Collection, q Query, opt Options) ([]Pair, error) {
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return nil, err
	}
	return p.Collect(ctx)
}

// Tiles computes all the counts of r × s (s == nil: the self-join of r) and
// calls fn with each tile of at most rows × cols counts, covering the grid
// of tiles that start at multiples of rows and cols (in a self-join, only
// tiles with a pair above the diagonal), one call at a time. The plan, if
// not nil, can Explain.
func Tiles(ctx context.Context, r, s *sets.Collection, rows, cols int, opt Options, fn func(t *Tile) error) (*Plan, error) {
	p, err := NewTilePlan(r, s, rows, cols, opt)
	if err != nil {
		return p, err
	}
	return p, p.Tiles(ctx, fn)
}
