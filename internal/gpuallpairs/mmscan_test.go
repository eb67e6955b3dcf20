package gpuallpairs

import (
	"cmp"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// TestMMScanColumnsRef checks heaviest against the one serial pass it
// replaced (heaviestRef): the same candidates in the same order, ties
// included, and the same work, with more shared elements than maxHeavy and
// fewer; and mmscanColumns against the split of heaviestRef's, chosen and
// forced.
func TestMMScanColumnsRef(t *testing.T) {
	if testing.Short() {
		t.Skip("generates collections of millions of elements")
	}
	for _, cfg := range []synth.Config{
		{Sets: 20000, Universe: 1100000, AvgSize: 258, Dist: synth.Zipf, Seed: 1},
		{Sets: 20000, Universe: 37000, AvgSize: 140, Dist: synth.Zipf, Seed: 1},
		{Sets: 3000, Universe: 200000, AvgSize: 100, Dist: synth.Uniform, Seed: 1},
	} {
		c, err := synth.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*sets.Collection{nil, sliceSets(c, 0, c.Len()/2)} {
			r := c
			if s != nil {
				r = sliceSets(c, c.Len()/2, c.Len())
			}
			pl, err := allpairs.NewPlan(r, s, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu", Technique: "merge"})
			if err != nil {
				t.Fatal(err)
			}
			p := pl.Problem
			_, shared := p.SharedColumns()
			order, total := heaviest(p)
			wantOrder, wantTotal := heaviestRef(p)
			if total != wantTotal || !slices.Equal(order, wantOrder) {
				t.Fatalf("%+v self %v (%d shared): %d candidates, work %v; want %d, work %v",
					cfg, s == nil, shared, len(order), total, len(wantOrder), wantTotal)
			}
			for _, force := range []int{0, -1, 5, 1000, maxHeavy} {
				got, want := mmscanColumns(p, gpurt.StandIn(), force), splitHeavy(p, gpurt.StandIn(), force, wantOrder, wantTotal)
				if got.cols.k != want.cols.k || got.light != want.light || !slices.Equal(got.cols.colOf, want.cols.colOf) || !slices.Equal(got.lightDF(), want.lightDF()) {
					t.Fatalf("%+v self %v force %d: got %d heavy, light %v; want %d, light %v",
						cfg, s == nil, force, got.cols.k, got.light, want.cols.k, want.light)
				}
			}
		}
	}
}

// heaviestRef is heaviest as one serial pass: every shared element's work
// gathered, the least work kept selected among them, then the candidates
// and the first ties in increasing order of element.
func heaviestRef(p *allpairs.Problem) ([]heavyCand, float64) {
	u := p.Universe
	work := func(e int) int { return heavyWork(p, e) }
	shared, n := p.SharedColumns()
	var ws []int
	if n > maxHeavy {
		ws = make([]int, 0, n)
	}
	total := 0.0
	for e := range u {
		w := work(e)
		total += float64(w)
		if ws != nil && shared[e] >= 0 {
			ws = append(ws, w)
		}
	}
	t := -1 // the least work kept, where more than maxHeavy are shared
	if ws != nil {
		t = allpairs.NthLargest(ws, maxHeavy)
	}
	order := make([]heavyCand, 0, min(n, maxHeavy))
	for e := range u {
		if w := work(e); shared[e] >= 0 && w > t {
			order = append(order, heavyCand{w, int32(e)})
		}
	}
	for e := 0; e < u && len(order) < min(n, maxHeavy); e++ {
		if shared[e] >= 0 && work(e) == t {
			order = append(order, heavyCand{t, int32(e)})
		}
	}
	slices.SortFunc(order, func(a, b heavyCand) int { return cmp.Compare(b.w, a.w) })
	return order, total
}
