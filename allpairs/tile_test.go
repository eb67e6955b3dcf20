package allpairs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// cut returns ranges that cover [0, n) in order: blocks of random sizes
// (some empty), the last one without an upper bound (Hi 0).
func cut(rng *rand.Rand, n, blocks int) []sets.Range {
	at := []int{0}
	for range blocks - 1 {
		at = append(at, rng.IntN(n+1))
	}
	slices.Sort(at)
	var out []sets.Range
	for b, lo := range at {
		hi := 0
		if b+1 < len(at) {
			hi = at[b+1]
			if hi == 0 {
				continue // [0, 0) would mean every id
			}
		}
		out = append(out, sets.Range{Lo: lo, Hi: hi})
	}
	return out
}

// tiled runs every tile of the grid rows × cols (in a self-join, those
// with the row block at or before the column block) and returns the union
// of their pairs, sorted, failing on a pair outside its tile.
func tiled(t *testing.T, r, s *sets.Collection, q allpairs.Query, opt allpairs.Options, rows, cols []sets.Range) []allpairs.Pair {
	t.Helper()
	var all []allpairs.Pair
	for a, rg := range rows {
		for b, cg := range cols {
			if s == nil && b < a {
				continue
			}
			o := opt
			o.Rows, o.Cols = rg, cg
			ps, err := allpairs.Collect(context.Background(), r, s, q, o)
			if errors.Is(err, allpairs.ErrCannotRun) && o.Technique != "auto" {
				// A technique that only self-joins (batmap), on a
				// tile off the diagonal: the planner's choice runs it.
				o.Technique = "auto"
				ps, err = allpairs.Collect(context.Background(), r, s, q, o)
			}
			if err != nil {
				t.Fatalf("tile %v x %v: %v", rg, cg, err)
			}
			for _, p := range ps {
				if !rg.Contains(int(p.I)) || !cg.Contains(int(p.J)) {
					t.Fatalf("tile %v x %v: pair %v outside it", rg, cg, p)
				}
			}
			all = append(all, ps...)
		}
	}
	slices.SortFunc(all, sets.ComparePairs)
	return all
}

func randomCollection(rng *rand.Rand, k int) *sets.Collection {
	c := sets.New()
	universe := uint64(1 + rng.IntN(200))
	for range k {
		n := rng.IntN(12)
		if rng.IntN(8) == 0 {
			n = 0
		}
		s := settest.RandomSet(rng, n, 0, universe)
		if rng.IntN(10) == 0 && len(s) > 0 {
			s[len(s)-1] = 1<<32 - 1 // the largest value
		}
		if rng.IntN(10) == 0 && c.Len() > 0 {
			s = slices.Clone(c.Set(rng.IntN(c.Len()))) // a duplicate set
		}
		c.AddUnsorted(s)
	}
	return c
}

// The union of the tiles of any grid is the whole run, for every query,
// technique and selection.
func TestTilesUnionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	queries := []allpairs.Query{
		{MinOverlap: 0},
		{MinOverlap: 1},
		{MinOverlap: 2},
		{Containment: allpairs.Ratio{Num: 1, Den: 1}},
		{Containment: allpairs.Ratio{Num: 1, Den: 2}, MinOverlap: 1},
	}
	techniques := append([]string{"auto"}, allpairs.Techniques()...)
	skipped := 0
	for trial := range 60 {
		k := rng.IntN(40)
		r := randomCollection(rng, k)
		var s *sets.Collection
		if trial%3 == 2 {
			s = randomCollection(rng, rng.IntN(30))
		}
		q := queries[trial%len(queries)]
		opt := allpairs.Options{Device: "cpu", Technique: techniques[trial%len(techniques)], Threads: 1 + trial%3}
		if trial%4 == 1 {
			opt.Largest = rng.IntN(k + 2)
		}
		want, err := allpairs.Collect(context.Background(), r, s, q, opt)
		if errors.Is(err, allpairs.ErrCannotRun) {
			skipped++
			continue // a technique that cannot take this query
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := cut(rng, k, 1+rng.IntN(4))
		cols := rows
		if s != nil {
			cols = cut(rng, s.Len(), 1+rng.IntN(4))
		}
		got := tiled(t, r, s, q, opt, rows, cols)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%+v, %s, largest %d, rows %v cols %v): tiles give %d pairs, the whole run %d", trial, q, opt.Technique, opt.Largest, rows, cols, len(got), len(want))
		}
	}
	if skipped > 20 {
		t.Fatalf("%d of 60 trials could not run their technique", skipped)
	}
}

