package pairs_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// cut returns ranges that cover the item ids [0, n) and beyond in order:
// blocks of random sizes (some empty), the last without an upper bound.
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
			if hi = at[b+1]; hi == 0 {
				continue // [0, 0) would mean every id
			}
		}
		out = append(out, sets.Range{Lo: lo, Hi: hi})
	}
	return out
}

// tiled mines every tile of the grid blocks × blocks with the row block
// at or before the column block, returning the union of their pairs,
// sorted, and the sum of their counts by Count.
func tiled(t *testing.T, tx *sets.Collection, opt pairs.Options, blocks []sets.Range) ([]pairs.Pair, int64) {
	t.Helper()
	var all []pairs.Pair
	var n int64
	for a, rg := range blocks {
		for _, cg := range blocks[a:] {
			o := opt
			o.Rows, o.Cols = rg, cg
			ps, err := pairs.Collect(context.Background(), tx, o)
			if err != nil {
				t.Fatalf("tile %v x %v: %v", rg, cg, err)
			}
			for _, p := range ps {
				if !rg.Contains(int(p.I)) || !cg.Contains(int(p.J)) || p.I >= p.J {
					t.Fatalf("tile %v x %v: pair %v outside it", rg, cg, p)
				}
			}
			all = append(all, ps...)
			c, _, err := pairs.Count(context.Background(), tx, o)
			if err != nil {
				t.Fatalf("tile %v x %v: count: %v", rg, cg, err)
			}
			if c != int64(len(ps)) {
				t.Fatalf("tile %v x %v: Count %d, Collect %d pairs", rg, cg, c, len(ps))
			}
			n += c
		}
	}
	slices.SortFunc(all, sets.ComparePairs)
	return all, n
}

// The union of the tiles of any grid of items is the whole run, for every
// technique.
func TestTilesUnionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	techniques := append([]string{"auto"}, pairs.Techniques()...)
	for trial := range 50 {
		universe := 1 + rng.IntN(60)
		tx := sets.New()
		for range rng.IntN(200) {
			tx.Add(settest.RandomSet(rng, rng.IntN(universe+1), 0, uint64(universe)))
		}
		if trial%5 == 0 {
			tx.Add([]uint32{0, 1<<32 - 1}) // the largest item
		}
		opt := pairs.Options{MinSupport: 1 + rng.IntN(20), Device: "cpu", Technique: techniques[trial%len(techniques)], Threads: 1 + trial%3}
		want, err := pairs.Collect(context.Background(), tx, opt)
		if err != nil {
			t.Fatal(err)
		}
		blocks := cut(rng, universe, 1+rng.IntN(4))
		got, n := tiled(t, tx, opt, blocks)
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("trial %d (%s, support %d, blocks %v): tiles give %d pairs (count %d), the whole run %d", trial, opt.Technique, opt.MinSupport, blocks, len(got), n, len(want))
		}
	}
}

// Rows after columns hold no pair; bad ranges are errors.
func TestTileShapes(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2, 3}, []uint32{1, 2, 3}, []uint32{1, 3})
	for _, tc := range []struct {
		rows, cols sets.Range
		pairs      int // -1: an error
	}{
		{sets.Range{Lo: 2, Hi: 4}, sets.Range{Lo: 0, Hi: 3}, 0},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 2, Hi: 0}, 2},
		{sets.Range{Lo: 0, Hi: 3}, sets.Range{Lo: 2, Hi: 4}, 3},
		{sets.Range{Lo: 1, Hi: 3}, sets.Range{Lo: 1, Hi: 3}, 1},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 3, Hi: 3}, 0},
		{sets.Range{Lo: -1, Hi: 2}, sets.Range{}, -1},
		{sets.Range{}, sets.Range{Lo: 3, Hi: 1}, -1},
	} {
		ps, err := pairs.Collect(context.Background(), tx, pairs.Options{MinSupport: 2, Rows: tc.rows, Cols: tc.cols})
		switch {
		case tc.pairs < 0 && err == nil:
			t.Errorf("tile %v x %v: no error", tc.rows, tc.cols)
		case tc.pairs >= 0 && err != nil:
			t.Errorf("tile %v x %v: %v", tc.rows, tc.cols, err)
		case tc.pairs >= 0 && len(ps) != tc.pairs:
			t.Errorf("tile %v x %v: %d pairs, want %d: %v", tc.rows, tc.cols, len(ps), tc.pairs, ps)
		}
	}
}

// On real data, a grid of tiles gives the whole run's pairs.
func TestTilesUnionRealData(t *testing.T) {
	for _, tc := range []struct {
		file    string
		support int
	}{
		{"fimi/retail.dat", 20},
		{"fimi/mushroom.dat", 400},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tx, err := setio.Load(settest.SharedData(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			opt := pairs.Options{MinSupport: tc.support}
			want, err := pairs.Collect(context.Background(), tx, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatal("no pairs: the test would prove nothing")
			}
			// Cut the items where the pairs' first items are spread.
			a, b := int(want[len(want)/5].I), int(want[len(want)/2].I)+1
			blocks := []sets.Range{{Lo: 0, Hi: a}, {Lo: a, Hi: b}, {Lo: b, Hi: 0}}
			got, _ := tiled(t, tx, opt, blocks)
			if !slices.Equal(got, want) {
				t.Fatalf("tiles %v give %d pairs, the whole run %d", blocks, len(got), len(want))
			}
			t.Logf("%d pairs over 6 tiles", len(want))
		})
	}
}
