package allpairs

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
)

// Problem is what engines work on: the sets a plan kept, with their
// elements renumbered densely, and the threshold each pair must reach.
// Engines treat it as read-only.
type Problem struct {
	// R and S hold the kept sets, in their original order, with elements
	// in [0, Universe): the caller's values when they are dense enough,
	// otherwise their ranks among the distinct values of R and S (which
	// keeps sets strictly increasing and intersection sizes unchanged).
	// S == R in a self-join. They may alias the caller's collections.
	R, S *sets.Collection
	// Self reports a self-join: only pairs i < j count.
	Self bool
	// Universe bounds the elements: arrays indexed by element need this
	// many entries. Stats.Universe counts the distinct elements.
	Universe int
	// DFR[e] is the number of sets of R holding element e (its document
	// frequency); DFS the same for S (DFS aliases DFR in a self-join).
	DFR, DFS []uint32
	// RIDs and SIDs map the positions in R and S to the caller's set ids.
	RIDs, SIDs []uint32
	// Query is the caller's query (its zero value for tile plans).
	Query Query
	// Stats describes the problem; the planner's estimates come from it.
	Stats Stats
	// Threads is the number of CPU worker goroutines to use.
	Threads int
	// Memory is the CPU memory budget in bytes: the problem's Bytes and
	// an engine's structures.
	Memory int64
	// Bytes is the memory the problem holds beyond the caller's
	// collections: ids, renumbered sets, document frequencies.
	Bytes int64
	// GPUs are the GPUs GPU engines may use (Options.GPUs; nil: all).
	GPUs []int
	// CountOnly says the caller will only count the pairs
	// (Options.CountOnly): estimates may leave out their output.
	CountOnly bool

	tileRows, tileCols int                       // the caller's tile grid; 0 for pair plans
	minParallel        int                       // Options.minParallel, or its default
	maxListed          int                       // Options.maxListed, or maxListedTiles
	forceScan          func([]scanPlan) scanPlan // Options.forceScan
	forceMMJoin        func(*MMJoinSplit)        // Options.forceMMJoin
	needR, needS       []uint32
	need               uint32 // the threshold when needR is nil
	zero               bool   // some pair qualifies with overlap 0

	memos engine.Memos
}

// Memo returns the value that build returns for key, calling build once per
// problem: an engine's Estimate and Run share their analysis this way
// (engines of other packages should prefix their keys with their package).
func (p *Problem) Memo(key string, build func() any) any {
	return p.memos.Get(key, build)
}

// spread is how the problem's passes over elements may spread over threads.
func (p *Problem) spread() spread { return spread{p.Threads, p.minParallel} }

// Pairs returns the number of pairs the problem covers.
func (p *Problem) Pairs() int64 { return p.Stats.Pairs }

// Tiled reports whether the caller asked for dense tiles, and their shape.
func (p *Problem) Tiled() (rows, cols int, ok bool) {
	return p.tileRows, p.tileCols, p.tileRows > 0
}

// Need returns the overlap that pair (i, j) must reach to be reported.
// It is min(NeedR(i), NeedS(j)): thresholds grow with the size of the
// smaller set.
func (p *Problem) Need(i, j int) uint32 {
	if p.needR == nil {
		return p.need
	}
	return min(p.needR[i], p.needS[j])
}

// NeedR returns the overlap that r[i] needs when it is the smaller set of a
// pair (for MinOverlap queries, the same for every set).
func (p *Problem) NeedR(i int) uint32 {
	if p.needR == nil {
		return p.need
	}
	return p.needR[i]
}

// NeedS is NeedR for s[j].
func (p *Problem) NeedS(j int) uint32 {
	if p.needS == nil {
		return p.need
	}
	return p.needS[j]
}

// ConstNeed returns the threshold and true when it is the same for every
// pair (MinOverlap queries).
func (p *Problem) ConstNeed() (uint32, bool) { return p.need, p.needR == nil }

// ZeroQualifies reports whether a pair with no common element can be
// reported (MinOverlap 0, or containment degree 0): engines that only see
// pairs with a common element must then visit every pair.
func (p *Problem) ZeroQualifies() bool { return p.zero }

// needFor returns the least integer c with c >= minOverlap and
// c·den >= num·size, computed exactly.
func needFor(q Query, size int) uint32 {
	n := uint64(q.MinOverlap)
	if q.IsContainment() {
		num, den := q.Containment.Num, q.Containment.Den
		var c uint64
		if num > den {
			c = uint64(size) + 1 // a degree above 1 is never reached
		} else {
			hi, lo := bits.Mul64(num, uint64(size))
			quo, rem := bits.Div64(hi, lo, den) // hi < den since size < 2^32
			c = quo
			if rem != 0 {
				c++
			}
		}
		n = max(n, c)
	}
	return uint32(min(n, math.MaxUint32))
}

