package allpairs

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/sets"
)

// selectSetsRef is the definition: a stable sort of the ids by decreasing
// size, cut to largest, back in id order.
func selectSetsRef(c *sets.Collection, dropEmpty bool, largest int) []uint32 {
	ids := []uint32{}
	for i := 0; i < c.Len(); i++ {
		if !dropEmpty || c.SetLen(i) != 0 {
			ids = append(ids, uint32(i))
		}
	}
	if largest > 0 && largest < len(ids) {
		slices.SortStableFunc(ids, func(a, b uint32) int { return cmp.Compare(c.SetLen(int(b)), c.SetLen(int(a))) })
		ids = ids[:largest]
		slices.Sort(ids)
	}
	return ids
}

func TestSelectSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 400; trial++ {
		k := rng.IntN(300)
		maxSize := 1 + rng.IntN(1<<uint(rng.IntN(12)))
		c := sets.New()
		for i := 0; i < k; i++ {
			n := rng.IntN(maxSize + 1)
			if trial%3 == 0 {
				n = rng.IntN(4) // many ties and empty sets
			}
			s := make([]uint32, n)
			for j := range s {
				s[j] = uint32(j)
			}
			c.Add(s)
		}
		for _, dropEmpty := range []bool{false, true} {
			for _, largest := range []int{0, 1, 2, 3, k / 3, k / 2, k - 1, k, k + 1, rng.IntN(k + 2)} {
				got := selectSets(c, dropEmpty, largest)
				want := selectSetsRef(c, dropEmpty, largest)
				if !slices.Equal(got, want) {
					t.Fatalf("k=%d dropEmpty=%v largest=%d: got %v, want %v", k, dropEmpty, largest, got, want)
				}
			}
		}
	}
}

// TestNthLargestOrders checks nthLargest on the orders that defeat a
// median-of-three pivot (and would make it quadratic without its
// fallback to sorting), at every rank of a few.
func TestNthLargestOrders(t *testing.T) {
	const n = 3000
	orders := map[string]func(i int) int{
		"increasing": func(i int) int { return i },
		"decreasing": func(i int) int { return n - i },
		"all equal":  func(i int) int { return 7 },
		"organ pipe": func(i int) int { return min(i, n-1-i) },
		"sawtooth":   func(i int) int { return i % 64 },
		"two values": func(i int) int { return i & 1 },
		"sorted but the largest first": func(i int) int {
			if i == 0 {
				return n
			}
			return i
		},
		// Musser's median-of-three killer: pairs that put the middle
		// and ends on small values, round after round.
		"median-of-3 killer": func(i int) int {
			if i < n/2 {
				if i%2 == 0 {
					return i + 1
				}
				return n/2 + i
			}
			return 2 * (i - n/2 + 1)
		},
	}
	for name, f := range orders {
		a := make([]int, n)
		for i := range a {
			a[i] = f(i)
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		for _, r := range []int{1, 2, n / 3, n / 2, n/2 + 1, n - 1, n} {
			if got, want := NthLargest(slices.Clone(a), r), sorted[n-r]; got != want {
				t.Errorf("%s, r=%d: got %d, want %d", name, r, got, want)
			}
		}
	}
}

func TestNthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		a := make([]int, 1+rng.IntN(100))
		for i := range a {
			a[i] = rng.IntN(1 + rng.IntN(50))
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		r := 1 + rng.IntN(len(a))
		if got, want := NthLargest(slices.Clone(a), r), sorted[len(a)-r]; got != want {
			t.Fatalf("%v r=%d: got %d, want %d", a, r, got, want)
		}
	}
}

// TestCountDF checks the document frequencies of every counting path (one
// worker or several, private arrays or blocks of values) against a plain
// count, on sets that span many blocks and sets that span none.
func TestCountDF(t *testing.T) {
	for _, minWork := range []int{minParallel, 1} {
		testCountDF(t, minWork)
	}
}

