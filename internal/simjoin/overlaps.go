package simjoin

import (
	"sync"

	"github.com/xsect/xsect/sets"
)

// Overlaps hands similar pairs on to add as sets.Pair, their overlap as
// the count: the similarity follows from it and the sets' sizes
// (FromOverlap), so a sort of the pairs (package pairsort) keeps 12 bytes
// a pair, and 2 or 3 in its runs, rather than the float's 8 more. Safe
// for concurrent use when add is.
func Overlaps(add func([]sets.Pair) error) func([]Pair) error {
	var pool sync.Pool
	return func(ps []Pair) error {
		bp, _ := pool.Get().(*[]sets.Pair)
		if bp == nil {
			bp = new([]sets.Pair)
		}
		b := (*bp)[:0]
		for _, p := range ps {
			b = append(b, sets.Pair{I: p.I, J: p.J, Count: p.Overlap})
		}
		err := add(b)
		*bp = b
		pool.Put(bp)
		return err
	}
}

// FromOverlap returns the similar pair that p, from Overlaps, stands for
// in a join of r × s (s nil: r): its similarity computed again from the
// overlap and the sizes of set I of r and set J of s, as the join
// computed it.
func FromOverlap(p sets.Pair, r, s *sets.Collection, m Measure) Pair {
	if s == nil {
		s = r
	}
	sim := m.Similarity(p.Count, uint32(r.SetLen(int(p.I))), uint32(s.SetLen(int(p.J))))
	return Pair{I: p.I, J: p.J, Overlap: p.Count, Similarity: sim}
}
