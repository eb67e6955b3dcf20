package allpairs

import (
	"math"
	"testing"

	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// TestSharedSample checks that the levels of a shared heavy sample, asked
// for in any order, estimate what a sample grown level by level does, on
// self-joins and joins whose samples are drawn (not exact) and exact.
func TestSharedSample(t *testing.T) {
	c, err := synth.Generate(synth.Config{Sets: 6000, Universe: 1 << 20, AvgSize: 300, Dist: synth.Zipf, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	small, err := synth.Generate(synth.Config{Sets: 300, Universe: 5000, AvgSize: 40, Dist: synth.Zipf, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	half := func(c *sets.Collection, lo, hi int) *sets.Collection {
		out := sets.New()
		for i := lo; i < hi; i++ {
			out.Add(c.Set(i))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		r, s *sets.Collection
	}{
		{"self", c, nil},
		{"join", half(c, 0, 3000), half(c, 3000, 6000)},
		{"small self", small, nil},
	} {
		p, err := newProblem(tc.r, tc.s, Query{MinOverlap: 1}, Options{}, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		kr, ks := p.R.Len(), p.S.Len()
		// Every Δ1 of splitLevels, whatever the costs.
		var levels []splitLevel
		orderR, orderS := heavyOrder(p)
		for n := kr; n >= 16; n /= 2 {
			d := max(p.R.SetLen(int(orderR[n-1])), 1)
			lv := splitLevel{delta1: d, heavyR: countHeavy(p.R, orderR, d), heavyS: countHeavy(p.S, orderS, d)}
			if p.Self {
				lv.heavyS = lv.heavyR
			}
			if lv.heavyR < kr || lv.heavyS < ks {
				levels = append([]splitLevel{lv}, levels...)
			}
		}
		if len(levels) < 3 {
			t.Fatalf("%s: %d levels", tc.name, len(levels))
		}
		last := levels[len(levels)-1]
		thetas := []int64{0, 1, 10, 100, 1000, math.MaxInt32}
		type result struct{ cols, saved float64 }
		want := make([][]result, len(levels))
		ref := newHeavySample(p, last.heavyR, last.heavyS)
		for i, lv := range levels {
			ref.grow(lv.heavyR, lv.heavyS)
			for _, th := range thetas {
				cols, saved := ref.heavy(th)
				want[i] = append(want[i], result{cols, saved})
			}
		}
		t.Logf("%s: %d levels, %d sampled values, exact %v", tc.name, len(levels), len(ref.dr), ref.exact)
		shared := heavySampleFor(p, last.heavyR, last.heavyS)
		for _, order := range [][]int{{2, 0, len(levels) - 1, 1}, {0, 1, 2}, {len(levels) - 1, 0}} {
			for _, i := range order {
				h := shared.at(levels[i].heavyR, levels[i].heavyS)
				for x, th := range thetas {
					if cols, saved := h.heavy(th); (result{cols, saved}) != want[i][x] {
						t.Fatalf("%s: level %d theta %d: got %v %v, want %v", tc.name, i, th, cols, saved, want[i][x])
					}
				}
			}
		}
	}
}
