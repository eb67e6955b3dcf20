// Package simjoin finds every pair of similar sets, exactly: in one
// collection (a self-join) or between two (R × S), the pairs whose
// Jaccard, Cosine or Dice similarity reaches a threshold in (0, 1], or
// whose overlap reaches a count.
//
// It runs the filter-verification algorithms that Mann et al. found best
// among the exact ones ("An Empirical Evaluation of Set Similarity Join
// Techniques", PVLDB 2016), AllPairs (prefix and length filters), PPJoin
// (with the positional filter) and GroupJoin (PPJoin over groups of sets
// with equal prefixes), and PairJoin, PPJoin that indexes small sets by
// pairs of elements, after Mann et al.'s preprocessing: elements
// renumbered by increasing frequency, sets sorted by size. Filtering runs
// on every core; verification counts the remaining candidates with package
// intersect's kernels, stopping once the threshold is out of reach. A
// planner samples the filters on the data and picks the fastest;
// Plan.Explain says why.
//
// On a machine with an NVIDIA GPU, verification can run there instead
// (Options.Device "gpu", or "auto" where the planner expects it to pay):
// the filters stream their candidate pairs to the device in chunks while
// it verifies earlier ones, with one of the three kernels of Bellas and
// Gounaris ("Speeding-up the Verification Phase of Set Similarity Joins
// in the GPGPU paradigm"), which the planner picks from the data or
// Options.GPUKernel forces.
//
// A threshold is exact: ParseThreshold reads "0.9" as 9/10, and every
// decision at the threshold is made in integer arithmetic, so a pair
// exactly at it is similar (two 19-element sets sharing 18 at Jaccard
// 0.9). Empty sets are similar to nothing.
package simjoin

import (
	"context"
	"io"
	"iter"
	"time"

	"github.com/xsect/xsect/internal/engine"
	_ "github.com/xsect/xsect/internal/gpusimjoin" // the GPU engines
	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/sets"
)

// Measure is a set similarity function.
type Measure = simjoin.Measure

// The measures. For sets r and s with c = |r ∩ s|: Jaccard c / |r ∪ s|,
// Cosine c / sqrt(|r|·|s|), Dice 2c / (|r| + |s|), Overlap c.
const (
	Jaccard = simjoin.Jaccard
	Cosine  = simjoin.Cosine
	Dice    = simjoin.Dice
	Overlap = simjoin.Overlap
)

// ParseMeasure returns the measure called s: jaccard, cosine, dice or
// overlap, in any case.
func ParseMeasure(s string) (Measure, error) { return simjoin.ParseMeasure(s) }

// Threshold is an exact threshold Num/Den for a measure: in (0, 1] for
// Jaccard, Cosine and Dice, a positive integer for Overlap. Its method
// Reached decides a pair from its overlap and sizes, exactly.
type Threshold = simjoin.Threshold

// ParseThreshold reads s exactly for measure m: a decimal ("0.9" is 9/10,
// ".85", "1", "9e-1") or a fraction ("2/3"); for Overlap a positive
// integer. The reduced denominator must be below 2^32.
func ParseThreshold(m Measure, s string) (Threshold, error) { return simjoin.ParseThreshold(m, s) }

// Pair is one similar pair: I indexes the first collection, J the second
// (or the first again in a self-join, where I < J), both by the sets'
// positions in the caller's collections. Overlap is |r[I] ∩ s[J]|, from
// which, with the sets' sizes, the similarity follows exactly; Similarity
// is its value as a float64 (the overlap itself for Overlap).
type Pair = simjoin.Pair

// Options configure a plan. Threshold is required; the zero value of the
// others runs on every core within half of the machine's memory, lets the
// planner choose the technique and the device, and reports every pair of
// sets, equal ones included.
type Options struct {
	// Threshold is the measure and the threshold a pair must reach
	// (ParseThreshold reads it). It has no default: the zero Threshold is
	// an error.
	Threshold Threshold
	// Technique forces one technique, a name of Techniques (allpairs,
	// groupjoin, pairjoin or ppjoin, whose candidates a GPU may verify),
	// rather than the fastest estimate. The default value is "auto" (also
	// written "").
	Technique string
	// Device is where the planner may verify candidates: "cpu", "gpu" (an
	// error wrapping ErrUnavailable where there is none) or "auto", which
	// takes a GPU only where one is present and its technique's estimate,
	// its start-up included, beats the CPU's. The default value is "auto"
	// (also written "").
	Device string
	// Threads is the number of CPU goroutines a plan runs on. The default
	// value, 0, means runtime.GOMAXPROCS(0).
	Threads int
	// Distinct makes equal sets count once, as their smallest id: Mann et
	// al.'s preprocessing, which their published counts assume. The
	// default value, false, reports every pair of equal sets.
	Distinct bool
	// Memory bounds the bytes the prepared records and a CPU technique's
	// structures take together: a technique predicted to need more
	// cannot run (ErrOverBudget). The default value, 0, means half of the
	// machine's physical memory.
	Memory int64
	// Progress, if set, is called now and then, from any goroutine, with
	// the sets probed so far and their total, for a progress bar. The
	// default value, nil, reports nothing.
	Progress func(done, total int64)
	// Rows and Cols, when not the zero Range, restrict the run to one tile
	// of the pair space: the pairs (i, j) with the set id i in Rows and j
	// in Cols (see sets.Range), exactly as the whole run reports them, so
	// that the tiles of a grid, run apart (on several machines), give the
	// whole run's pairs. In a self-join they must be equal (the tile's
	// own self-join) or disjoint (rows before columns: an R × S join;
	// after: no pair). The default value, the zero Range for both, runs
	// the whole pair space.
	Rows, Cols sets.Range
	// GPUKernel forces the kernel that verifies candidates on a GPU, one
	// of GPUKernels, rather than the planner's choice from the data; CPU
	// techniques ignore it. The default value is "auto" (also written
	// "").
	GPUKernel string
	// GPUs are the GPUs, by ordinal, that a GPU technique spreads its work
	// over; an ordinal listed twice gets two owners on that GPU, which
	// gains nothing but runs the splitting on one GPU. gpu.ParseGPUs reads
	// the forms of xsect's --gpus flag. The default value, nil, means
	// every GPU of the host.
	GPUs []int
}

