package gpusimjoin

import (
	"testing"

	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// similarRat decides in rational arithmetic whether sets of sizes a and b
// sharing c elements are similar under t (simjointest.SimilarRat).
func similarRat(t simjoin.Threshold, c, a, b int) bool {
	return simjointest.SimilarRat(t.Measure.String(), t.Num, t.Den, c, a, b)
}

// reference joins r × s (s nil: a self-join) by brute force, deciding in
// rational arithmetic (simjointest.Join). With distinct, each group of
// equal sets is its smallest id only.
func reference(r, s *sets.Collection, t simjoin.Threshold, distinct bool) []simjoin.Pair {
	return simjointest.Join[simjoin.Pair](r, s, t.Measure, t.Num, t.Den, distinct)
}

func mustThreshold(t testing.TB, m simjoin.Measure, s string) simjoin.Threshold {
	t.Helper()
	th, err := simjoin.ParseThreshold(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return th
}
