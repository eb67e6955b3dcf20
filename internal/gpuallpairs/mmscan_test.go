package gpuallpairs

import (
	"cmp"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// TestMMScanColumnsRef checks mmscanColumns against the one-pass selection
// it replaced (mmscanColumnsRef): the same heavy elements, ties included,
// and the same light work, with more shared elements than maxHeavy and
// fewer, chosen and forced.
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
			for _, force := range []int{0, -1, 5, 1000, maxHeavy} {
				got, want := mmscanColumns(p, gpurt.StandIn(), force), mmscanColumnsRef(p, gpurt.StandIn(), force)
				if got.cols.k != want.cols.k || got.light != want.light || !slices.Equal(got.cols.colOf, want.cols.colOf) || !slices.Equal(got.lightDF(), want.lightDF()) {
					t.Fatalf("%+v self %v force %d (%d shared): got %d heavy, light %v; want %d, light %v",
						cfg, s == nil, force, shared, got.cols.k, got.light, want.cols.k, want.light)
				}
			}
		}
	}
}

func mmscanColumnsRef(p *allpairs.Problem, info gpurt.Info, force int) *mmscanSplit {
	return func() any {
		u := p.Universe
		work := func(e int) int {
			if p.Self {
				return int(p.DFR[e]) * int(p.DFR[e])
			}
			return int(p.DFR[e]) * int(p.DFS[e])
		}
		type cand struct {
			w int
			e int32
		}
		// Only elements some pair shares (the shared columns) can be
		// worth a column. Millions may be: they are counted first, and
		// where more than maxHeavy, only the heaviest maxHeavy are kept,
		// selected rather than sorted, with no slice grown element by
		// element (planning waits for this before the run can start).
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
		order := make([]cand, 0, min(n, maxHeavy))
		for e := range u {
			if w := work(e); shared[e] >= 0 && w > t {
				order = append(order, cand{w, int32(e)})
			}
		}
		for e := 0; e < u && len(order) < min(n, maxHeavy); e++ {
			if shared[e] >= 0 && work(e) == t {
				order = append(order, cand{t, int32(e)})
			}
		}
		slices.SortFunc(order, func(a, b cand) int { return cmp.Compare(b.w, a.w) })
		r := ratesFor(info)
		pairs := float64(p.R.Len()) * float64(p.S.Len())
		if p.Self {
			pairs /= 2 // the super-tiles of the upper triangle
		}
		// Every band of columns walks the light lists whole.
		w := scanTech{}.prefCols(p, info)
		bands := float64(ceilDiv(max(p.S.Len(), 1), w))
		best, bestH, bestLight := -1.0, 0, total
		heavy, h := 0.0, 0
		for n := 16; ; n *= 2 {
			n = min(n, len(order))
			for ; h < n; h++ {
				heavy += float64(order[h].w)
			}
			light := max(total-heavy, 0)
			t := 2*pairs*float64(roundUp(n, 16))/r.int8 + bands*light/(r.read*scanOccupancy(info, min(w, max(p.S.Len(), 1))))
			if best < 0 || t < best {
				best, bestH, bestLight = t, n, light
			}
			if n == len(order) {
				break
			}
		}
		if force != 0 {
			bestH = min(max(force, 0), len(order))
			bestLight = total
			for _, c := range order[:bestH] {
				bestLight -= float64(c.w)
			}
		}
		colOf := noColumns(u)
		heavySet := make([]int32, bestH)
		for i, c := range order[:bestH] {
			heavySet[i] = c.e
		}
		slices.Sort(heavySet) // columns in increasing order of element
		for c, e := range heavySet {
			colOf[e] = int32(c)
		}
		lightDF := sync.OnceValue(func() []uint32 {
			df := slices.Clone(p.DFS)
			for _, e := range heavySet {
				df[e] = 0
			}
			return df
		})
		return &mmscanSplit{cols: &columns{colOf: colOf, k: bestH}, light: bestLight, lightDF: lightDF}
	}().(*mmscanSplit)
}
