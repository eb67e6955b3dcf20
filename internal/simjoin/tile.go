package simjoin

import (
	"fmt"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/sets"
)

// shift is what a tile's pairs add to their ids: the tile is joined as
// collections of its rows and columns alone, whose ids start at 0.
type shift struct{ i, j uint32 }

// sink returns fn with the shift added to every pair it is given.
func (s shift) sink(fn func([]Pair) error) func([]Pair) error {
	if s == (shift{}) {
		return fn
	}
	return func(b []Pair) error {
		for k := range b {
			b[k].I += s.i
			b[k].J += s.j
		}
		return fn(b)
	}
}

// cutTile returns the collections that the tile opt.Rows × opt.Cols of
// r × s (s nil: the self-join of r) joins, and the shift of their ids: the
// rows and columns as collections of their own, a self-join's diagonal
// tile as the self-join of its rows, a tile above the diagonal as the
// R × S join of its rows with its columns. With Distinct, a set equal to
// one of a smaller id anywhere in its collection is left empty (empty
// sets are similar to nothing), so that the tile's pairs are exactly the
// whole run's pairs in it.
func cutTile(r, s *sets.Collection, opt Options, threads int) (*sets.Collection, *sets.Collection, shift, error) {
	if r == nil || opt.Rows.All() && opt.Cols.All() {
		return r, s, shift{}, nil
	}
	var rdup, sdup *dedup
	if opt.Distinct {
		rdup = distinct(r, threads)
		if s != nil {
			sdup = distinct(s, threads)
		}
	}
	if s == nil {
		r0, r1, c0, c1, kind, err := engine.SelfTile(r.Len(), opt.Rows, opt.Cols)
		if err != nil {
			return nil, nil, shift{}, fmt.Errorf("simjoin: %w", err)
		}
		switch kind {
		case engine.TileEmpty:
			return sets.New(), nil, shift{}, nil
		case engine.TileDiagonal:
			return subCollection(r, r0, r1, rdup), nil, shift{uint32(r0), uint32(r0)}, nil
		default:
			return subCollection(r, r0, r1, rdup), subCollection(r, c0, c1, rdup), shift{uint32(r0), uint32(c0)}, nil
		}
	}
	if err := opt.Rows.Validate("simjoin: Rows"); err != nil {
		return nil, nil, shift{}, err
	}
	if err := opt.Cols.Validate("simjoin: Cols"); err != nil {
		return nil, nil, shift{}, err
	}
	r0, r1 := opt.Rows.Clip(r.Len())
	c0, c1 := opt.Cols.Clip(s.Len())
	return subCollection(r, r0, r1, rdup), subCollection(s, c0, c1, sdup), shift{uint32(r0), uint32(c0)}, nil
}

// subCollection returns the sets [lo, hi) of c as a collection, sharing
// c's elements; with d, the sets that repeat an earlier one are empty
// (and the elements are copied).
func subCollection(c *sets.Collection, lo, hi int, d *dedup) *sets.Collection {
	base := c.Offsets[lo]
	if d == nil || !d.dups {
		off := make([]uint64, hi-lo+1)
		for i := range off {
			off[i] = c.Offsets[lo+i] - base
		}
		return &sets.Collection{Offsets: off, Elements: c.Elements[base:c.Offsets[hi]:c.Offsets[hi]]}
	}
	sub := &sets.Collection{Offsets: make([]uint64, 1, hi-lo+1)}
	for i := lo; i < hi; i++ {
		if f := d.first[i]; f != noRecord && d.keep[f] == uint32(i) {
			sub.Elements = append(sub.Elements, c.Set(i)...)
		}
		sub.Offsets = append(sub.Offsets, uint64(len(sub.Elements)))
	}
	return sub
}
