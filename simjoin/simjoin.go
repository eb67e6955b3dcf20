// Package simjoin finds every pair of similar sets, exactly: in one
// collection (a self-join) or between two (R × S), the pairs whose
// Jaccard, Cosine or Dice similarity reaches a threshold in (0, 1], or
// whose overlap reaches a count.
//
// It runs the filter-verification algorithms that Mann et al. found best
// among the exact ones ("An Empirical Evaluation of Set Similarity Join
// Techniques", PVLDB 2016): AllPairs (prefix and length filters), PPJoin
// (with the positional filter) and GroupJoin (PPJoin over groups of sets
// with equal prefixes), after their preprocessing: elements renumbered by
// increasing frequency, sets sorted by size. Filtering runs on every core;
// verification counts the remaining candidates with package intersect's
// kernels, stopping once the threshold is out of reach. A planner samples
// the filters on the data and picks the fastest; Plan.Explain says why.
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
	sj "github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/sets"
)

// Measure is a set similarity function.
type Measure = sj.Measure

// The measures. For sets r and s with c = |r ∩ s|: Jaccard c / |r ∪ s|,
// Cosine c / sqrt(|r|·|s|), Dice 2c / (|r| + |s|), Overlap c.
const (
	Jaccard = sj.Jaccard
	Cosine  = sj.Cosine
	Dice    = sj.Dice
	Overlap = sj.Overlap
)

// ParseMeasure returns the measure called s: jaccard, cosine, dice or
// overlap, in any case.
func ParseMeasure(s string) (Measure, error) { return sj.ParseMeasure(s) }

// Threshold is an exact threshold Num/Den for a measure: in (0, 1] for
// Jaccard, Cosine and Dice, a positive integer for Overlap. Its method
// Reached decides a pair from its overlap and sizes, exactly.
type Threshold = sj.Threshold

// ParseThreshold reads s exactly for measure m: a decimal ("0.9" is 9/10,
// ".85", "1", "9e-1") or a fraction ("2/3"); for Overlap a positive
// integer. The reduced denominator must be below 2^32.
func ParseThreshold(m Measure, s string) (Threshold, error) { return sj.ParseThreshold(m, s) }

// Pair is one similar pair: I indexes the first collection, J the second
// (or the first again in a self-join, where I < J), both by the sets'
// positions in the caller's collections. Overlap is |r[I] ∩ s[J]|, from
// which, with the sets' sizes, the similarity follows exactly; Similarity
// is its value as a float64 (the overlap itself for Overlap).
type Pair = sj.Pair

// Options configure a plan. Threshold is required; the zero value of the
// others runs on every core, lets the planner choose the technique and the
// device, and reports every pair of sets, equal ones included. Technique
// is a name of Techniques (allpairs, ppjoin, groupjoin, pairjoin) or "auto"; Device
// "cpu", "gpu" or "auto"; Threads the CPU goroutines (0: GOMAXPROCS);
// Distinct makes equal sets count once, as their smallest id (Mann et
// al.'s preprocessing, which their published counts assume); Memory bounds
// a CPU engine's bytes (0: half of the machine's memory); Progress, if
// set, is called now and then, from any goroutine, with the sets probed so
// far and their total; GPUKernel forces the GPU's verification kernel (one
// of GPUKernels, or "auto"). Rows and Cols restrict a run to one tile of
// the pair space (set ids i in Rows, j in Cols; see sets.Range), so that
// the tiles of a grid, run apart (on several machines), give the whole
// run's pairs; in a self-join they must be equal or disjoint.
type Options = sj.Options

// GPUKernels are the kernels Options.GPUKernel may force: "thread" (a
// thread per probing set), "block" (a block per probing set) and "pair"
// (threads cooperating on each candidate pair by Intersect Path).
var GPUKernels = sj.GPUKernels

// ErrCannotRun is wrapped by the errors of a forced technique or device
// that cannot run a problem (such as the GPU where there is none), and of
// a problem no technique can run within the memory budget.
var ErrCannotRun = engine.ErrCannotRun

// Techniques returns the names of the techniques, sorted.
func Techniques() []string { return sj.Techniques() }

// SortPairs sorts pairs by I, then J.
func SortPairs(ps []Pair) { sj.SortPairs(ps) }

// Plan is a prepared problem with the technique and device chosen to run
// it. A plan runs once.
type Plan struct{ pl *sj.Plan }

// NewPlan prepares r × s (s == nil: the self-join of r) and picks the
// technique and device with the lowest estimated time among those that
// opt allows. When none can run the problem, the error says why for each,
// and the plan, if not nil, can still Explain.
func NewPlan(r, s *sets.Collection, opt Options) (*Plan, error) {
	pl, err := sj.NewPlan(r, s, opt)
	if pl == nil {
		return nil, err
	}
	return &Plan{pl}, err
}

// Technique returns the name of the chosen technique.
func (p *Plan) Technique() string { return p.pl.Chosen.Engine.Name() }

// Device returns the kind of device the chosen technique runs on: "cpu" or
// "gpu".
func (p *Plan) Device() string { return p.pl.Chosen.Device.Kind.String() }

// Estimate returns the chosen technique's predicted time and peak memory.
func (p *Plan) Estimate() (time.Duration, int64) {
	e := p.pl.Chosen.Estimate
	return time.Duration(e.Seconds * float64(time.Second)), e.Memory
}

// Prepared returns the time spent preparing the sets and estimating.
func (p *Plan) Prepared() time.Duration { return p.pl.Prepare }

// Explain writes the problem's statistics, every technique's estimate (or
// why it cannot run) and the choice.
func (p *Plan) Explain(w io.Writer) error { return p.pl.Explain(w) }

// Notes returns what the chosen technique reported about its run; it is
// empty before the run and for techniques that report nothing.
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
			errc <- p.pl.Join(ctx, func(b []Pair) error {
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
// pairs I < J), calling fn with batches of pairs as Plan.Join does.
func Join(ctx context.Context, r, s *sets.Collection, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(r, s, opt)
	if err != nil {
		return p, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of similar pairs of r × s.
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
