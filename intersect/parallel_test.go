package intersect

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pairs := testPairs()
	// Sizes past parallelMin, so that the parts are really used.
	for _, u := range []uint64{1 << 18, 1 << 32} {
		pairs = append(pairs,
			pair{"large", randomSet(r, 100_000, u), randomSet(r, 150_000, u)},
			pair{"large skewed", randomSet(r, 70_000, u), randomSet(r, 1_000_000, u)})
	}
	big := randomSet(r, 200_000, 1<<20)
	pairs = append(pairs, pair{"large identical", big, big})
	for _, p := range pairs {
		want := reference(p.a, p.b)
		for _, workers := range []int{0, 1, 2, 3, 16} {
			if got := CountParallel(p.a, p.b, workers); got != len(want) {
				t.Fatalf("%s, %d workers: CountParallel = %d, want %d", p.name, workers, got, len(want))
			}
			got := IntersectParallel([]uint32{9}, p.b, p.a, workers)
			if got[0] != 9 || !slices.Equal(got[1:], want) {
				t.Fatalf("%s, %d workers: IntersectParallel differs from the reference", p.name, workers)
			}
		}
	}
}