// internal is the one place where opt becomes the internal planner's
// options.
func (opt Options) internal() simjoin.Options {
	return simjoin.Options{
		Threshold: opt.Threshold,
		Technique: opt.Technique,
		Device:    opt.Device,
		Threads:   opt.Threads,
		Distinct:  opt.Distinct,
		Memory:    opt.Memory,
		Progress:  opt.Progress,
		Rows:      opt.Rows,
		Cols:      opt.Cols,
		GPUKernel: opt.GPUKernel,
		GPUs:      opt.GPUs,
	}
}

// GPUKernels are the kernels Options.GPUKernel may force: "thread" (a
// thread per probing set), "block" (a block per probing set) and "pair"
// (threads cooperating on each candidate pair by Intersect Path).
var GPUKernels = simjoin.GPUKernels

// ErrCannotRun is wrapped by the errors of a forced technique or device
// that cannot run a problem (such as the GPU where there is none), and of
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

// Stats describes a problem as the planner prepared it: each side's sets,
// empty sets, distinct records and sizes, the universe and the largest
// element frequency.
type Stats = simjoin.Stats

// SideStats describes one prepared collection (see Stats).
type SideStats = simjoin.SideStats

// Techniques returns the names of the techniques, sorted.
func Techniques() []string { return simjoin.Techniques() }

// SortPairs sorts pairs by I, then J.
func SortPairs(ps []Pair) { simjoin.SortPairs(ps) }

// Plan is a prepared problem with the technique and device chosen to run
// it. A plan runs once.
//
// A plan that cannot run is still returned, beside the error, so that its
// Explain can say why each technique cannot run the problem; its Technique
// and Device are then "", its Estimate zero, and Join, Count, Collect and
// Pairs return an error wrapping ErrCannotRun. A nil plan comes only with an
// error found before any technique was weighed: invalid options or input, or
// no technique of the name asked for on the device asked for.
type Plan struct{ pl *simjoin.Plan }

// NewPlan prepares r × s (s == nil: the self-join of r) and picks the
// technique and device with the lowest estimated time among those that
// opt allows. When none can run the problem, the error says why for each
// (see Plan).
func NewPlan(r, s *sets.Collection, opt Options) (*Plan, error) {
	pl, err := simjoin.NewPlan(r, s, opt.internal())
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
// peak, beyond the caller's collections: the records it prepared and the
// chosen technique's structures (for a technique on a GPU, only the
// former). A caller budgets what else it runs beside the plan with it.
func (p *Plan) Memory() int64 { return p.pl.Memory() }

// Stats returns the problem's statistics, as the planner prepared them.
func (p *Plan) Stats() Stats { return p.pl.Problem.Stats }

// Prepared returns the time spent preparing the sets and estimating,
// which a run's time does not include.
func (p *Plan) Prepared() time.Duration { return p.pl.Prepare }

// Explain writes the problem's statistics, every technique's estimate (or
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

// Count runs the plan and returns the number of similar pairs, without
// computing their overlaps where the filters alone decide.
func (p *Plan) Count(ctx context.Context) (int64, error) { return p.pl.Count(ctx) }

// Collect runs the plan and returns its pairs sorted by I, then J.
func (p *Plan) Collect(ctx context.Context) ([]Pair, error) { return p.pl.Collect(ctx) }

// Pairs runs the plan and yields its pairs one at a time, in no particular
// order, on the caller's goroutine; the join runs on others meanwhile.
// Breaking out of the loop stops the join. An error ends the sequence: it
// is yielded with a zero Pair.
func (p *Plan) Pairs(ctx context.Context) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		batches := make(chan []Pair, 4)
		errc := make(chan error, 1)
		go func() {
			errc <- p.Join(ctx, func(b []Pair) error {
				c := append([]Pair(nil), b...)
				select {
				case batches <- c:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			close(batches)
		}()
		for b := range batches {
			for _, pr := range b {
				if !yield(pr, nil) {
					cancel()
					for range batches {
					}
					<-errc
					return
				}
			}
		}
		if err := <-errc; err != nil {
			yield(Pair{}, err)
		}
	}
}

// Join reports every similar pair of r × s (s == nil: the self-join of r,
// pairs I < J), calling fn with batches of pairs as Plan.Join does. The
// plan, if not nil, can Explain.
func Join(ctx context.Context, r, s *sets.Collection, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(r, s, opt)
	if err != nil {
		return p, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of similar pairs of r × s. The plan, if not
// nil, can Explain.
func Count(ctx context.Context, r, s *sets.Collection, opt Options) (int64, *Plan, error) {
	p, err := NewPlan(r, s, opt)
	if err != nil {
		return 0, p, err
	}
	n, err := p.Count(ctx)
	return n, p, err
}

// Collect returns the similar pairs of r × s, sorted by I, then J.
func Collect(ctx context.Context, r, s *sets.Collection, opt Options) ([]Pair, error) {
	p, err := NewPlan(r, s, opt)
	if err != nil {
		return nil, err
	}
	return p.Collect(ctx)
}
