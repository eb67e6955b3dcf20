package benchmarks

import (
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/intersect"
)

// checkAgreement checks that every contender finds in.overlap elements on
// in, and that every xsect method returns exactly what Roaring's And does.
func checkAgreement(t *testing.T, name string, in *input) {
	t.Helper()
	for _, op := range []bench.Op{bench.Count, bench.Intersect} {
		for _, c := range contenders(op, in) {
			c.op()
			if got := c.result(); got != in.overlap {
				t.Errorf("%s: %s %s found %d elements, want %d", name, op, c.name, got, in.overlap)
			}
		}
	}
	bms := in.bitmaps()
	for _, m := range intersect.Methods() {
		for _, p := range in.pairs {
			want := roaring.And(bms[p[0]], bms[p[1]]).ToArray()
			if got := m.Intersect(nil, in.sets[p[0]], in.sets[p[1]]); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Errorf("%s: sets %d and %d: %s gives %d elements, Roaring %d", name, p[0], p[1], m.Name, len(got), len(want))
			}
		}
	}
}

// TestAgreementGenerated checks the contenders against each other on the
// benchmarks' shapes, scaled down to at most 100K elements.
func TestAgreementGenerated(t *testing.T) {
	var shapes []bench.Shape
	for _, d := range densities {
		for _, n := range sizes {
			shapes = append(shapes, bench.Shape{Large: min(n, 1e5), Ratio: 1, Selectivity: 0.33, Density: d})
		}
		for _, r := range ratios {
			shapes = append(shapes, bench.Shape{Large: 1e5, Ratio: r, Selectivity: 0.33, Density: d})
		}
		for _, sel := range selectivities {
			shapes = append(shapes, bench.Shape{Large: 1e5, Ratio: 1, Selectivity: sel, Density: d})
		}
	}
	for _, s := range shapes {
		a, b, err := bench.Pair(s, seed)
		if err != nil {
			t.Fatal(err)
		}
		checkAgreement(t, s.String(), newInput([][]uint32{a, b}, [][2]int{{0, 1}}))
	}
}

// TestAgreementRealData checks the contenders against each other on
// consecutive pairs of Roaring's real data sets.
func TestAgreementRealData(t *testing.T) {
	for _, name := range roaringData {
		if testing.Short() && name == "census-income" {
			continue // 7M elements: the largest by far
		}
		in := realInput(t, name)
		if len(in.sets) != 200 {
			t.Errorf("%s: %d sets, want 200", name, len(in.sets))
		}
		checkAgreement(t, name, in)
	}
}
