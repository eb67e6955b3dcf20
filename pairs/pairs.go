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

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/freqpairs"
	"github.com/xsect/xsect/sets"

	// The GPU engine registers itself; the CUDA libraries are loaded only
	// when a plan runs on the GPU.
	_ "github.com/xsect/xsect/internal/gpubatmap"
)

// Pair is a frequent pair: items I < J (the input's ids) occur together in
// Count transactions.
type Pair = sets.Pair

// Options configure a plan. MinSupport, the absolute support a pair needs
// (at least 1; see ParseSupport for fractions), is required; the zero value
// of the others runs the fastest technique on all cores. Technique is a
// name of Techniques or "auto"; Device "cpu", "gpu" or "auto"; Threads the
// CPU goroutines (0: GOMAXPROCS); Memory bounds the bytes a plan may
// allocate (0: half of the machine's memory); Progress, if set, is called
// with the current stage, the work done in it and its total; CountOnly
// lets engines count pairs without naming them. Rows and Cols restrict a
// run to one tile of the pair space (items a in Rows, b in Cols; see
// sets.Range), so that the tiles of a grid, run apart (on several
// machines), give the whole run's pairs.
type Options = freqpairs.Options

// ErrCannotRun is wrapped by the errors of techniques or devices that
// cannot run a problem: too much memory, no GPU.
var ErrCannotRun = engine.ErrCannotRun

// Techniques returns the names of the techniques, sorted.
func Techniques() []string { return freqpairs.EngineNames() }

// ParseSupport returns the absolute minimum support that s denotes for a
// database of the given number of transactions: an integer count, or a
// fraction of the transactions when below 1 ("0.001", "1e-4", or with a
// percent sign "0.1%"), rounded up, evaluated exactly.
func ParseSupport(s string, transactions int) (int, error) {
	return freqpairs.ParseSupport(s, transactions)
}

// GenerateBernoulli returns n transactions over occurrences/(n·p)-ish items
// in which each item occurs in each transaction with probability p, as in
// the BATMAP paper's synthetic experiments (deterministic for a seed).
func GenerateBernoulli(n int, p float64, occurrences int64, seed uint64) (*sets.Collection, error) {
	return freqpairs.GenerateBernoulli(n, p, occurrences, seed)
}

// Plan is prepared data with the technique and device chosen to mine it.
// A plan runs once.
type Plan struct{ p *freqpairs.Plan }

// NewPlan prepares tx (each set a transaction, its elements the items) for
// mining with opt: it counts supports, drops infrequent items, builds the
// tidlists of the frequent ones, and picks the technique. When none can
// run, the error says why for each.
func NewPlan(tx *sets.Collection, opt Options) (*Plan, error) {
	p, err := freqpairs.NewPlan(tx, opt)
	if err != nil {
		return nil, err
	}
	return &Plan{p}, nil
}

// Notes returns what the chosen technique reported about its run: where
// its time went (on a GPU, its transfers and kernels), in how many pieces.
// It is empty before the run and for techniques that report nothing.
func (p *Plan) Notes() string { return p.p.Notes() }

// Memory returns the CPU memory the plan is predicted to take at its
// peak, beyond the caller's transactions: the prepared data (supports,
// ranks, transaction lengths, tidlists) and the chosen technique's
// structures (for a technique on a GPU, only the former).
func (p *Plan) Memory() int64 { return p.p.Memory() }

// Technique returns the name of the chosen technique.
func (p *Plan) Technique() string { return p.p.Engine.Name() }

// Device returns the kind of device the chosen technique runs on: "cpu" or
// "gpu".
func (p *Plan) Device() string { return p.p.Engine.Kind().String() }

// Explain writes the data's shape, every technique's estimate (or why it
// cannot run) and the choice.
func (p *Plan) Explain(w io.Writer) error {
	_, err := io.WriteString(w, p.p.Explain())
	return err
}

// Join mines the pairs and calls fn with batches of them, from several
// goroutines at once (fn must be safe for that); a batch is only valid
// during the call. An error from fn stops the run and is returned. Pairs
// come in no particular order.
func (p *Plan) Join(ctx context.Context, fn func([]Pair) error) error {
	_, err := p.p.Run(ctx, fn)
	return err
}

// Count mines the pairs and returns their number.
func (p *Plan) Count(ctx context.Context) (int64, error) {
	return p.p.Run(ctx, func([]Pair) error { return nil })
}

// Collect mines the pairs and returns them sorted by I, then J.
func (p *Plan) Collect(ctx context.Context) ([]Pair, error) { return p.p.Collect(ctx) }

// Join is NewPlan followed by Plan.Join.
func Join(ctx context.Context, tx *sets.Collection, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(tx, opt)
	if err != nil {
		return nil, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of frequent pairs of tx; engines that can count
// without naming the pairs do so.
func Count(ctx context.Context, tx *sets.Collection, opt Options) (int64, *Plan, error) {
	opt.CountOnly = true
	p, err := NewPlan(tx, opt)
	if err != nil {
		return 0, nil, err
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
