package gpusimjoin

import (
	"math/rand/v2"
	"slices"
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

// reference joins r × s (s nil: a self-join) by brute force, deciding
// in rational arithmetic (simjointest.Reference and SimilarRat). With
// distinct, each group of equal sets is its smallest id only.
func reference(r, s *sets.Collection, t simjoin.Threshold, distinct bool) []simjoin.Pair {
	similar := func(c, a, b int) bool { return similarRat(t, c, a, b) }
	ref := simjointest.Reference(r, s, similar, distinct)
	if s == nil {
		s = r
	}
	out := make([]simjoin.Pair, len(ref))
	for k, p := range ref {
		a, b := r.SetLen(int(p.I)), s.SetLen(int(p.J))
		out[k] = simjoin.Pair{I: p.I, J: p.J, Overlap: p.Overlap, Similarity: t.Measure.Similarity(p.Overlap, uint32(a), uint32(b))}
	}
	return out
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
