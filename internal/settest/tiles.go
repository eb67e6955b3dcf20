package settest

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/sets"
)

// Cut returns ranges that cover the ids [0, n) and beyond in order:
// blocks of random sizes (some empty), the last one without an upper
// bound (Hi 0). The tile tests of every pair workload cut their grids
// with it.
func Cut(rng *rand.Rand, n, blocks int) []sets.Range {
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

// Tiles runs run on every tile of the grid rows × cols (in a self-join,
// those with the row block at or before the column block), fails t on an
// error or on a pair outside its tile (ij gives a pair's row and column
// ids), and returns the union of the tiles' pairs, sorted by cmp (nil:
// in the order of the tiles).
func Tiles[P any](t testing.TB, self bool, rows, cols []sets.Range, run func(rows, cols sets.Range) ([]P, error),
	ij func(P) (int, int), cmp func(a, b P) int) []P {
	t.Helper()
	var all []P
	for a, rg := range rows {
		for b, cg := range cols {
			if self && b < a {
				continue
			}
			ps, err := run(rg, cg)
			if err != nil {
				t.Fatalf("tile %v x %v: %v", rg, cg, err)
			}
			for _, p := range ps {
				if i, j := ij(p); !rg.Contains(i) || !cg.Contains(j) {
					t.Fatalf("tile %v x %v: pair %v outside it", rg, cg, p)
				}
			}
			all = append(all, ps...)
		}
	}
	if cmp != nil {
		slices.SortFunc(all, cmp)
	}
	return all
}

// TileShape is a tile and the pairs a workload finds in it, for
// CheckTileShapes.
type TileShape struct {
	Rows, Cols sets.Range
	Pairs      int // -1: the tile is an error
	Name       string
}

// CheckTileShapes runs each case through run, which returns its pairs,
// and reports those that fail where they should not, succeed where they
// should fail, or find another number of pairs.
func CheckTileShapes[P any](t testing.TB, cases []TileShape, run func(c TileShape) ([]P, error)) {
	t.Helper()
	for _, c := range cases {
		ps, err := run(c)
		switch {
		case c.Pairs < 0 && err == nil:
			t.Errorf("tile %v x %v%s: no error", c.Rows, c.Cols, c.Name)
		case c.Pairs >= 0 && err != nil:
			t.Errorf("tile %v x %v%s: %v", c.Rows, c.Cols, c.Name, err)
		case c.Pairs >= 0 && len(ps) != c.Pairs:
			t.Errorf("tile %v x %v%s: %d pairs, want %d: %v", c.Rows, c.Cols, c.Name, len(ps), c.Pairs, ps)
		}
	}
}
