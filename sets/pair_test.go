package sets

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	// Dense I (the counting sort), sparse I (the comparison sort), and
	// small inputs.
	for _, tc := range []struct{ n, maxI int }{{20000, 3000}, {20000, 1 << 30}, {100, 10}, {0, 1}, {1, 1}} {
		ps := make([]Pair, tc.n)
		for i := range ps {
			ps[i] = Pair{uint32(rng.IntN(tc.maxI)), uint32(rng.IntN(3000)), uint32(i)}
		}
		want := slices.Clone(ps)
		slices.SortStableFunc(want, ComparePairs)
		SortPairs(ps)
		for i := range ps {
			if ComparePairs(ps[i], want[i]) != 0 {
				t.Fatalf("n=%d maxI=%d: position %d = %v, want %v", tc.n, tc.maxI, i, ps[i], want[i])
			}
		}
	}
}