// Tiles whose rows straddle their columns in a self-join are refused;
// rows after columns hold no pair; bad ranges are errors.
func TestTileShapes(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2}, []uint32{1, 2}, []uint32{1}, []uint32{2}, []uint32{1, 2, 3})
	q := allpairs.Query{MinOverlap: 1}
	for _, tc := range []struct {
		rows, cols sets.Range
		pairs      int // -1: an error
	}{
		{sets.Range{Lo: 0, Hi: 3}, sets.Range{Lo: 2, Hi: 5}, -1},
		{sets.Range{Lo: 0, Hi: 3}, sets.Range{Lo: 0, Hi: 4}, -1},
		{sets.Range{Lo: 3, Hi: 5}, sets.Range{Lo: 0, Hi: 3}, 0},
		{sets.Range{Lo: 2, Hi: 3}, sets.Range{Lo: 2, Hi: 3}, 0},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 2, Hi: 0}, 6},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 0, Hi: 2}, 1},
		{sets.Range{Lo: 9, Hi: 0}, sets.Range{Lo: 9, Hi: 0}, 0},
		{sets.Range{Lo: -1, Hi: 2}, sets.Range{Lo: 2, Hi: 0}, -1},
		{sets.Range{Lo: 3, Hi: 2}, sets.Range{Lo: 3, Hi: 0}, -1},
	} {
		ps, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Rows: tc.rows, Cols: tc.cols})
		switch {
		case tc.pairs < 0 && err == nil:
			t.Errorf("tile %v x %v: no error", tc.rows, tc.cols)
		case tc.pairs >= 0 && err != nil:
			t.Errorf("tile %v x %v: %v", tc.rows, tc.cols, err)
		case tc.pairs >= 0 && len(ps) != tc.pairs:
			t.Errorf("tile %v x %v: %d pairs, want %d: %v", tc.rows, tc.cols, len(ps), tc.pairs, ps)
		}
	}
	// In an R × S join any ranges go.
	ps, err := allpairs.Collect(context.Background(), c, c, q, allpairs.Options{Rows: sets.Range{Lo: 0, Hi: 3}, Cols: sets.Range{Lo: 2, Hi: 5}})
	if err != nil || len(ps) != 8 {
		t.Errorf("R x S tile: %d pairs, %v; want 8", len(ps), err)
	}
}

// On real data, a grid of tiles gives the whole run's pairs.
func TestTilesUnionRealData(t *testing.T) {
	for _, tc := range []struct {
		file string
		q    allpairs.Query
	}{
		{"containment/msweb.data.train.sets", allpairs.Query{MinOverlap: 5}},
		{"containment/msnbc.data.train.sets", allpairs.Query{Containment: allpairs.Ratio{Num: 1, Den: 1}}},
		{"hypergraphs/NDC-substances.dedup.sets", allpairs.Query{MinOverlap: 2}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, err := setio.Load(settest.SharedData(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			want, err := allpairs.Collect(context.Background(), c, nil, tc.q, allpairs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			k := c.Len()
			rows := []sets.Range{{Lo: 0, Hi: k / 7}, {Lo: k / 7, Hi: k / 2}, {Lo: k / 2, Hi: 0}}
			got := tiled(t, c, nil, tc.q, allpairs.Options{}, rows, rows)
			if !slices.Equal(got, want) {
				t.Fatalf("tiles give %d pairs, the whole run %d", len(got), len(want))
			}
			if len(want) == 0 {
				t.Fatal("no pairs: the test would prove nothing")
			}
			t.Logf("%d pairs over 6 tiles", len(want))
		})
	}
}