func testCountDF(t *testing.T, minWork int) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []struct{ k, avg, size int }{
		{0, 0, 10}, {1, 0, 10}, {3, 1, 1}, {50, 100, 1000},
		{40, 20000, 5*dfBlock + 17}, {300, 3000, 3 * dfBlock}, {7, 60000, 2*dfBlock - 1},
	}
	for _, sh := range shapes {
		c := sets.New()
		for i := 0; i < sh.k; i++ {
			n := rng.IntN(2*sh.avg + 1)
			m := map[uint32]bool{}
			if i == 0 && sh.size > 1 {
				m[0], m[uint32(sh.size-1)] = true, true // both ends
			}
			for len(m) < min(n, sh.size) {
				m[uint32(rng.IntN(sh.size))] = true
			}
			s := make([]uint32, 0, len(m))
			for v := range m {
				s = append(s, v)
			}
			c.AddUnsorted(s)
		}
		want := make([]uint32, sh.size)
		for i := 0; i < c.Len(); i++ {
			for _, v := range c.Set(i) {
				want[v]++
			}
		}
		odd := []uint32{} // every other set, through ids
		for i := 1; i < c.Len(); i += 2 {
			odd = append(odd, uint32(i))
		}
		wantOdd := make([]uint32, sh.size)
		for _, i := range odd {
			for _, v := range c.Set(int(i)) {
				wantOdd[v]++
			}
		}
		for _, threads := range []int{1, 2, 3, 8} {
			if got := countDF(spread{threads, minWork}, c, nil, sh.size); !slices.Equal(got, want) {
				t.Fatalf("%+v threads %d: countDF differs", sh, threads)
			}
			if got := countDF(spread{threads, minWork}, c, odd, sh.size); !slices.Equal(got, wantOdd) {
				t.Fatalf("%+v threads %d: countDF of odd sets differs", sh, threads)
			}
			got := slices.Clone(wantOdd)
			addDF(spread{threads, minWork}, got, c.Len(), c.Set)
			for v := range got {
				if got[v] != want[v]+wantOdd[v] {
					t.Fatalf("%+v threads %d: addDF differs at %d", sh, threads, v)
				}
			}
			got = make([]uint32, sh.size)
			addDFBlocked(spread{threads, minWork}, got, c.Len(), c.Set, int64(len(c.Elements)))
			if !slices.Equal(got, want) {
				t.Fatalf("%+v threads %d: addDFBlocked differs", sh, threads)
			}
			// Partitioned: the machine's buckets, rounds and pieces, and
			// small ones (many buckets, rounds of a set or a few, buckets
			// in several pieces).
			for _, small := range []bool{false, true} {
				got = make([]uint32, sh.size)
				partitioned(small, func() {
					addDFPartitioned(spread{threads, minWork}, got, c.Len(), c.Set, int64(len(c.Elements)))
				})
				if !slices.Equal(got, want) {
					t.Fatalf("%+v threads %d small %v: addDFPartitioned differs", sh, threads, small)
				}
			}
		}
	}
}

// partitioned calls fn with addDFPartitioned's buckets, rounds and pieces
// made small, if small, and restores them.
func partitioned(small bool, fn func()) {
	if small {
		defer func(b, r, p int) { dfBucket, dfRound, dfPiece = b, r, p }(dfBucket, dfRound, dfPiece)
		dfBucket, dfRound, dfPiece = 64, 3000, 100
	}
	fn()
}

// TestRunEnd checks runEnd against a linear scan, at every start and at
// limits past it: inside, at and past the end of the values.
func TestRunEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, 7, 100, 1000} {
		s := make([]uint32, n)
		for i := range s {
			s[i] = uint32(rng.IntN(4 * n))
		}
		slices.Sort(s)
		s = slices.Compact(s)
		for i := 0; i < len(s); i++ {
			for _, limit := range []uint32{s[i] + 1, s[i] + 5, max(s[len(s)-1], s[i]+1), s[len(s)-1] + 1, 1 << 31} {
				want := i
				for want < len(s) && s[want] < limit {
					want++
				}
				if got := runEnd(s, i, limit); got != want {
					t.Fatalf("runEnd(%v, %d, %d) = %d, want %d", s, i, limit, got, want)
				}
			}
		}
	}
	// The limit of the last bucket of 2^32 values wraps to 0.
	s := []uint32{5, 1<<32 - 2, 1<<32 - 1}
	if got := runEnd(s, 1, 0); got != 3 {
		t.Fatalf("runEnd at the top bucket = %d, want 3", got)
	}
}

func TestHeavyColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, u := range []int{0, 1, 1000, 1<<20 + 3} {
		dr, ds := make([]uint32, u), make([]uint32, u)
		for e := range dr {
			dr[e], ds[e] = uint32(rng.IntN(20)), uint32(rng.IntN(20))
		}
		for _, self := range []bool{false, true} {
			for _, theta := range []int64{-1, 0, 50, 150, 1000} {
				var want []uint32
				var wantSaved int64
				for e := range dr {
					w := int64(dr[e]) * int64(ds[e])
					if self {
						w = int64(dr[e]) * (int64(dr[e]) - 1) / 2
					}
					if w > theta {
						want = append(want, uint32(e))
						wantSaved += w
					}
				}
				for _, threads := range []int{1, 2, 5} {
					got := []uint32{}
					for range 2 { // the second time reusing the storage
						var saved int64
						got, saved = heavyColumns(threads, dr, ds, self, theta, got[:0])
						if !slices.Equal(got, want) || saved != wantSaved {
							t.Fatalf("u=%d self=%v theta=%d threads=%d: %d columns (saved %d), want %d (saved %d)",
								u, self, theta, threads, len(got), saved, len(want), wantSaved)
						}
					}
				}
			}
		}
	}
}

// TestProblemStats checks the renumbering and the statistics of one pass
// over the frequencies (dense values, values to renumber by table, sparse
// values; self-joins and R × S, with selections) against their
// definitions.
func TestProblemStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 60; trial++ {
		minWork := []int{minParallel, 1}[trial%2]
		universe := []int{50, 3000, 1 << 20, 1 << 31}[trial%4]
		k := 1 + rng.IntN(80)
		r := randomCollection(rng, k, min(universe, 200+rng.IntN(universe)), 1+rng.IntN(300))
		var s *sets.Collection
		if trial%3 == 1 {
			s = randomCollection(rng, 1+rng.IntN(60), universe, 1+rng.IntN(300))
		}
		largest := 0
		if trial%5 == 2 {
			largest = 1 + rng.IntN(k)
		}
		for _, threads := range []int{1, 3} {
			p, err := newProblem(r, s, Query{MinOverlap: 1}, Options{Threads: threads, Largest: largest, minParallel: minWork}, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Values in order of the original values, and the same sets.
			orig := map[uint32]uint32{} // renumbered → original
			check := func(c, got *sets.Collection, ids []uint32) {
				for x, id := range ids {
					a, b := c.Set(int(id)), got.Set(x)
					if len(a) != len(b) {
						t.Fatalf("trial %d: set %d has %d elements, want %d", trial, x, len(b), len(a))
					}
					for q := range a {
						if o, ok := orig[b[q]]; ok && o != a[q] || int(b[q]) >= p.Universe {
							t.Fatalf("trial %d: element %d renumbered inconsistently", trial, a[q])
						}
						orig[b[q]] = a[q]
					}
				}
			}
			check(r, p.R, p.RIDs)
			if s != nil {
				check(s, p.S, p.SIDs)
			}
			var prev uint32
			for v := 0; v < p.Universe; v++ {
				if o, ok := orig[uint32(v)]; ok {
					if v > 0 && o < prev {
						t.Fatalf("trial %d: renumbering does not keep the order", trial)
					}
					prev = o
				}
			}
			// Frequencies and the statistics from them.
			df := func(c *sets.Collection) []uint32 {
				d := make([]uint32, p.Universe)
				for i := 0; i < c.Len(); i++ {
					for _, e := range c.Set(i) {
						d[e]++
					}
				}
				return d
			}
			dr, ds := df(p.R), df(p.S)
			if !slices.Equal(dr, p.DFR) || !slices.Equal(ds, p.DFS) {
				t.Fatalf("trial %d: document frequencies differ", trial)
			}
			var work int64
			distinct, maxDF := 0, 0
			for e := range dr {
				if dr[e] != 0 || ds[e] != 0 {
					distinct++
				}
				if s == nil {
					work += int64(dr[e]) * (int64(dr[e]) - 1) / 2
				} else {
					work += int64(dr[e]) * int64(ds[e])
				}
				maxDF = max(maxDF, int(dr[e]), int(ds[e]))
			}
			if st := p.Stats; st.ScanWork != work || st.Universe != distinct || st.MaxDF != maxDF {
				t.Fatalf("trial %d: ScanWork %d Universe %d MaxDF %d, want %d %d %d", trial, st.ScanWork, st.Universe, st.MaxDF, work, distinct, maxDF)
			}
		}
	}
}

