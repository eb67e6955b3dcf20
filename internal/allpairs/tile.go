package allpairs

import (
	"fmt"
	"math"
	"slices"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/sets"
)

// restrict keeps, of the selected sets, those of the tile rows × cols
// (Options.Rows and Cols), and returns the second collection the problem
// then joins: a self-join's off-diagonal tile is the R × S join of r's
// rows with r's columns, so s becomes r there. The selection (empty sets,
// Largest) was made over all the sets, so the tile's pairs are exactly the
// whole run's pairs in it.
func (p *Problem) restrict(r, s *sets.Collection, rows, cols sets.Range) (*sets.Collection, error) {
	if rows.All() && cols.All() {
		return s, nil
	}
	if !p.Self {
		if err := rows.Validate("allpairs: Rows"); err != nil {
			return nil, err
		}
		if err := cols.Validate("allpairs: Cols"); err != nil {
			return nil, err
		}
		p.RIDs = inRange(p.RIDs, rows)
		p.SIDs = inRange(p.SIDs, cols)
		return s, nil
	}
	r0, r1, c0, c1, kind, err := engine.SelfTile(r.Len(), rows, cols)
	if err != nil {
		return nil, fmt.Errorf("allpairs: %w", err)
	}
	switch kind {
	case engine.TileEmpty:
		p.RIDs = p.RIDs[:0]
		p.SIDs = p.RIDs
	case engine.TileDiagonal:
		p.RIDs = inRange(p.RIDs, sets.Range{Lo: r0, Hi: r1})
		p.SIDs = p.RIDs
	case engine.TileAbove:
		all := p.RIDs
		p.RIDs = inRange(all, sets.Range{Lo: r0, Hi: r1})
		p.SIDs = inRange(all, sets.Range{Lo: c0, Hi: c1})
		p.Self = false
		s = r
	}
	return s, nil
}

// inRange returns the increasing ids that lie in rg, sharing their
// storage.
func inRange(ids []uint32, rg sets.Range) []uint32 {
	at := func(v int) int {
		i, _ := slices.BinarySearch(ids, uint32(min(v, math.MaxUint32)))
		if v > math.MaxUint32 {
			i = len(ids)
		}
		return i
	}
	lo, hi := at(rg.Lo), len(ids)
	if rg.Hi != 0 {
		hi = at(rg.Hi)
	}
	return ids[lo:hi:hi]
}
