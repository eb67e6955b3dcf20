// Package pairs mines frequent pairs: given transactions (sets of items)
// and a minimum support s, it reports every pair of items {a, b} that
// occurs together in at least s transactions, with its support.
//
// Several techniques compute the same pairs, on the CPU and on a GPU:
// BATMAP (Amossen and Pagh: one batmap per frequent item, all pairs
// compared entry by entry), a bit-packed matrix product of the items'
// transaction bitmaps, and the classic miners: Apriori-style counting in a
// triangular array, Eclat (tidlist intersections with package intersect's
// SIMD kernels) and FP-growth restricted to pairs. Infrequent items are
// removed first, as every miner does. NewPlan prepares the data, predicts
// each technique's time and memory from the data's shape, and picks the
// fastest that fits; Plan.Explain says why. Without a GPU everything runs
// on the CPU.
package pairs

import (
	"context"
	"io"
	"time"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/pairs"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"

	// The GPU engine registers itself; the CUDA libraries are loaded only
	// when a plan runs on the GPU.
	_ "github.com/xsect/xsect/internal/gpubatmap"
)

// Pair is a frequent pair: items I < J (the input's ids) occur together in
// Count transactions.
type Pair = sets.Pair

// Options configure a plan. MinSupport is required; the zero value of
// the others runs the fastest technique on every core within half of the
// machine's memory.
type Options struct {
	// MinSupport is the number of transactions a pair must occur in to be
	// reported, at least 1; ParseSupport turns a fraction of the
	// transactions into it. It has no default: 0 is an error.
	MinSupport int
	// Technique forces one technique, a name of Techniques, rather than
	// the fastest estimate. The default value is "auto" (also written
	// "").
	Technique string
	// Device is where the planner may mine: "cpu", "gpu" (an error
	// wrapping ErrUnavailable where there is none) or "auto", which takes
	// the GPU only where one is present and its estimate beats the CPU's.
	// The default value is "auto" (also written "").
	Device string
	// Threads is the number of CPU goroutines a plan runs on. The default
	// value, 0, means runtime.GOMAXPROCS(0).
	Threads int
	// Memory bounds the bytes a plan may allocate on the CPU: the prepared
	// data and a CPU technique's structures; a technique predicted to need
	// more cannot run (ErrOverBudget). The default value, 0, means half of
	// the machine's physical memory.
	Memory int64
	// Progress, if set, is called now and then, from any goroutine, with
	// the current stage ("supports", "estimates", "run" for the
	// technique's set-up, "batmaps", "pairs", ...), the work done in it
	// and its total, for a progress bar. The default value, nil, reports
	// nothing.
	Progress func(stage string, done, total int64)
	// CountOnly says that the caller wants only the number of pairs
	// (Plan.Count), so that techniques that can count without naming the
	// pairs do; Join then gets fewer pairs, or none. Count sets it. The
	// default value is false.
	CountOnly bool
	// Rows and Cols, when not the zero Range, restrict the run to one tile
	// of the pair space: the frequent pairs of items a < b with a in Rows
	// and b in Cols (item ids; see sets.Range), exactly as the whole run
	// reports them, so that the tiles of a grid, run apart (on several
	// machines), give the whole run's pairs. The default value, the zero
	// Range for both, mines every pair.
	Rows, Cols sets.Range
	// GPUs are the GPUs, by ordinal, that a GPU technique spreads its
	// batches over; an ordinal listed twice gets two owners on that GPU,
	// which gains nothing but runs the splitting on one GPU. gpu.ParseGPUs
	// reads the forms of xsect's --gpus flag. The default value, nil,
	// means every GPU of the host where that pays: the planner weighs
	// the first GPU alone against all of them, the others' start
	// included, and Explain says which it took.
	GPUs []int
}

// internal is the one place where opt becomes the internal miner's
// options.
func (opt Options) internal() pairs.Options {
	return pairs.Options{
		MinSupport: opt.MinSupport,
		Technique:  opt.Technique,
		Device:     opt.Device,
		Threads:    opt.Threads,
		Memory:     opt.Memory,
		Progress:   opt.Progress,
		CountOnly:  opt.CountOnly,
		Rows:       opt.Rows,
		Cols:       opt.Cols,
		GPUs:       opt.GPUs,
	}
}

// ErrCannotRun is wrapped by the errors of techniques or devices that
// cannot run a problem: too much memory, no GPU.
var ErrCannotRun = engine.ErrCannotRun

// ErrOverBudget is wrapped, beside ErrCannotRun, by the error of a problem
// that a technique could mine within a larger Options.Memory: the remedy
// is to raise the budget, not to ask for another technique.
var ErrOverBudget = engine.ErrOverBudget

// ErrUnavailable is wrapped, beside ErrCannotRun, by the error of a plan
// whose only techniques run on a device this machine lacks (Device "gpu"
// without a GPU or its driver): nothing about the problem stops them.
var ErrUnavailable = engine.ErrUnavailable

// Techniques returns the names of the techniques, sorted.
func Techniques() []string { return pairs.EngineNames() }

// ParseSupport returns the absolute minimum support that s denotes for a
// database of the given number of transactions: an integer count, or a
// fraction of the transactions when below 1 ("0.001", "1e-4", or with a
// percent sign "0.1%"), rounded up, evaluated exactly.
func ParseSupport(s string, transactions int) (int, error) {
	return pairs.ParseSupport(s, transactions)
}