func TestBySizeDesc(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 200; trial++ {
		k := rng.IntN(300)
		maxSize := 1 + rng.IntN(1<<uint(rng.IntN(14)))
		c := &sets.Collection{Offsets: make([]uint64, k+1)}
		for i := 0; i < k; i++ {
			c.Offsets[i+1] = c.Offsets[i] + uint64(rng.IntN(maxSize))
		}
		c.Elements = make([]uint32, c.Offsets[k])
		want := make([]uint32, k)
		for i := range want {
			want[i] = uint32(i)
		}
		slices.SortStableFunc(want, func(a, b uint32) int { return cmp.Compare(c.SetLen(int(b)), c.SetLen(int(a))) })
		got := bySizeDesc(c)
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d maxSize=%d: got %v, want %v", k, maxSize, got, want)
		}
		for _, d := range []int{0, 1, maxSize / 2, maxSize, maxSize + 1} {
			n := 0
			for i := 0; i < k; i++ {
				if c.SetLen(i) >= d {
					n++
				}
			}
			if got := countHeavy(c, want, d); got != n {
				t.Fatalf("countHeavy(%d) = %d, want %d", d, got, n)
			}
		}
	}
}

func TestSeek(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := 0; trial < 2000; trial++ {
		n := rng.IntN(200)
		span := 1 + rng.IntN(1<<uint(1+rng.IntN(30)))
		m := map[uint32]bool{}
		bunch := span // values drawn from the top bunch values
		if trial%4 == 0 {
			bunch = 1 + span/50
		}
		for len(m) < min(n, bunch) {
			m[uint32(span-1-rng.IntN(bunch))] = true
		}
		s := slices.Sorted(maps.Keys(m))
		for q := 0; q < 20; q++ {
			from := rng.IntN(len(s) + 1)
			v := uint32(rng.IntN(span + 2))
			want := from + lowerBound(s[from:], v)
			if got := seek(s, from, v); got != want {
				t.Fatalf("seek(%v, %d, %d) = %d, want %d", s, from, v, got, want)
			}
		}
	}
}

// refSplit is MMJoin's optimiser by its definition: every Δ1 level and
// layout priced with the exact frequencies among the heavy sets.
func refSplit(p *Problem, wordNS, pairNS, mapNS float64) splitPlan {
	sc := splitCostsOf(p, wordNS, pairNS, mapNS)
	best := splitPlan{delta1: math.MaxInt, ns: math.Inf(1)}
	for _, l := range sc.layouts {
		if ns := l.base + sc.copyNS; ns < best.ns {
			best.ns = ns
		}
	}
	orderR, orderS := heavyOrder(p)
	for _, lv := range splitLevels(p, sc) {
		dr, ds := make([]uint32, p.Universe), make([]uint32, p.Universe)
		for _, i := range orderR[:lv.heavyR] {
			for _, e := range p.R.Set(int(i)) {
				dr[e]++
			}
		}
		for _, j := range orderS[:lv.heavyS] {
			for _, e := range p.S.Set(int(j)) {
				ds[e]++
			}
		}
		for _, l := range sc.layouts {
			theta := sc.theta(l, lv.pairsHH)
			cols, saved := heavyColumns(1, dr, ds, p.Self, theta, nil)
			if len(cols) == 0 {
				continue
			}
			if ns, gains := sc.price(l, lv.pairsHH, lv.elems, float64(len(cols)), float64(saved)); gains && ns < best.ns {
				best = splitPlan{delta1: lv.delta1, heavyR: lv.heavyR, heavyS: lv.heavyS, theta: theta, pairsHH: lv.pairsHH,
					elems: lv.elems, elementMajor: l.em, cols: float64(len(cols)), saved: float64(saved), ns: ns}
			}
		}
	}
	return best
}

