//go:build amd64 && !purego

package intersect

import (
	"fmt"
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
				runs = append(runs, dispatch{{0, tr.steps}})
			}
			for _, r := range runs {
				setDispatch(r, 1<<20)
				for _, p := range testPairs() {
					checkMethod(t, autoMethod, p)
					checkMethod(t, autoMethod, pair{p.name + " swapped", p.b, p.a})
				}
			}
		})
	}
}

// TestDispatchPicks checks which method the Xeon's dispatch picks by size
// and ratio, where this CPU has them: the tier by the larger set's size
// against the L2 cache, the step by the ratio.
func TestDispatchPicks(t *testing.T) {
	for _, tr := range intelDispatch {
		for _, s := range tr.steps {
			if _, ok := methodNamed(s.method); !ok {
				t.Skipf("this CPU has no %s", s.method)
			}
		}
	}
	keepDispatch(t)
	setDispatch(intelDispatch, 2<<20) // near: a larger set of up to 256K values
	for _, c := range []struct {
		small, large int
		want         string
	}{
		{1000, 8000, "avx512"},             // near, within the block step
		{1000, 8001, "ladder-avx512"},      // near, the step beyond
		{1, 1 << 18, "ladder-avx512"},      // near at its largest
		{20000, 1<<18 + 1, "lanes-avx512"}, // 0.75·L2
		{6000, 360000, "lanes-avx512"},
		{5000, 360000, "ladder-avx512"},
		{6000, 3 << 17, "ladder-avx512"}, // 0.75·L2 at its largest
		{6000, 3<<17 + 1, "search-simd"}, // L2
		{100000, 1000000, "lanes-avx512"},
		{1000000 / 23, 1000000, "skip-avx512"},
		{1000000 / 64, 1000000, "skip-avx512"},
		{1000000 / 69, 1000000, "search-simd"},
		{1, 1000000, "search-simd"},
	} {
		if got := pick(c.small, c.large).Name; got != c.want {
			t.Errorf("%d x %d: pick = %s, want %s", c.small, c.large, got, c.want)
		}
	}
	if gallopRatio != 7 {
		t.Errorf("gallopRatio = %d, want the smallest block step, 7", gallopRatio)
	}
}

// keepDispatch restores, once t ends, the dispatch that setDispatch set at
// init.
func keepDispatch(t *testing.T) {
	ratio, count, intersect := gallopRatio, gallopCount, gallopIntersect
	block, blockI, p := blockCount, blockIntersect, pick
	t.Cleanup(func() {
		gallopRatio, gallopCount, gallopIntersect = ratio, count, intersect
		blockCount, blockIntersect, pick = block, blockI, p
	})
}

// checkTiers reports a dispatch whose tiers do not grow to a last one of
// l2 0, that names an unknown method, or whose steps' ratios do not
// increase up to a last step of 0.
func checkTiers(d dispatch, known map[string]bool) error {
	if len(d) == 0 || d[len(d)-1].l2 != 0 {
		return fmt.Errorf("%v: want tiers ending in one of l2 0", d)
	}
	for i, tr := range d {
		if i > 0 && i < len(d)-1 && tr.l2 <= d[i-1].l2 {
			return fmt.Errorf("%v: tier %d's size %g does not increase", d, i, tr.l2)
		}
		if err := checkSteps(tr.steps, known); err != nil {
			return err
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
