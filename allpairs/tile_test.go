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

// tiled runs every tile of the grid rows × cols (in a self-join, those
// with the row block at or before the column block) and returns the union
// of their pairs, sorted, failing on a pair outside its tile.
func tiled(t *testing.T, r, s *sets.Collection, q allpairs.Query, opt allpairs.Options, rows, cols []sets.Range) []allpairs.Pair {
	t.Helper()
	return settest.Tiles(t, s == nil, rows, cols, func(rg, cg sets.Range) ([]allpairs.Pair, error) {
		o := opt
		o.Rows, o.Cols = rg, cg
		ps, err := allpairs.Collect(context.Background(), r, s, q, o)
		if errors.Is(err, allpairs.ErrCannotRun) && o.Technique != "auto" {
			// A technique that only self-joins (batmap), on a tile off
			// the diagonal: the planner's choice runs it.
			o.Technique = "auto"
			ps, err = allpairs.Collect(context.Background(), r, s, q, o)
		}
		return ps, err
	}, pairIJ, sets.ComparePairs)
}

func pairIJ(p allpairs.Pair) (int, int) { return int(p.I), int(p.J) }

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
		rows := settest.Cut(rng, k, 1+rng.IntN(4))
		cols := rows
		if s != nil {
			cols = settest.Cut(rng, s.Len(), 1+rng.IntN(4))
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
	settest.CheckTileShapes(t, []settest.TileShape{
		{Rows: sets.Range{Lo: 0, Hi: 3}, Cols: sets.Range{Lo: 2, Hi: 5}, Pairs: -1},
		{Rows: sets.Range{Lo: 0, Hi: 3}, Cols: sets.Range{Lo: 0, Hi: 4}, Pairs: -1},
		{Rows: sets.Range{Lo: 3, Hi: 5}, Cols: sets.Range{Lo: 0, Hi: 3}, Pairs: 0},
		{Rows: sets.Range{Lo: 2, Hi: 3}, Cols: sets.Range{Lo: 2, Hi: 3}, Pairs: 0},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 2, Hi: 0}, Pairs: 6},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 0, Hi: 2}, Pairs: 1},
		{Rows: sets.Range{Lo: 9, Hi: 0}, Cols: sets.Range{Lo: 9, Hi: 0}, Pairs: 0},
		{Rows: sets.Range{Lo: -1, Hi: 2}, Cols: sets.Range{Lo: 2, Hi: 0}, Pairs: -1},
		{Rows: sets.Range{Lo: 3, Hi: 2}, Cols: sets.Range{Lo: 3, Hi: 0}, Pairs: -1},
	}, func(tc settest.TileShape) ([]allpairs.Pair, error) {
		return allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Rows: tc.Rows, Cols: tc.Cols})
	})
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