// TestOptimiseExact checks that the optimiser, where it counts exactly
// (small problems), picks the split of its definition, for several product
// costs, and that the split that runs lists the elements it priced.
func TestOptimiseExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := 0; trial < 40; trial++ {
		r := skewedCollection(rng, 40+rng.IntN(200), 100+rng.IntN(3000))
		var s *sets.Collection
		if trial%2 == 1 {
			s = skewedCollection(rng, 30+rng.IntN(200), 100+rng.IntN(3000))
		}
		p, err := newProblem(r, s, Query{MinOverlap: 1}, Options{Threads: 1 + trial%3}, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, word := range []float64{1e-6, 0.01, costs.wordMM, 1} {
			mapNS := []float64{0, costs.bitmapMap}[trial%2]
			got, want := optimise(p, word, costs.pairMM, mapNS), refSplit(p, word, costs.pairMM, mapNS)
			if got.delta1 == math.MaxInt {
				got.elementMajor = false // the layout of plain scan-count is not compared
			}
			if got.sampled || got.elementMajor != want.elementMajor || got.delta1 != want.delta1 || got.theta != want.theta || got.cols != want.cols || got.saved != want.saved || got.ns != want.ns {
				t.Fatalf("trial %d word %g: optimise %+v, want %+v", trial, word, got, want)
			}
			sp := materialise(p, got, splitCostsOf(p, word, costs.pairMM, mapNS))
			if want.delta1 != math.MaxInt && (sp.Delta1 != want.delta1 || float64(len(sp.Columns)) != want.cols) {
				t.Fatalf("trial %d word %g: materialised Δ1 %d with %d columns, want %d with %v", trial, word, sp.Delta1, len(sp.Columns), want.delta1, want.cols)
			}
		}
	}
}

// TestHeavySample checks the sampled estimates of heavy elements against
// the exact ones on collections large enough to be sampled: uniform values,
// and values numbered by decreasing frequency (where unstratified runs of
// values would be far off).
func TestHeavySample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collections of millions of elements")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	const universe = 1 << 19
	for _, ordered := range []bool{false, true} {
		c := sets.New()
		for i := 0; i < 300; i++ {
			n := 2000 + rng.IntN(6000)
			s := make([]uint32, n)
			for x := range s {
				if ordered {
					// Zipf-like: value v with probability ~ 1/(v+1)^0.8.
					s[x] = uint32(math.Pow(rng.Float64(), 5) * universe)
				} else {
					s[x] = uint32(rng.IntN(universe))
				}
			}
			c.AddUnsorted(s)
		}
		for _, self := range []bool{true, false} {
			var s *sets.Collection
			if !self {
				s = c
			}
			p, err := newProblem(c, s, Query{MinOverlap: 1}, Options{Threads: 2}, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			kr, ks := p.R.Len(), p.S.Len()
			h := newHeavySample(p, kr/2, ks/2)
			if h.exact {
				t.Fatalf("ordered=%v self=%v: not sampled", ordered, self)
			}
			orderR, orderS := heavyOrder(p)
			for _, heavy := range []int{kr / 8, kr / 4, kr / 2} {
				h.grow(heavy, heavy)
				dr, ds := make([]uint32, p.Universe), make([]uint32, p.Universe)
				addDF(spread{1, minParallel}, dr, heavy, func(x int) []uint32 { return p.R.Set(int(orderR[x])) })
				addDF(spread{1, minParallel}, ds, heavy, func(x int) []uint32 { return p.S.Set(int(orderS[x])) })
				for _, r := range h.runs { // the sampled values are counted exactly
					for e := r.lo; e < r.hi; e++ {
						if h.dr[r.at+e-r.lo] != dr[e] || !self && h.ds[r.at+e-r.lo] != ds[e] {
							t.Fatalf("ordered=%v self=%v heavy %d: element %d counted %d, want %d", ordered, self, heavy, e, h.dr[r.at+e-r.lo], dr[e])
						}
					}
				}
				for _, q := range []float64{0.5, 0.8, 0.95} {
					// theta at quantile q of w among the elements of some w.
					var ws []int64
					for e := range dr {
						w := int64(dr[e]) * int64(ds[e])
						if self {
							w = int64(dr[e]) * (int64(dr[e]) - 1) / 2
						}
						if w > 0 {
							ws = append(ws, w)
						}
					}
					slices.Sort(ws)
					theta := ws[int(q*float64(len(ws)))]
					n, sum := heavySums(1, dr, ds, self, theta)
					cols, saved := h.heavy(theta)
					if math.Abs(cols-float64(n)) > 0.1*float64(n)+20 || math.Abs(saved-float64(sum)) > 0.1*float64(sum) {
						t.Errorf("ordered=%v self=%v heavy %d theta %d: estimated %.0f elements saving %.4g, exactly %d saving %d",
							ordered, self, heavy, theta, cols, saved, n, sum)
					}
				}
			}
		}
	}
}