// GenerateBernoulli returns the BATMAP paper's synthetic transactions.
//
// Deprecated: use synth.GenerateBernoulli.
func GenerateBernoulli(n int, p float64, occurrences int64, seed uint64) (*sets.Collection, error) {
	return synth.GenerateBernoulli(n, p, occurrences, seed)
}

// Plan is prepared data with the technique and device chosen to mine it.
// A plan runs once.
//
// A plan that cannot run is still returned, beside the error, so that its
// Explain can say why each technique cannot mine the data; its Technique and
// Device are then "", its Estimate zero, and Join, Count and Collect return
// an error wrapping ErrCannotRun. A nil plan comes only with an error found
// before the techniques were weighed: invalid options or input, or data
// whose preparation alone exceeds Options.Memory.
type Plan struct {
	p        *pairs.Plan
	prepared time.Duration
	err      error // why the plan cannot run; nil if it can
}

// NewPlan prepares tx (each set a transaction, its elements the items) for
// mining with opt: it counts supports, drops infrequent items, builds the
// tidlists of the frequent ones, and picks the technique. When none can
// run, the error says why for each (see Plan).
func NewPlan(tx *sets.Collection, opt Options) (*Plan, error) {
	start := time.Now()
	p, err := pairs.NewPlan(tx, opt.internal())
	if p == nil {
		return nil, err
	}
	return &Plan{p, time.Since(start), err}, err
}

// Technique returns the name of the chosen technique ("" for a plan that
// cannot run).
func (p *Plan) Technique() string {
	if p.err != nil {
		return ""
	}
	return p.p.Engine.Name()
}

// Device returns the kind of device the chosen technique runs on: "cpu" or
// "gpu" ("" for a plan that cannot run).
func (p *Plan) Device() string {
	if p.err != nil {
		return ""
	}
	return p.p.Engine.Kind().String()
}

// Estimate returns the chosen technique's predicted time and peak memory
// (on its device), which the planner ranked it by.
func (p *Plan) Estimate() (time.Duration, int64) {
	if p.err != nil {
		return 0, 0
	}
	e := p.p.Candidates[0].Estimate // ranked: the chosen one first
	return e.Duration(), e.Memory
}

// Memory returns the CPU memory the plan is predicted to take at its
// peak, beyond the caller's transactions: the prepared data (supports,
// ranks, transaction lengths, tidlists) and the chosen technique's
// structures (for a technique on a GPU, only the former). A caller budgets
// what else it runs beside the plan with it.
func (p *Plan) Memory() int64 { return p.p.Memory() }

// Prepared returns the time spent counting supports, preparing the data
// and estimating, which a run's time does not include.
func (p *Plan) Prepared() time.Duration { return p.prepared }

// Explain writes the data's shape, every technique's estimate (or why it
// cannot run) and the choice.
func (p *Plan) Explain(w io.Writer) error {
	_, err := io.WriteString(w, p.p.Explain())
	return err
}

// Notes returns what the chosen technique reported about its run: where
// its time went (on a GPU, its transfers and kernels), in how many pieces.
// It is empty before the run and for techniques that report nothing.
func (p *Plan) Notes() string { return p.p.Notes() }

// run mines the pairs into fn, or returns why the plan cannot.
func (p *Plan) run(ctx context.Context, fn func([]Pair) error) (int64, error) {
	if p.err != nil {
		return 0, p.err
	}
	return p.p.Run(ctx, fn)
}

// Join mines the pairs and calls fn with batches of them, from several
// goroutines at once (fn must be safe for that); a batch is only valid
// during the call. An error from fn stops the run and is returned. Pairs
// come in no particular order.
func (p *Plan) Join(ctx context.Context, fn func([]Pair) error) error {
	_, err := p.run(ctx, fn)
	return err
}

// Count mines the pairs and returns their number.
func (p *Plan) Count(ctx context.Context) (int64, error) {
	return p.run(ctx, func([]Pair) error { return nil })
}

// Collect mines the pairs and returns them sorted by I, then J.
func (p *Plan) Collect(ctx context.Context) ([]Pair, error) {
	if p.err != nil {
		return nil, p.err
	}
	return p.p.Collect(ctx)
}

// Join is NewPlan followed by Plan.Join. The plan, if not nil, can
// Explain.
func Join(ctx context.Context, tx *sets.Collection, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(tx, opt)
	if err != nil {
		return p, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of frequent pairs of tx; techniques that can
// count without naming the pairs do so. The plan, if not nil, can
// Explain.
func Count(ctx context.Context, tx *sets.Collection, opt Options) (int64, *Plan, error) {
	opt.CountOnly = true
	p, err := NewPlan(tx, opt)
	if err != nil {
		return 0, p, err
	}
	n, err := p.Count(ctx)
	return n, p, err
}

// Collect returns the frequent pairs of tx sorted by I, then J.
func Collect(ctx context.Context, tx *sets.Collection, opt Options) ([]Pair, error) {
	p, err := NewPlan(tx, opt)
	if err != nil {
		return nil, err
	}
	return p.Collect(ctx)
}
