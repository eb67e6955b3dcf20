package engine

import (
	"fmt"

	"github.com/xsect/xsect/sets"
)

// TileKind is the shape of a tile of a self-join's pair space.
type TileKind int

// Tile kinds.
const (
	// TileEmpty holds no pair i < j: a range is empty, or every row
	// comes after every column.
	TileEmpty TileKind = iota
	// TileDiagonal has equal rows and columns: the self-join of the
	// range, pairs i < j.
	TileDiagonal
	// TileAbove has every row before every column: the R × S join of the
	// rows with the columns, every pair counting.
	TileAbove
)

// SelfTile clips the tile rows × cols of a self-join of n sets to [0, n)
// and says its shape. Rows and columns must be equal or disjoint once
// clipped (a grid of tiles on one cut of the ids is): a tile straddling
// the diagonal otherwise would hold some pairs twice and others once.
func SelfTile(n int, rows, cols sets.Range) (r0, r1, c0, c1 int, kind TileKind, err error) {
	if err := rows.Validate("Rows"); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if err := cols.Validate("Cols"); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	r0, r1 = rows.Clip(n)
	c0, c1 = cols.Clip(n)
	switch {
	case r0 == r1 || c0 == c1 || c1 <= r0+1:
		kind = TileEmpty
	case r0 == c0 && r1 == c1:
		kind = TileDiagonal
	case r1 <= c0:
		kind = TileAbove
	default:
		err = fmt.Errorf("tile rows %v and columns %v of a self-join of %d sets overlap without being equal: cut rows and columns at the same ids", rows, cols, n)
	}
	return r0, r1, c0, c1, kind, err
}
