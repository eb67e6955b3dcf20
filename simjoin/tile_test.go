package simjoin_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// cut returns ranges that cover [0, n) in order: blocks of random sizes
// (some empty), the last without an upper bound.
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

// tiled joins every tile of the grid rows × cols (in a self-join, those
// with the row block at or before the column block) and returns the union
// of their pairs, sorted, checking that Count agrees with each.
func tiled(t *testing.T, r, s *sets.Collection, opt simjoin.Options, rows, cols []sets.Range) []simjoin.Pair {
	t.Helper()
	var all []simjoin.Pair
	for a, rg := range rows {
		for b, cg := range cols {
			if s == nil && b < a {
				continue
			}
			o := opt
			o.Rows, o.Cols = rg, cg
			ps, err := simjoin.Collect(context.Background(), r, s, o)
			if err != nil {
				t.Fatalf("tile %v x %v: %v", rg, cg, err)
			}
			for _, p := range ps {
				if !rg.Contains(int(p.I)) || !cg.Contains(int(p.J)) {
					t.Fatalf("tile %v x %v: pair %v outside it", rg, cg, p)
				}
			}
			n, _, err := simjoin.Count(context.Background(), r, s, o)
			if err != nil || n != int64(len(ps)) {
				t.Fatalf("tile %v x %v: Count %d (%v), Collect %d pairs", rg, cg, n, err, len(ps))
			}
			all = append(all, ps...)
		}
	}
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
		rows := cut(rng, r.Len(), 1+rng.IntN(4))
		cols := rows
		if s != nil {
			cols = cut(rng, s.Len(), 1+rng.IntN(4))
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
	for _, tc := range []struct {
		rows, cols sets.Range
		distinct   bool
		pairs      int // -1: an error
	}{
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 1, Hi: 4}, false, -1},
		{sets.Range{Lo: 2, Hi: 4}, sets.Range{Lo: 0, Hi: 2}, false, 0},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 2, Hi: 0}, false, 4},
		{sets.Range{Lo: 0, Hi: 2}, sets.Range{Lo: 2, Hi: 0}, true, 1},
		{sets.Range{Lo: 1, Hi: 3}, sets.Range{Lo: 1, Hi: 3}, false, 1},
		{sets.Range{Lo: 1, Hi: 3}, sets.Range{Lo: 1, Hi: 3}, true, 0},
		{sets.Range{Lo: 1, Hi: 0}, sets.Range{Lo: 1, Hi: 0}, true, 0},
	} {
		ps, err := simjoin.Collect(context.Background(), c, nil, simjoin.Options{Threshold: th, Distinct: tc.distinct, Rows: tc.rows, Cols: tc.cols})
		switch {
		case tc.pairs < 0 && err == nil:
			t.Errorf("tile %v x %v: no error", tc.rows, tc.cols)
		case tc.pairs >= 0 && err != nil:
			t.Errorf("tile %v x %v: %v", tc.rows, tc.cols, err)
		case tc.pairs >= 0 && len(ps) != tc.pairs:
			t.Errorf("tile %v x %v (distinct %v): %d pairs, want %d: %v", tc.rows, tc.cols, tc.distinct, len(ps), tc.pairs, ps)
		}
	}
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
