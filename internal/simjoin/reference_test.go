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

// reference joins r × s (s nil: a self-join) by brute force, deciding in
// rational arithmetic (simjointest.Join). With distinct, each group of
// equal sets is its smallest id only.
func reference(r, s *sets.Collection, t Threshold, distinct bool) []Pair {
	return simjointest.Join[Pair](r, s, t.Measure, t.Num, t.Den, distinct)
}
