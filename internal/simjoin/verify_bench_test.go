package simjoin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVerifySets: the overlap, and whether it reaches need, for random
// sets and every need around it; without exact the overlap may stop at
// need.
func TestVerifySets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		na, nb := rng.IntN(2000), rng.IntN(2000)
		universe := 1 + rng.IntN(4000)
		x := randomSorted(rng, na, universe)
		y := randomSorted(rng, nb, universe)
		want := uint32(countMerge(x, y))
		for _, need := range []uint32{1, want / 2, want, want + 1, want + 10} {
			if need == 0 {
				continue
			}
			v, ok := verifySets(x, y, need, true)
			if ok != (want >= need) || ok && v != want {
				t.Fatalf("verifySets(%d, %d elements, need %d, exact) = %d, %v; overlap %d", len(x), len(y), need, v, ok, want)
			}
			v, ok = verifySets(x, y, need, false)
			if ok != (want >= need) || ok && (v < need || v > want) {
				t.Fatalf("verifySets(%d, %d elements, need %d) = %d, %v; overlap %d", len(x), len(y), need, v, ok, want)
			}
		}
	}
}

func randomSorted(rng *rand.Rand, n, universe int) []uint32 {
	seen := map[uint32]bool{}
	for range n {
		seen[uint32(rng.IntN(universe))] = true
	}
	var s []uint32
	for v := range seen {
		s = append(s, v)
	}
	slices.Sort(s)
	return s
}

// BenchmarkVerify compares the two ways of verifying a remainder: looking
// its elements up in the probe's stamps, and intersecting the whole sets
// with package intersect's kernels (docs/SIMJOIN.md).
func BenchmarkVerify(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, size := range []int{64, 256, 1024, 4096, 16384} {
		universe := size * 16
		x := make([]uint32, 0, size)
		y := make([]uint32, 0, size)
		for v := 0; v < universe && (len(x) < size || len(y) < size); v++ {
			if len(x) < size && rng.IntN(16) == 0 {
				x = append(x, uint32(v))
			}
			if len(y) < size && rng.IntN(16) == 0 {
				y = append(y, uint32(v))
			}
		}
		pr := &prober{stamp: make([]uint64, universe)}
		for _, frac := range []int{8, 4, 2} {
			rest := y[len(y)-len(y)/frac:]
			shuffled := slices.Clone(rest)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			b.Run(fmt.Sprintf("size=%d/rest=1:%d/stamps", size, frac), func(b *testing.B) {
				pr.mark(x)
				for b.Loop() {
					pr.verifyMarked(shuffled, 0, 0, 1, true)
				}
			})
			b.Run(fmt.Sprintf("size=%d/rest=1:%d/intersect", size, frac), func(b *testing.B) {
				for b.Loop() {
					verifySets(x, y, 1, true)
				}
			})
		}
	}
}

// TestBitmap: the bitmap bound never falls below the overlap, equals it
// for equal records, and is (|x| + |y| − the bits set in one bitmap only)
// / 2 for bitmaps of every width.
func TestBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 20000 {
		x := randomSorted(rng, rng.IntN(120), 1+rng.IntN(400))
		y := randomSorted(rng, rng.IntN(120), 1+rng.IntN(400))
		if rng.IntN(10) == 0 {
			y = slices.Clone(x)
		}
		for _, w := range []int{1, 2, 4, 8} {
			bx, by := make([]uint64, w), make([]uint64, w)
			setBitmap(bx, x)
			setBitmap(by, y)
			// The bits, one by one.
			ones := 0
			for b := range 64 * w {
				if (bx[b/64]>>(b%64)&1 != 0) != (by[b/64]>>(b%64)&1 != 0) {
					ones++
				}
			}
			a, b := uint32(len(x)), uint32(len(y))
			got := bitBound(bx, by, a, b)
			if want := (int(a) + int(b) - ones) / 2; int(got) != want || int(got) < countMerge(x, y) {
				t.Fatalf("bitBound(%v, %v, %d words) = %d, want %d (overlap %d)", x, y, w, got, want, countMerge(x, y))
			}
			if slices.Equal(x, y) && got != a {
				t.Fatalf("bitBound of equal records %v = %d", x, got)
			}
		}
	}
	for avg, want := range map[float64]int{0: 1, 3.5: 1, 8: 1, 10.8: 2, 32: 4, 63: 8, 1000: 8} {
		if got := bitmapWords(avg); got != want {
			t.Errorf("bitmapWords(%v) = %d, want %d", avg, got, want)
		}
	}
}
