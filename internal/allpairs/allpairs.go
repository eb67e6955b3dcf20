// Package allpairs is the all-pairs workload's engine room: the problem
// (the kept sets renumbered densely, their document frequencies and
// statistics), the CPU engines (per-pair SIMD merging, scan-count over an
// inverted index, resident and dynamic bitmaps, the bit-packed matrix
// product, MMJoin's split into light and heavy parts, prefix filtering),
// the output machinery the GPU engines share, and the planner that picks
// among every registered engine. The public package allpairs
// (github.com/xsect/xsect/allpairs) is its API.
package allpairs

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"strings"

	"github.com/xsect/xsect/sets"
)

// Pair is one reported pair: I indexes the first collection (r), J the
// second (s, or r again in a self-join, where I < J), both by the sets'
// original positions. Count is |r[I] ∩ s[J]|.
type Pair = sets.Pair

// Ratio is an exact fraction Num/Den, the form in which containment
// thresholds are compared: no rounding ever decides whether a pair is kept.
type Ratio struct{ Num, Den uint64 }

// ParseRatio parses a threshold such as "1", "0.8", "2/3" or "5e-1" exactly.
// It must be in [0, 1], and its reduced numerator and denominator must
// fit in 64 bits.
func ParseRatio(s string) (Ratio, error) {
	var r big.Rat
	if _, ok := r.SetString(strings.TrimSpace(s)); !ok {
		return Ratio{}, fmt.Errorf("allpairs: %q is not a number", s)
	}
	if r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		return Ratio{}, fmt.Errorf("allpairs: threshold %q is not in [0, 1]", s)
	}
	if !r.Num().IsUint64() || !r.Denom().IsUint64() {
		return Ratio{}, fmt.Errorf("allpairs: threshold %q has too many digits", s)
	}
	return Ratio{r.Num().Uint64(), r.Denom().Uint64()}, nil
}

// Float returns the ratio as a float64 (NaN for a zero denominator).
func (r Ratio) Float() float64 {
	if r.Den == 0 {
		return math.NaN()
	}
	return float64(r.Num) / float64(r.Den)
}

// String formats the ratio as Num/Den.
func (r Ratio) String() string { return fmt.Sprintf("%d/%d", r.Num, r.Den) }

// Query says which pairs a join reports.
type Query struct {
	// MinOverlap keeps pairs with |Si ∩ Sj| >= MinOverlap; 0 keeps every
	// pair, including disjoint ones.
	MinOverlap int
	// Containment, when its Den is not zero, makes the join a set
	// containment join: empty sets are ignored, and a pair is kept when its
	// degree of containment |Si ∩ Sj| / min(|Si|, |Sj|) is at least
	// Num/Den (and its overlap at least MinOverlap). {1, 1} asks for exact
	// containment of one set in the other.
	Containment Ratio
}

// IsContainment reports whether q is a containment join.
func (q Query) IsContainment() bool { return q.Containment.Den != 0 }

func (q Query) validate() error {
	if q.MinOverlap < 0 {
		return fmt.Errorf("allpairs: negative MinOverlap %d", q.MinOverlap)
	}
	return nil
}

// Options are the options of package allpairs, whose Options documents
// each exported field (allpairs converts its Options to these in one
// place); the unexported ones are switches for tests.
type Options struct {
	Device     string
	Technique  string
	Threads    int
	Largest    int
	Memory     int64
	Progress   func(done, total int64)
	Rows, Cols sets.Range
	GPUs       []int
	CountOnly  bool

	// minParallel, when positive, is the fewest elements a pass spreads
	// over threads (tests lower it to run the parallel code on small
	// inputs).
	minParallel int
	// maxListed, when positive, is the most tiles a pair plan lists and
	// orders by cost (tests lower it to take the tiles band by band).
	maxListed int
	// forceScan, when set, picks the scan-count layout instead of the cost
	// model (tests run every layout with it).
	forceScan func([]scanPlan) scanPlan
	// forceMMJoin, when set, changes the MMJoin optimiser's choice (tests
	// run both layouts of its index part with it).
	forceMMJoin func(*MMJoinSplit)
}

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Join reports every pair of r × s that q asks for, calling fn with batches
// of pairs; s == nil means the self-join of r, with pairs I < J. fn is
// called from several goroutines at once and must be safe for that; a batch
// is only valid during the call. An error from fn stops the join and is
// returned. The order of pairs is unspecified.
func Join(ctx context.Context, r, s *sets.Collection, q Query, opt Options, fn func([]Pair) error) (*Plan, error) {
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return nil, err
	}
	return p, p.Join(ctx, fn)
}

// Count returns the number of pairs of r × s that q asks for (see Join).
func Count(ctx context.Context, r, s *sets.Collection, q Query, opt Options) (int64, *Plan, error) {
	opt.CountOnly = true
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return 0, nil, err
	}
	n, err := p.Count(ctx)
	return n, p, err
}

// Collect returns the pairs of r × s that q asks for, sorted by I then J.
func Collect(ctx context.Context, r, s *sets.Collection, q Query, opt Options) ([]Pair, error) {
	p, err := NewPlan(r, s, q, opt)
	if err != nil {
		return nil, err
	}
	return p.Collect(ctx)
}

// Tile is a dense block of counts: Counts[x*Cols+y] is |r[Row0+x] ∩
// s[Col0+y]|, where rows and columns index the sets the plan kept (all of
// them unless Options.Largest is set), in their original order. RowIDs and
// ColIDs give the original ids of those rows and columns. In a self-join
// only the entries above the diagonal (Row0+x < Col0+y) are counted; the
// others are 0.
type Tile struct {
	Row0, Col0 int
	Rows, Cols int
	Counts     []uint32
	RowIDs     []uint32
	ColIDs     []uint32
}

// At returns the count at row x, column y of the tile.
func (t *Tile) At(x, y int) uint32 { return t.Counts[x*t.Cols+y] }

// Tiles computes all the counts of r × s (s == nil: the self-join of r) and
// calls fn with each tile of at most rows × cols counts, covering the grid
// of tiles that start at multiples of rows and cols; in a self-join, only
// tiles with a pair above the diagonal. Tiles come in any order, one call at
// a time; t.Counts is reused after fn returns.
func Tiles(ctx context.Context, r, s *sets.Collection, rows, cols int, opt Options, fn func(t *Tile) error) (*Plan, error) {
	p, err := NewTilePlan(r, s, rows, cols, opt)
	if err != nil {
		return nil, err
	}
	return p, p.Tiles(ctx, fn)
}
