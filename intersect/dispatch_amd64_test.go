//go:build amd64 && !purego

package intersect

import (
	"fmt"
	"slices"
	"testing"
)

// TestDispatchTables runs Count and Intersect under every kind of CPU's
// dispatch whose methods this CPU has, each of its tiers alone and all
// together, across the crossovers of testPairs, and checks that every
// dispatch is well formed on any CPU.
func TestDispatchTables(t *testing.T) {
	tables := map[string]dispatch{"zen4": zen4Dispatch, "zen5": zen5Dispatch, "intel": intelDispatch, "avx2": avx2Dispatch}
	// Every method the tables may name, whether or not this CPU runs it.
	known := map[string]bool{"avx2": true, "avx512": true, "vp2intersect": true, "gallop": true,
		"search-simd": true, "skip-avx512": true, "lanes-avx512": true, "ladder-avx512": true}
	keepDispatch(t)
	for name, d := range tables {
		t.Run(name, func(t *testing.T) {
			if err := checkTiers(d, known); err != nil {
				t.Fatal(err)
			}
			for _, tr := range d {
				for _, s := range tr.steps {
					if _, ok := methodNamed(s.method); !ok {
						t.Skipf("this CPU has no %s", s.method)
					}
				}
			}
			// The whole dispatch at this CPU's L2 size, then each tier
			// alone for every size.
			runs := []dispatch{d}
			for _, tr := range d {
				runs = append(runs, dispatch{{0, tr.steps, tr.searchPasses, tr.gallopUpTo}})
			}
			for _, r := range runs {
				setDispatch(r, 1<<20, "test")
				for _, p := range testPairs() {
					checkMethod(t, autoMethod, p)
					checkMethod(t, autoMethod, pair{p.name + " swapped", p.b, p.a})
				}
			}
		})
	}
}

