package engine

import (
	"testing"

	"github.com/xsect/xsect/sets"
)

func TestSelfTile(t *testing.T) {
	for _, tc := range []struct {
		rows, cols     sets.Range
		r0, r1, c0, c1 int
		kind           TileKind
		err            bool
	}{
		{sets.Range{}, sets.Range{}, 0, 10, 0, 10, TileDiagonal, false},
		{sets.Range{Lo: 2, Hi: 5}, sets.Range{Lo: 2, Hi: 5}, 2, 5, 2, 5, TileDiagonal, false},
		{sets.Range{Lo: 2, Hi: 5}, sets.Range{Lo: 5}, 2, 5, 5, 10, TileAbove, false},
		{sets.Range{Lo: 5}, sets.Range{Lo: 2, Hi: 5}, 5, 10, 2, 5, TileEmpty, false},
		{sets.Range{Lo: 5, Hi: 8}, sets.Range{Lo: 2, Hi: 6}, 5, 8, 2, 6, TileEmpty, false}, // j <= 5 <= i
		{sets.Range{Lo: 4, Hi: 5}, sets.Range{Lo: 4, Hi: 5}, 4, 5, 4, 5, TileEmpty, false}, // one set
		{sets.Range{Lo: 12}, sets.Range{Lo: 12}, 10, 10, 10, 10, TileEmpty, false},
		{sets.Range{Lo: 2, Hi: 6}, sets.Range{Lo: 5, Hi: 9}, 0, 0, 0, 0, 0, true},
		{sets.Range{Lo: 2, Hi: 6}, sets.Range{Lo: 2, Hi: 9}, 0, 0, 0, 0, 0, true},
		{sets.Range{Lo: 3, Hi: 1}, sets.Range{}, 0, 0, 0, 0, 0, true},
	} {
		r0, r1, c0, c1, kind, err := SelfTile(10, tc.rows, tc.cols)
		if (err != nil) != tc.err {
			t.Errorf("%v x %v: error %v", tc.rows, tc.cols, err)
			continue
		}
		if !tc.err && (r0 != tc.r0 || r1 != tc.r1 || c0 != tc.c0 || c1 != tc.c1 || kind != tc.kind) {
			t.Errorf("%v x %v: %d %d %d %d kind %d; want %d %d %d %d kind %d", tc.rows, tc.cols, r0, r1, c0, c1, kind, tc.r0, tc.r1, tc.c0, tc.c1, tc.kind)
		}
	}
}
