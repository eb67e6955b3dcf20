package pairs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// tiled mines every tile of the grid blocks × blocks with the row block
// at or before the column block, returning the union of their pairs,
// sorted, and the sum of their counts by Count.
func tiled(t *testing.T, tx *sets.Collection, opt pairs.Options, blocks []sets.Range) ([]pairs.Pair, int64) {
	t.Helper()
	var n int64
	all := settest.Tiles(t, true, blocks, blocks, func(rg, cg sets.Range) ([]pairs.Pair, error) {
		o := opt
		o.Rows, o.Cols = rg, cg
		ps, err := pairs.Collect(context.Background(), tx, o)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.I >= p.J {
				return nil, fmt.Errorf("pair %v not in increasing order", p)
			}
		}
		c, _, err := pairs.Count(context.Background(), tx, o)
		if err != nil {
			return nil, fmt.Errorf("count: %v", err)
		}
		if c != int64(len(ps)) {
			return nil, fmt.Errorf("Count %d, Collect %d pairs", c, len(ps))
		}
		n += c
		return ps, nil
	}, func(p pairs.Pair) (int, int) { return int(p.I), int(p.J) }, sets.ComparePairs)
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
		blocks := settest.Cut(rng, universe, 1+rng.IntN(4))
		got, n := tiled(t, tx, opt, blocks)
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("trial %d (%s, support %d, blocks %v): tiles give %d pairs (count %d), the whole run %d", trial, opt.Technique, opt.MinSupport, blocks, len(got), n, len(want))
		}
	}
}

// Rows after columns hold no pair; bad ranges are errors.
func TestTileShapes(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2, 3}, []uint32{1, 2, 3}, []uint32{1, 3})
	settest.CheckTileShapes(t, []settest.TileShape{
		{Rows: sets.Range{Lo: 2, Hi: 4}, Cols: sets.Range{Lo: 0, Hi: 3}, Pairs: 0},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 2, Hi: 0}, Pairs: 2},
		{Rows: sets.Range{Lo: 0, Hi: 3}, Cols: sets.Range{Lo: 2, Hi: 4}, Pairs: 3},
		{Rows: sets.Range{Lo: 1, Hi: 3}, Cols: sets.Range{Lo: 1, Hi: 3}, Pairs: 1},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 3, Hi: 3}, Pairs: 0},
		{Rows: sets.Range{Lo: -1, Hi: 2}, Cols: sets.Range{}, Pairs: -1},
		{Rows: sets.Range{}, Cols: sets.Range{Lo: 3, Hi: 1}, Pairs: -1},
	}, func(tc settest.TileShape) ([]pairs.Pair, error) {
		return pairs.Collect(context.Background(), tx, pairs.Options{MinSupport: 2, Rows: tc.Rows, Cols: tc.Cols})
	})
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