// TestDispatchPicks checks which method Zen 4's and the Xeon's dispatches
// pick by size and ratio, where this CPU has their methods: the tier by the
// larger set's size against the L2 cache, the step by the ratio, and
// between two tiers the ladder's start gliding from one tier's to the
// next's.
func TestDispatchPicks(t *testing.T) {
	type want struct {
		small, large int
		method       string
	}
	for _, c := range []struct {
		name        string
		d           dispatch
		l2          int
		gallopRatio int
		picks       []want
	}{
		{"zen4", zen4Dispatch, 1 << 20, 4, []want{
			{1000, 4000, "avx2"}, // the first tier, fitted at 250K values
			{1000, 4001, "ladder-avx512"},
			{1, 249999, "ladder-avx512"},  // below the first tier: no gallop
			{16, 250000, "gallop"},        // the first tier: gallop to 16 values
			{17, 250000, "ladder-avx512"}, // search-simd's one pass takes longer
			{24, 400000, "gallop"},        // the next tier's 24, between 250K and 500K
			{25, 400000, "ladder-avx512"}, // 0.96 passes
			{64, 480000, "search-simd"},   // 1.16 passes
			{65, 480000, "ladder-avx512"}, // (two)
			{64, 500000, "search-simd"},   // 500K: 1.21 passes
			{65, 500000, "ladder-avx512"},
			{375000 / 5, 375000, "avx2"},            // between 250K and 500K: the ladder from about 1:6
			{375000 / 8, 375000, "ladder-avx512"},   // (1:8 at 500K)
			{750000 / 10, 750000, "lanes-avx512"},   // between 500K and 1M: from about 1:13
			{750000 / 16, 750000, "ladder-avx512"},  // (1:19 at 1M)
			{1000000 / 18, 1000000, "lanes-avx512"}, // 1M
			{1000000 / 20, 1000000, "ladder-avx512"},
			{128, 1000000, "search-simd"}, // 2.25 passes
			{129, 1000000, "ladder-avx512"},
			{192, 1500000, "search-simd"}, // 3.84 passes, between 1M and 2M
			{193, 1500000, "ladder-avx512"},
			{896, 4000000, "search-simd"}, // 14.5 passes
			{897, 4000000, "ladder-avx512"},
			{1500000 / 32, 1500000, "lanes-avx512"}, // between 1M and 2M: from about 1:37
			{1500000 / 48, 1500000, "ladder-avx512"},
			{3000000 / 96, 3000000, "skip-avx512"}, // between 2M and 4M: from about 1:114
			{3000000 / 128, 3000000, "ladder-avx512"},
			{6000000 / 128, 6000000, "skip-avx512"}, // beyond 4M
			{6000000 / 200, 6000000, "ladder-avx512"},
			{20, 6000000, "gallop"},
			{21, 6000000, "search-simd"},
			{1344, 6000000, "search-simd"}, // 21.75 passes: the ladder's walk grows with the size
			{1345, 6000000, "ladder-avx512"},
		}},
		{"intel", intelDispatch, 2 << 20, 7, []want{
			{1000, 8000, "avx512"}, // the first tier, fitted at 250K values
			{1000, 8001, "ladder-avx512"},
			{1, 249999, "ladder-avx512"},          // below the first tier: no gallop
			{4, 250000, "gallop"},                 // the first tier: gallop to 4 values
			{5, 250000, "ladder-avx512"},          // no search passes fitted at 250K
			{8, 1 << 18, "gallop"},                // the next tier's 8
			{9, 300000, "ladder-avx512"},          // under one search pass at 393,216
			{300000 / 10, 300000, "lanes-avx512"}, // between 250K and 393,216: the ladder from about 1:18
			{300000 / 20, 300000, "ladder-avx512"},
			{7000, 3 << 17, "lanes-avx512"}, // 393,216
			{6000, 3 << 17, "ladder-avx512"},
			{12, 395000, "gallop"},        // the next tier's 12
			{13, 395000, "ladder-avx512"}, // 0.97 passes, between 393,216 and 500K
			{64, 450000, "search-simd"},   // 1.29 passes
			{65, 450000, "ladder-avx512"},
			{64, 500000, "search-simd"}, // 500K: 1.63 passes
			{65, 500000, "ladder-avx512"},
			{100000, 1000000, "lanes-avx512"}, // 1M
			{1000000 / 23, 1000000, "skip-avx512"},
			{1000000 / 64, 1000000, "skip-avx512"},
			{1000000 / 69, 1000000, "search-simd"},
			{1000000 / 2000, 1000000, "ladder-avx512"},
			{193, 1000000, "ladder-avx512"},
			{192, 1000000, "search-simd"}, // 3.05 passes
			{10, 1000000, "gallop"},
			{11, 1000000, "search-simd"},
			{3000000 / 30, 3000000, "skip-avx512"}, // beyond 2M: no ladder
			{8, 3000000, "gallop"},
			{9, 3000000, "search-simd"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tr := range c.d {
				for _, s := range tr.steps {
					if _, ok := methodNamed(s.method); !ok {
						t.Skipf("this CPU has no %s", s.method)
					}
				}
			}
			keepDispatch(t)
			setDispatch(c.d, c.l2, "test")
			for _, w := range c.picks {
				if got := active.Load().pick(w.small, w.large).Name; got != w.method {
					t.Errorf("%d x %d: pick = %s, want %s", w.small, w.large, got, w.method)
				}
			}
			if r := active.Load().ratio; r != c.gallopRatio {
				t.Errorf("the dispatch's ratio = %d, want the smallest block step, %d", r, c.gallopRatio)
			}
		})
	}
}

// TestGlideStarts checks the ladder's start between two tiers: the lower
// tier's near its size, the upper's at its own, growing between.
func TestGlideStarts(t *testing.T) {
	s := glideStarts(1000, 2000, 10, 40)
	if len(s) != glidePoints || s[0] != 10 || s[len(s)-1] != 40 {
		t.Fatalf("glideStarts(1000, 2000, 10, 40) = %v: want %d starts from 10 to 40", s, glidePoints)
	}
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			t.Fatalf("glideStarts: %v decreases at %d", s, i)
		}
	}
	// Halfway in the size's logarithm, halfway in the ratio's.
	if mid := s[414*glidePoints/1000]; mid != 20 {
		t.Errorf("glideStarts at 1414: %d, want 20", mid)
	}
}

// TestSearchUpTos checks where search-simd takes over from the ladder
// between two tiers: whole passes of 64 values, the lower tier's near its
// size, the upper's at its own, growing between.
func TestSearchUpTos(t *testing.T) {
	u := searchUpTos(1000, 2000, 1.5, 6)
	// The last point, 1992, takes 5.95 passes: the upper tier's 6 serve
	// from its own size on.
	if len(u) != glidePoints || u[0] != 64 || u[len(u)-1] != 5*64 {
		t.Fatalf("searchUpTos(1000, 2000, 1.5, 6) = %v: want %d values from 64 to 320", u, glidePoints)
	}
	for i, v := range u {
		if v%64 != 0 || i > 0 && v < u[i-1] {
			t.Fatalf("searchUpTos: %v: %d not whole passes, or decreasing", u, i)
		}
	}
	// At 1523, 0.607 of the way in the size's logarithm: 3.48 passes.
	if v := u[33]; v != 3*64 {
		t.Errorf("searchUpTos at 1523: %d, want 192", v)
	}
}

// keepDispatch restores, once t ends, the dispatch that setDispatch set at
// init.
func keepDispatch(t *testing.T) {
	d := active.Load()
	t.Cleanup(func() { active.Store(d) })
}