// TestLowerBounds checks that the planner's lower bounds are below the
// estimates they stand for, and that skipping estimates never changes the
// choice.
func TestLowerBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	queries := []Query{{MinOverlap: 1}, {MinOverlap: 3}, {Containment: Ratio{1, 1}}, {Containment: Ratio{4, 5}}}
	for trial := 0; trial < 40; trial++ {
		r := skewedCollection(rng, 20+rng.IntN(300), 50+rng.IntN(5000))
		if trial%2 == 0 {
			r = randomCollection(rng, 20+rng.IntN(300), 50+rng.IntN(5000), 1+rng.IntN(400))
		}
		q := queries[trial%len(queries)]
		plan, err := NewPlan(r, nil, q, Options{Device: "cpu", Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		p := plan.Problem
		best, bestName := math.Inf(1), ""
		for _, e := range Engines() {
			if e.Kind() != CPU {
				continue
			}
			est, err := e.Estimate(p)
			if err != nil {
				continue
			}
			if b, ok := e.(bounder); ok {
				if lb := b.lowerBound(p); lb > est.Seconds {
					t.Errorf("trial %d: %s: lower bound %g over the estimate %g", trial, e.Name(), lb, est.Seconds)
				}
			}
			if est.Seconds < best {
				best, bestName = est.Seconds, e.Name()
			}
		}
		if plan.Chosen.Engine.Name() != bestName || plan.Chosen.Bounded {
			t.Errorf("trial %d: chose %s (bounded %v), the lowest estimate is %s's", trial, plan.Chosen.Engine.Name(), plan.Chosen.Bounded, bestName)
		}
	}
}

func TestSharedColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 30; trial++ {
		r := randomCollection(rng, rng.IntN(40), 1+rng.IntN(1<<uint(4+rng.IntN(14))), rng.IntN(2000))
		var s *sets.Collection
		if trial%2 == 1 {
			s = randomCollection(rng, rng.IntN(40), 1+rng.IntN(1<<16), rng.IntN(2000))
		}
		p, err := newProblem(r, s, Query{MinOverlap: 1}, Options{Threads: 1 + trial%4}, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		colOf, n := p.SharedColumns()
		want := make([]int32, p.Universe)
		k := int32(0)
		for e := range want {
			shared := p.DFR[e] >= 2
			if s != nil {
				shared = p.DFR[e] > 0 && p.DFS[e] > 0
			}
			want[e] = -1
			if shared {
				want[e] = k
				k++
			}
		}
		if !slices.Equal(colOf, want) || n != int(k) {
			t.Fatalf("trial %d: %d columns, want %d, or a different numbering", trial, n, k)
		}
	}
}

// TestRestOf checks the rest of a probe that prefix's estimate times
// against its definition: the set ordered by frequency, ties by value, less
// its prefix, back in increasing order.
func TestRestOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := 0; trial < 500; trial++ {
		dfs := make(map[uint32]int64)
		for range 1 + rng.IntN(40) {
			dfs[uint32(rng.IntN(200))] = int64(rng.IntN(1 + rng.IntN(8)))
		}
		s := slices.Sorted(maps.Keys(dfs))
		df := func(e uint32) int64 { return dfs[e] }
		n := rng.IntN(len(s) + 1)
		byRarity := slices.Clone(s)
		slices.SortStableFunc(byRarity, func(a, b uint32) int { return cmp.Compare(df(a), df(b)) })
		want := slices.Sorted(slices.Values(byRarity[len(s)-n:]))
		var cutoff int64
		if n < len(s) {
			cutoff = df(byRarity[len(s)-n-1]) // the prefix's last
		}
		if got := restOf(s, df, cutoff, n); !slices.Equal(got, want) && !(n == 0 && len(got) == 0) {
			t.Fatalf("restOf(%v, n=%d) with frequencies %v = %v, want %v", s, n, dfs, got, want)
		}
	}
}

