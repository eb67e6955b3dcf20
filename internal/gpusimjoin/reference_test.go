package gpusimjoin

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/sets"
)

// similarRat decides in rational arithmetic, independently of
// simjoin.Threshold's integer comparisons, whether sets of sizes a and b
// sharing c elements are similar under t.
func similarRat(t simjoin.Threshold, c, a, b int) bool {
	if a == 0 || b == 0 || c == 0 {
		return false
	}
	th := new(big.Rat).SetFrac(new(big.Int).SetUint64(t.Num), new(big.Int).SetUint64(t.Den))
	var sim *big.Rat
	switch t.Measure {
	case simjoin.Jaccard:
		sim = big.NewRat(int64(c), int64(a+b-c))
	case simjoin.Cosine:
		// c/sqrt(ab) >= t  <=>  c²/(ab) >= t², all of it positive
		sim = big.NewRat(int64(c)*int64(c), int64(a)*int64(b))
		th.Mul(th, th)
	case simjoin.Dice:
		sim = big.NewRat(2*int64(c), int64(a+b))
	case simjoin.Overlap:
		sim = big.NewRat(int64(c), 1)
	}
	return sim.Cmp(th) >= 0
}

// reference joins by brute force: the overlap of every pair of sets that
// share an element (i < j in a self-join), decided by similarRat. With
// distinct, each group of equal sets is its smallest id only.
func reference(r, s *sets.Collection, t simjoin.Threshold, distinct bool) []simjoin.Pair {
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
	var out []simjoin.Pair
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
				out = append(out, simjoin.Pair{I: uint32(i), J: uint32(j), Overlap: uint32(c),
					Similarity: t.Measure.Similarity(uint32(c), uint32(a), uint32(b))})
			}
		}
	}
	simjoin.SortPairs(out)
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

// randomCollection returns n sets with sizes up to maxSize over a skewed
// universe, some repeated, some empty, some near copies of others: many
// pairs are similar at every threshold.
func randomCollection(rng *rand.Rand, n, maxSize, universe int) *sets.Collection {
	c := sets.New()
	var made [][]uint32
	for range n {
		var s []uint32
		switch x := rng.IntN(10); {
		case x == 0:
			// empty
		case x <= 2 && len(made) > 0:
			s = slices.Clone(made[rng.IntN(len(made))])
			for range rng.IntN(3) {
				if len(s) > 0 && rng.IntN(2) == 0 {
					s = slices.Delete(s, 0, 1)
				} else {
					s = append(s, uint32(rng.IntN(universe)))
				}
			}
		case x == 3 && len(made) > 0:
			s = slices.Clone(made[rng.IntN(len(made))])
		default:
			for range 1 + rng.IntN(maxSize) {
				f := rng.Float64()
				s = append(s, uint32(f*f*float64(universe)))
			}
		}
		s = sets.Normalize(s)
		made = append(made, s)
		c.Add(s)
	}
	return c
}

func mustThreshold(t testing.TB, m simjoin.Measure, s string) simjoin.Threshold {
	t.Helper()
	th, err := simjoin.ParseThreshold(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func comparePairs(t *testing.T, tag string, got, want []simjoin.Pair) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	type key struct{ i, j uint32 }
	gm, wm := map[key]simjoin.Pair{}, map[key]simjoin.Pair{}
	for _, p := range got {
		gm[key{p.I, p.J}] = p
	}
	for _, p := range want {
		wm[key{p.I, p.J}] = p
	}
	shown := 0
	for k, w := range wm {
		if g, ok := gm[k]; !ok || g != w {
			if shown++; shown <= 5 {
				t.Errorf("%s: pair (%d, %d): got %+v (found %v), want %+v", tag, k.i, k.j, g, ok, w)
			}
		}
	}
	for k, g := range gm {
		if _, ok := wm[k]; !ok {
			if shown++; shown <= 10 {
				t.Errorf("%s: extra pair %+v", tag, g)
			}
		}
	}
	t.Fatalf("%s: %d pairs, want %d", tag, len(got), len(want))
}