// checkTiers reports a dispatch with no tier, whose tiers' sizes do not
// increase, that names an unknown method, whose steps' ratios do not
// increase up to a last step of 0, or with search passes where the ladder
// is not last.
func checkTiers(d dispatch, known map[string]bool) error {
	if len(d) == 0 {
		return fmt.Errorf("%v: want a tier", d)
	}
	for i, tr := range d {
		if i > 0 && tr.l2 <= d[i-1].l2 {
			return fmt.Errorf("%v: tier %d's size %g does not increase", d, i, tr.l2)
		}
		if err := checkSteps(tr.steps, known); err != nil {
			return err
		}
		if tr.searchPasses < 0 || tr.searchPasses > 0 && tr.steps[len(tr.steps)-1].method != glideMethod {
			return fmt.Errorf("%v: tier %d's search passes %g: want 0, or more where the ladder is last", d, i, tr.searchPasses)
		}
	}
	return nil
}

// checkSteps reports a table that names an unknown method or whose steps'
// ratios do not increase up to a last step of 0.
func checkSteps(steps []step, known map[string]bool) error {
	if len(steps) < 2 || steps[len(steps)-1].upTo != 0 {
		return fmt.Errorf("%v: want a block step, then steps ending in one of upTo 0", steps)
	}
	for i, s := range steps {
		if !known[s.method] {
			return fmt.Errorf("%v: unknown method %q", steps, s.method)
		}
		if i > 0 && i < len(steps)-1 && s.upTo <= steps[i-1].upTo {
			return fmt.Errorf("%v: step %d's ratio %d does not increase", steps, i, s.upTo)
		}
	}
	return nil
}

// TestLadderWide checks the ladder's kernel by ratio and the larger set's
// size where the 768-stride kernel serves near sets from lower ratios.
func TestLadderWide(t *testing.T) {
	if ladders[ladder768].stride != 768 {
		t.Fatalf("ladders[ladder768] has stride %d", ladders[ladder768].stride)
	}
	saved := ladderWide
	t.Cleanup(func() { ladderWide = saved })
	ladderWide = []struct{ maxLen, from int }{{1000, 96}, {2000, 200}}
	for _, c := range []struct{ small, large, stride int }{
		{10, 950, 128},   // near, 1:95: below from
		{10, 960, 768},   // near, 1:96
		{1, 1000, 768},   // near at its largest, 1:1000
		{1, 1999, 1536},  // the next tier, 1:1999: past 768's upTo
		{6, 1200, 768},   // the next tier, 1:200
		{6, 1194, 128},   // the next tier, 1:199
		{10, 2560, 256},  // far, 1:256: the ratio's kernel
		{100, 2500, 64},  // far, 1:25
		{1, 500, 768},    // near, 1:500
		{1, 10000, 1536}, // far
	} {
		if got := ladders[ladderFor(c.small, c.large)].stride; got != c.stride {
			t.Errorf("ladderFor(%d, %d) has stride %d, want %d", c.small, c.large, got, c.stride)
		}
	}
}

// TestSearchSpread checks which larger sets search-simd's kernels search
// with their levels moved off multiples of 1024 values, and that they stay
// exact there, against the kernels without: values at the ends, in the
// middle, and around every level's split.
func TestSearchSpread(t *testing.T) {
	for _, c := range []struct{ n, aliased int }{{1000000, 0}, {1 << 20, 10}, {1<<20 - 1, 9}, {1<<20 + 1, 10}, {3 << 19, 9}, {2047, 0}, {2048, 1}} {
		if got := aliasedLevels(c.n); got != c.aliased {
			t.Errorf("aliasedLevels(%d) = %d, want %d", c.n, got, c.aliased)
		}
		if got := searchSpread(c.n); (got > 0) != (c.aliased >= 3) || got%16 != 0 || got >= 1024 {
			t.Errorf("searchSpread(%d) = %d with %d aliased levels", c.n, got, c.aliased)
		}
	}
	search, ok := methodNamed("search-simd")
	if !ok {
		t.Skip("this CPU has no search-simd")
	}
	search.Intersect = inPlace(search.Intersect)
	for _, n := range []int{1 << 12, 1<<13 + 1, 1 << 16, 1<<17 - 1, 3 << 15, 100_000} {
		b := make([]uint32, n)
		for i := range b {
			b[i] = uint32(3*i + 1)
		}
		var a []uint32
		for i := 0; i < n; i += 37 {
			a = append(a, b[i]-1, b[i], b[i]+1)
		}
		for _, v := range []uint32{b[n-1], b[n-1] + 1, 1<<32 - 1} {
			if v > a[len(a)-1] {
				a = append(a, v)
			}
		}
		for _, spread := range []int{0, 16, 37 * 16, 1008} {
			if got, want := countSearch(a, b, spread), reference(a, b); got != len(want) {
				t.Fatalf("%d values, spread %d: countSearch = %d, want %d", n, spread, got, len(want))
			}
			dst := make([]uint32, len(a)+16)
			if k := intersectSearch(&dst[0], a, b, spread); !slices.Equal(dst[:k], reference(a, b)) {
				t.Fatalf("%d values, spread %d: intersectSearch differs from the reference", n, spread)
			}
		}
		for _, m := range []Method{search, autoMethod} {
			checkMethod(t, m, pair{fmt.Sprintf("%s, %d values", m.Name, n), a, b})
		}
	}
}
