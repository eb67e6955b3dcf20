package simjoin

import (
	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// similarRat decides in rational arithmetic, independently of Threshold's
// integer comparisons, whether sets of sizes a and b sharing c elements
// are similar under t (simjointest.SimilarRat).
func similarRat(t Threshold, c, a, b int) bool {
	return simjointest.SimilarRat(t.Measure.String(), t.Num, t.Den, c, a, b)
}

// reference joins r × s (s nil: a self-join) by brute force
// (simjointest.Reference), decided by similarRat. With distinct, each
// group of equal sets is its smallest id only.
func reference(r, s *sets.Collection, t Threshold, distinct bool) []Pair {
	ref := simjointest.Reference(r, s, func(c, a, b int) bool { return similarRat(t, c, a, b) }, distinct)
	if s == nil {
		s = r
	}
	out := make([]Pair, len(ref))
	for k, p := range ref {
		a, b := r.SetLen(int(p.I)), s.SetLen(int(p.J))
		out[k] = Pair{I: p.I, J: p.J, Overlap: p.Overlap, Similarity: t.Measure.Similarity(p.Overlap, uint32(a), uint32(b))}
	}
	return out
}