// Stats describes a problem: the planner's input.
type Stats struct {
	R, S     SideStats // S equals R in a self-join
	Universe int       // distinct elements
	// Density is the average set size over the universe.
	Density float64
	// Skew is the largest set over the average set size.
	Skew float64
	// MaxDF is the largest document frequency of an element.
	MaxDF int
	// Pairs is the number of pairs: k(k-1)/2, or |R|·|S|.
	Pairs int64
	// ScanWork is the number of counter increments of scan-count: the sum
	// over elements of C(df, 2), or of dfR·dfS.
	ScanWork int64
	// MergeWork is the number of element steps of merging every pair, with
	// galloping for very different sizes.
	MergeWork float64
	// ProbeWork is the number of elements that a dynamic bitmap probes: for
	// each pair, the size of the set that is not in the bitmap.
	ProbeWork float64
}

// SideStats describes one collection of a problem.
type SideStats struct {
	Sets     int
	Elements int64
	MinSize  int
	MaxSize  int
	AvgSize  float64
	Dropped  int // sets the plan left out (empty sets of a containment join, Largest)
	Original int // sets in the caller's collection
}

// newProblem selects, renumbers and measures the sets.
func newProblem(r, s *sets.Collection, q Query, opt Options, tileRows, tileCols int) (*Problem, error) {
	if r == nil {
		return nil, fmt.Errorf("allpairs: nil collection")
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	if opt.Largest < 0 {
		return nil, fmt.Errorf("allpairs: negative Largest %d", opt.Largest)
	}
	p := &Problem{Self: s == nil, Query: q, Threads: opt.threads(), GPUs: opt.GPUs, CountOnly: opt.CountOnly && tileRows == 0, tileRows: tileRows, tileCols: tileCols, minParallel: opt.minParallel}
	if p.minParallel <= 0 {
		p.minParallel = minParallel
	}
	p.maxListed = opt.maxListed
	p.forceScan, p.forceMMJoin = opt.forceScan, opt.forceMMJoin
	if p.maxListed <= 0 {
		p.maxListed = maxListedTiles
	}
	p.Memory = opt.Memory
	if p.Memory <= 0 {
		p.Memory = sysinfo.Memory() / 2
	}
	dropEmpty := q.IsContainment()
	p.RIDs = selectSets(r, dropEmpty, opt.Largest)
	if p.Self {
		p.SIDs = p.RIDs
	} else {
		p.SIDs = selectSets(s, dropEmpty, opt.Largest)
	}
	s, err := p.restrict(r, s, opt.Rows, opt.Cols)
	if err != nil {
		return nil, err
	}
	var cp compacted
	if p.Self {
		cp = compactPair(p.spread(), r, p.RIDs, nil, nil)
		cp.s, cp.dfs = cp.r, cp.dfr
	} else {
		cp = compactPair(p.spread(), r, p.RIDs, s, p.SIDs)
	}
	p.R, p.S, p.DFR, p.DFS, p.Universe = cp.r, cp.s, cp.dfr, cp.dfs, cp.universe
	if p.DFR == nil { // no elements at all
		p.DFR, p.DFS = []uint32{}, []uint32{}
	}
	p.setNeeds()
	p.measure(r, s, cp.dfSummary)
	p.Bytes = p.heldBytes(r, s)
	return p, nil
}

// memoryLeft is the budget that the problem's own arrays leave to an
// engine.
func (p *Problem) memoryLeft() int64 { return max(p.Memory-p.Bytes, 1) }

// heldBytes is the memory of the problem's arrays, those of r and s
// excepted where it uses them as they are.
func (p *Problem) heldBytes(r, s *sets.Collection) int64 {
	n := 4 * int64(cap(p.RIDs)+cap(p.DFR)+cap(p.needR))
	if !own(p.R, r) {
		n += collectionBytes(p.R)
	}
	if !p.Self {
		n += 4 * int64(cap(p.SIDs)+cap(p.DFS)+cap(p.needS))
		if !own(p.S, s) {
			n += collectionBytes(p.S)
		}
	}
	return n
}

// own reports whether c is the caller's collection, or shares its
// elements.
func own(c, caller *sets.Collection) bool {
	return c == caller || len(c.Elements) > 0 && caller != nil && len(caller.Elements) > 0 &&
		unsafe.SliceData(c.Elements) == unsafe.SliceData(caller.Elements)
}

// collectionBytes is the memory of c's arrays.
func collectionBytes(c *sets.Collection) int64 {
	return 8*int64(cap(c.Offsets)) + 4*int64(cap(c.Elements))
}

// selectSets returns the ids of the sets to keep, in increasing order: with
// largest > 0, the largest sets, ties going to the lower id (what a stable
// sort by decreasing size would keep). Rather than sorting every id, it
// finds the size t of the last set kept and takes, in id order, the sets
// over t and the first sets of size t.
func selectSets(c *sets.Collection, dropEmpty bool, largest int) []uint32 {
	k := c.Len()
	off := c.Offsets[:k+1]
	kept := k
	// The histogram of the sizes' bit lengths, counting empty sets too.
	var hist [65]int
	for i := 0; i < k; i++ {
		hist[bits.Len64(off[i+1]-off[i])]++
	}
	if dropEmpty {
		kept -= hist[0]
	}
	if largest <= 0 || largest >= kept {
		ids := make([]uint32, 0, kept)
		for i := 0; i < k; i++ {
			if !dropEmpty || off[i+1] != off[i] {
				ids = append(ids, uint32(i))
			}
		}
		return ids
	}
	// The bit length of t: the bucket where the count of sets at least
	// that large reaches largest. Empty sets, when dropped, are never
	// needed: kept > largest non-empty sets exist.
	b, above := 64, 0
	for above+hist[b] < largest {
		above += hist[b]
		b--
	}
	in := make([]int, 0, hist[b])
	for i := 0; i < k; i++ {
		if n := off[i+1] - off[i]; bits.Len64(n) == b {
			in = append(in, int(n))
		}
	}
	// t is the (largest-above)-th largest size of the bucket; the sets
	// over t are kept, and the first ties of size t fill up to largest.
	t := NthLargest(in, largest-above)
	ties := largest - above
	for _, n := range in {
		if n > t {
			ties--
		}
	}
	ids := make([]uint32, 0, largest)
	for i := 0; i < k; i++ {
		n := int(off[i+1] - off[i])
		if n > t || n == t && ties > 0 {
			if n == t {
				ties--
			}
			ids = append(ids, uint32(i))
		}
	}
	return ids
}

// NthLargest returns the r-th largest value of a (1 <= r <= len(a)),
// reordering a: quickselect with a median-of-three pivot, which orders of
// the sizes exist to drive quadratic; after as many partitions that keep
// over 3/4 of the range as the length has bits, the rest is sorted
// (introselect), so it is O(n log n) whatever the order.
func NthLargest(a []int, r int) int {
	r-- // the index in decreasing order
	lo, hi := 0, len(a)-1
	for bad := bits.Len(uint(len(a))); lo < hi; {
		if bad == 0 {
			slices.SortFunc(a[lo:hi+1], func(x, y int) int { return cmp.Compare(y, x) })
			return a[r]
		}
		before := hi - lo + 1
		m := lo + (hi-lo)/2
		// Median of three, as the pivot.
		x, y, z := a[lo], a[m], a[hi]
		if x < y {
			x, y = y, x
		}
		if y < z {
			y = z
			if x < y {
				y = x
			}
		}
		pivot := y
		// Three-way partition, decreasing: > pivot, == pivot, < pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case a[i] > pivot:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case a[i] < pivot:
				a[i], a[gt] = a[gt], a[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case r < lt:
			hi = lt - 1
		case r > gt:
			lo = gt + 1
		default:
			return pivot
		}
		if 4*(hi-lo+1) > 3*before {
			bad--
		}
	}
	return a[r]
}

func (p *Problem) setNeeds() {
	q := p.Query
	if p.tileRows > 0 {
		return // tiles carry every count
	}
	if !q.IsContainment() {
		p.need = uint32(min(uint64(q.MinOverlap), math.MaxUint32))
		p.zero = p.need == 0
		return
	}
	fill := func(c *sets.Collection) []uint32 {
		n := make([]uint32, c.Len())
		for i := range n {
			n[i] = needFor(q, c.SetLen(i))
			if n[i] == 0 {
				p.zero = true
			}
		}
		return n
	}
	p.needR = fill(p.R)
	p.needS = p.needR
	if !p.Self {
		p.needS = fill(p.S)
	}
}

func sideStats(c *sets.Collection, original int) SideStats {
	st := SideStats{Sets: c.Len(), Elements: int64(len(c.Elements)), Original: original}
	st.Dropped = original - st.Sets
	if st.Sets == 0 {
		return st
	}
	st.MinSize = math.MaxInt
	for i := 0; i < st.Sets; i++ {
		n := c.SetLen(i)
		st.MinSize = min(st.MinSize, n)
		st.MaxSize = max(st.MaxSize, n)
	}
	st.AvgSize = float64(st.Elements) / float64(st.Sets)
	return st
}

func (p *Problem) measure(r, s *sets.Collection, sum dfSummary) {
	st := &p.Stats
	st.R = sideStats(p.R, r.Len())
	if p.Self {
		st.S = st.R
	} else {
		st.S = sideStats(p.S, s.Len())
	}
	st.Universe = sum.distinct
	avg := (float64(st.R.Elements) + float64(st.S.Elements)) / max(float64(st.R.Sets+st.S.Sets), 1)
	if p.Self {
		avg = st.R.AvgSize
	}
	if st.Universe > 0 {
		st.Density = avg / float64(st.Universe)
	}
	if avg > 0 {
		st.Skew = float64(max(st.R.MaxSize, st.S.MaxSize)) / avg
	}
	kr, ks := int64(st.R.Sets), int64(st.S.Sets)
	if p.Self {
		st.Pairs = kr * (kr - 1) / 2
	} else {
		st.Pairs = kr * ks
	}
	st.ScanWork, st.MaxDF = sum.scanWork, sum.maxDF
	st.MergeWork, st.ProbeWork = pairWork(p)
}

// pairWork estimates, from histograms of the set sizes in powers of two,
// the element steps of merging every pair (galloping when one set is over
// gallopRatio times smaller) and the elements a dynamic bitmap probes.
func pairWork(p *Problem) (merge, probe float64) {
	type bucket struct {
		n   float64
		sum float64
	}
	hist := func(c *sets.Collection) []bucket {
		var h [34]bucket
		for i := 0; i < c.Len(); i++ {
			n := c.SetLen(i)
			b := bits.Len(uint(n))
			h[b].n++
			h[b].sum += float64(n)
		}
		return h[:]
	}
	hr := hist(p.R)
	hs := hr
	if !p.Self {
		hs = hist(p.S)
	}
	cost := func(a, b float64) float64 {
		lo, hi := min(a, b), max(a, b)
		if lo == 0 {
			return 1
		}
		if lo*gallopRatio < hi {
			return lo * (2 + math.Log2(hi/lo))
		}
		return a + b
	}
	for x := range hr {
		if hr[x].n == 0 {
			continue
		}
		for y := range hs {
			if hs[y].n == 0 || (p.Self && y < x) {
				continue
			}
			ax, ay := hr[x].sum/hr[x].n, hs[y].sum/hs[y].n
			pairs := hr[x].n * hs[y].n
			if p.Self && x == y {
				pairs = hr[x].n * (hr[x].n - 1) / 2
			}
			merge += pairs * cost(ax, ay)
			probe += pairs * min(ax, ay) // the larger set goes into the bitmap
		}
	}
	return merge, probe
}

// gallopRatio mirrors package intersect's switch to galloping.
const gallopRatio = 32

// SharedColumns returns, memoised, a numbering of the elements that some
// pair can share, those in at least two sets of a self-join or in both
// collections of a join: colOf[e] is e's column, in increasing order of e,
// or -1, and n the number of columns. Matrix and bitmap engines index
// their columns by it; it is computed in parallel on p.Threads.
func (p *Problem) SharedColumns() (colOf []int32, n int) {
	c := p.Memo("allpairs.columns", func() any {
		u := p.Universe
		colOf := large[int32](u)
		parts := max(1, min(4*p.Threads, u>>17))
		counts := make([]int, parts+1)
		// Count each part's columns, then number them from the count
		// before the part.
		par.Each(parts, p.Threads, func(w int) {
			lo, hi := w*u/parts, (w+1)*u/parts
			n := 0
			if p.Self {
				for _, d := range p.DFR[lo:hi] {
					if d >= 2 {
						n++
					}
				}
			} else {
				ds := p.DFS[lo:hi]
				for x, d := range p.DFR[lo:hi] {
					if d > 0 && ds[x] > 0 {
						n++
					}
				}
			}
			counts[w+1] = n
		})
		for w := 1; w <= parts; w++ {
			counts[w] += counts[w-1]
		}
		par.Each(parts, p.Threads, func(w int) {
			lo, hi := w*u/parts, (w+1)*u/parts
			c, col := int32(counts[w]), colOf[lo:hi]
			if p.Self {
				for x, d := range p.DFR[lo:hi] {
					col[x] = -1
					if d >= 2 {
						col[x] = c
						c++
					}
				}
				return
			}
			ds := p.DFS[lo:hi]
			for x, d := range p.DFR[lo:hi] {
				col[x] = -1
				if d > 0 && ds[x] > 0 {
					col[x] = c
					c++
				}
			}
		})
		return sharedColumns{colOf, counts[parts]}
	}).(sharedColumns)
	return c.colOf, c.n
}

type sharedColumns struct {
	colOf []int32
	n     int
}
