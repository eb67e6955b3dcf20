package pairs

import (
	"fmt"

	"github.com/xsect/xsect/sets"
)

// tile is the part of the pair space a plan mines (Options.Rows and Cols):
// the pairs of items a < b with a in rows and b in cols. The zero tile is
// every pair.
type tile struct {
	rows, cols sets.Range
	none       bool // no pair a < b fits: no item is kept
}

func newTile(rows, cols sets.Range) (tile, error) {
	if err := rows.Validate("pairs: Rows"); err != nil {
		return tile{}, err
	}
	if err := cols.Validate("pairs: Cols"); err != nil {
		return tile{}, err
	}
	t := tile{rows: rows, cols: cols}
	empty := func(r sets.Range) bool { return r.Hi != 0 && r.Hi <= r.Lo }
	t.none = empty(rows) || empty(cols) || cols.Hi != 0 && rows.Lo+1 >= cols.Hi
	return t, nil
}

// item reports whether item x is mined: it is in the rows or the columns.
func (t tile) item(x uint32) bool {
	return !t.none && (t.rows.Contains(int(x)) || t.cols.Contains(int(x)))
}

// filters reports whether some pairs mined are not in the tile: those of
// two rows or of two columns, when rows and columns differ.
func (t tile) filters() bool { return t.rows != t.cols }

// keep returns the pairs of ps in the tile, moved to its front.
func (t tile) keep(ps []Pair) []Pair {
	n := 0
	for _, p := range ps {
		if t.rows.Contains(int(p.I)) && t.cols.Contains(int(p.J)) {
			ps[n] = p
			n++
		}
	}
	return ps[:n]
}

// String describes the tile for Explain.
func (t tile) String() string {
	return fmt.Sprintf("items a in %v, b in %v", t.rows, t.cols)
}
