package simjoin

import (
	"fmt"
	"math/big"
	"slices"

	"github.com/xsect/xsect/sets"
)

// similarRat decides in rational arithmetic, independently of Threshold's
// integer comparisons, whether sets of sizes a and b sharing c elements
// are similar under t.
func similarRat(t Threshold, c, a, b int) bool {
	if a == 0 || b == 0 || c == 0 {
		return false
	}
	th := new(big.Rat).SetFrac(new(big.Int).SetUint64(t.Num), new(big.Int).SetUint64(t.Den))
	var sim *big.Rat
	switch t.Measure {
	case Jaccard:
		sim = big.NewRat(int64(c), int64(a+b-c))
	case Cosine:
		// c/sqrt(ab) >= t  <=>  c²/(ab) >= t², all of it positive
		sim = big.NewRat(int64(c)*int64(c), int64(a)*int64(b))
		th.Mul(th, th)
	case Dice:
		sim = big.NewRat(2*int64(c), int64(a+b))
	case Overlap:
		sim = big.NewRat(int64(c), 1)
	}
	return sim.Cmp(th) >= 0
}

// reference joins by brute force: the overlap of every pair of sets that
// share an element (i < j in a self-join), counted through a map from
// elements to the sets holding them, decided by similarRat. With distinct,
// each group of equal sets is its smallest id only.
func reference(r, s *sets.Collection, t Threshold, distinct bool) []Pair {
	self := s == nil
	if self {
		s = r
	}
	keepR, keepS := keepAll(r, distinct), keepAll(s, distinct)
	holders := map[uint32][]int{}
	for j := 0; j < s.Len(); j++ {
		if keepS[j] {
			for _, e := range s.Set(j) {
				holders[e] = append(holders[e], j)
			}
		}
	}
	var out []Pair
	for i := 0; i < r.Len(); i++ {
		if !keepR[i] {
			continue
		}
		common := map[int]int{}
		for _, e := range r.Set(i) {
			for _, j := range holders[e] {
				common[j]++
			}
		}
		for j, c := range common {
			if self && j <= i {
				continue
			}
			a, b := r.SetLen(i), s.SetLen(j)
			if similarRat(t, c, a, b) {
				out = append(out, Pair{I: uint32(i), J: uint32(j), Overlap: uint32(c),
					Similarity: t.Measure.Similarity(uint32(c), uint32(a), uint32(b))})
			}
		}
	}
	slices.SortFunc(out, func(a, b Pair) int {
		if a.I != b.I {
			return int(a.I) - int(b.I)
		}
		return int(a.J) - int(b.J)
	})
	return out
}

// keepAll reports, for each set, whether a distinct join keeps it: the
// first of its equals (every set without distinct).
func keepAll(c *sets.Collection, distinct bool) []bool {
	keep := make([]bool, c.Len())
	seen := map[string]bool{}
	for i := range keep {
		key := fmt.Sprint(c.Set(i))
		keep[i] = !distinct || !seen[key]
		seen[key] = true
	}
	return keep
}