// BenchmarkNthLargest times the median of a million set sizes in orders
// that are easy and hard for a median-of-three pivot.
func BenchmarkNthLargest(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(5, 6))
	for _, o := range []struct {
		name string
		f    func(i int) int
	}{
		{"random", func(int) int { return rng.IntN(n) }},
		{"organ-pipe", func(i int) int { return min(i, n-1-i) }},
		{"sawtooth", func(i int) int { return i % 1024 }},
		{"increasing", func(i int) int { return i }},
	} {
		a := make([]int, n)
		for i := range a {
			a[i] = o.f(i)
		}
		work := make([]int, n)
		b.Run(o.name, func(b *testing.B) {
			for b.Loop() {
				copy(work, a)
				NthLargest(work, n/2)
			}
		})
	}
}

// FuzzCountDF checks every counting path of document frequencies (private
// counters, blocks of values, buckets with tiny buckets, rounds and
// pieces) against a plain count, on collections the fuzzer draws: each
// byte pair is a set's size and a seed of its elements, over a universe
// of up to 2^16 values.
func FuzzCountDF(f *testing.F) {
	f.Add([]byte{3, 1, 0, 2, 200, 7}, uint16(1000), uint8(2))
	f.Add([]byte{255, 9, 255, 10, 1, 0}, uint16(64), uint8(3))
	f.Add([]byte{}, uint16(1), uint8(1))
	f.Fuzz(func(t *testing.T, spec []byte, universe uint16, threads uint8) {
		size := int(universe) + 1
		c := sets.New()
		for i := 0; i+1 < len(spec); i += 2 {
			rng := rand.New(rand.NewPCG(uint64(spec[i+1]), uint64(i)))
			s := make([]uint32, int(spec[i]))
			for k := range s {
				s[k] = uint32(rng.IntN(size))
			}
			if len(s) > 0 && spec[i+1]%5 == 0 {
				s[0] = uint32(size - 1) // the last value
			}
			c.AddUnsorted(s)
		}
		want := make([]uint32, size)
		for _, v := range c.Elements {
			want[v]++
		}
		pp := spread{int(threads%8) + 1, 1}
		n := int64(len(c.Elements))
		if got := countDF(pp, c, nil, size); !slices.Equal(got, want) {
			t.Fatal("countDF differs")
		}
		got := make([]uint32, size)
		addDFBlocked(pp, got, c.Len(), c.Set, n)
		if !slices.Equal(got, want) {
			t.Fatal("addDFBlocked differs")
		}
		got = make([]uint32, size)
		partitioned(true, func() { addDFPartitioned(pp, got, c.Len(), c.Set, n) })
		if !slices.Equal(got, want) {
			t.Fatal("addDFPartitioned differs")
		}
	})
}
