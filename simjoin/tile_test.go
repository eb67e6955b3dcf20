package simjoin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// tiled joins every tile of the grid rows × cols (in a self-join, those
// with the row block at or before the column block) and returns the union
// of their pairs, sorted, checking that Count agrees with each.
func tiled(t *testing.T, r, s *sets.Collection, opt simjoin.Options, rows, cols []sets.Range) []simjoin.Pair {
	t.Helper()
	all := settest.Tiles(t, s == nil, rows, cols, func(rg, cg sets.Range) ([]simjoin.Pair, error) {
		o := opt
		o.Rows, o.Cols = rg, cg
		ps, err := simjoin.Collect(context.Background(), r, s, o)
		if err != nil {
			return nil, err
		}
		n, _, err := simjoin.Count(context.Background(), r, s, o)
		if err != nil || n != int64(len(ps)) {
			return nil, fmt.Errorf("Count %d (%v), Collect %d pairs", n, err, len(ps))
		}
		return ps, nil
	}, func(p simjoin.Pair) (int, int) { return int(p.I), int(p.J) }, nil)
	simjoin.SortPairs(all)
	return all
}

// withDuplicates returns c with copies of some of its sets added, and
// empty sets.
func withDuplicates(rng *rand.Rand, c *sets.Collection) *sets.Collection {
	out := sets.New()
	for i := range c.Len() {
		out.Add(c.Set(i))
		if rng.IntN(6) == 0 {
			out.Add(c.Set(rng.IntN(i + 1)))
		}
		if rng.IntN(15) == 0 {
			out.Add(nil)
		}
	}
	return out
}

// The union of the tiles of any grid is the whole run, for every measure,
// technique, and with or without Distinct.
func TestTilesUnionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	thresholds := []struct {
		m simjoin.Measure
		t string
	}{
		{simjoin.Jaccard, "0.5"}, {simjoin.Jaccard, "1"}, {simjoin.Cosine, "2/3"}, {simjoin.Dice, "0.7"}, {simjoin.Overlap, "2"},
	}
	techniques := append([]string{"auto"}, simjoin.Techniques()...)
	for trial := range 60 {
		r := withDuplicates(rng, randomSets(rng, rng.IntN(60), 8, 20))
		var s *sets.Collection
		if trial%3 == 2 {
			s = withDuplicates(rng, randomSets(rng, rng.IntN(40), 8, 20))
		}
		tc := thresholds[trial%len(thresholds)]
		th, err := simjoin.ParseThreshold(tc.m, tc.t)
		if err != nil {
			t.Fatal(err)
		}
		opt := simjoin.Options{Threshold: th, Technique: techniques[trial%len(techniques)], Threads: 1 + trial%3, Distinct: trial%4 == 1}
		want, err := simjoin.Collect(context.Background(), r, s, opt)
		if err != nil {
			t.Fatal(err)
		}
		rows := settest.Cut(rng, r.Len(), 1+rng.IntN(4))
		cols := rows
		if s != nil {
			cols = settest.Cut(rng, s.Len(), 1+rng.IntN(4))
		}
		got := tiled(t, r, s, opt, rows, cols)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%s %s, %s, distinct %v, rows %v cols %v): tiles give %d pairs, the whole run %d",
				trial, tc.m, tc.t, opt.Technique, opt.Distinct, rows, cols, len(got), len(want))
		}
	}
}

// Tiles whose rows straddle their columns in a self-join are refused;
// rows after columns hold no pair.
func TestTileShapes(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2}, []uint32{1, 2}, []uint32{1, 2}, []uint32{1, 2, 3})
	th, _ := simjoin.ParseThreshold(simjoin.Jaccard, "0.6")
	const distinct = " (distinct)" // the case's name: Distinct set
	settest.CheckTileShapes(t, []settest.TileShape{
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 1, Hi: 4}, Pairs: -1},
		{Rows: sets.Range{Lo: 2, Hi: 4}, Cols: sets.Range{Lo: 0, Hi: 2}, Pairs: 0},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 2, Hi: 0}, Pairs: 4},
		{Rows: sets.Range{Lo: 0, Hi: 2}, Cols: sets.Range{Lo: 2, Hi: 0}, Pairs: 1, Name: distinct},
		{Rows: sets.Range{Lo: 1, Hi: 3}, Cols: sets.Range{Lo: 1, Hi: 3}, Pairs: 1},
		{Rows: sets.Range{Lo: 1, Hi: 3}, Cols: sets.Range{Lo: 1, Hi: 3}, Pairs: 0, Name: distinct},
		{Rows: sets.Range{Lo: 1, Hi: 0}, Cols: sets.Range{Lo: 1, Hi: 0}, Pairs: 0, Name: distinct},
	}, func(tc settest.TileShape) ([]simjoin.Pair, error) {
		return simjoin.Collect(context.Background(), c, nil, simjoin.Options{Threshold: th, Distinct: tc.Name == distinct, Rows: tc.Rows, Cols: tc.Cols})
	})
}

// On real data, a grid of tiles gives the whole run's pairs.
func TestTilesUnionRealData(t *testing.T) {
	c, err := setio.Load(settest.SharedData(t, "fimi", "BMS2.dat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, distinct := range []bool{false, true} {
		th, _ := simjoin.ParseThreshold(simjoin.Jaccard, "0.8")
		opt := simjoin.Options{Threshold: th, Distinct: distinct}
		want, err := simjoin.Collect(context.Background(), c, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatal("no pairs: the test would prove nothing")
		}
		k := c.Len()
		rows := []sets.Range{{Lo: 0, Hi: k / 5}, {Lo: k / 5, Hi: k / 2}, {Lo: k / 2, Hi: 0}}
		got := tiled(t, c, nil, opt, rows, rows)
		if !slices.Equal(got, want) {
			t.Fatalf("distinct %v: tiles give %d pairs, the whole run %d", distinct, len(got), len(want))
		}
		t.Logf("distinct %v: %d pairs over 6 tiles", distinct, len(want))
	}
}
