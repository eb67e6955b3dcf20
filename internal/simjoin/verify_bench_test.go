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

// TestSignature: sigBound is the sum over the 16 fields of the smaller
// count, which bounds the overlap; records with 8 elements in a field
// have no signature.
func TestSignature(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 20000 {
		x := randomSorted(rng, rng.IntN(40), 1+rng.IntN(200))
		y := randomSorted(rng, rng.IntN(40), 1+rng.IntN(200))
		var cx, cy [16]uint32
		for _, e := range x {
			cx[e&15]++
		}
		for _, e := range y {
			cy[e&15]++
		}
		sx, sy := signature(x), signature(y)
		if (sx == noSig) != (slices.Max(cx[:]) > 7) || (sy == noSig) != (slices.Max(cy[:]) > 7) {
			t.Fatalf("signature(%v) = %x, counts %v", x, sx, cx)
		}
		if sx == noSig || sy == noSig {
			continue
		}
		var want uint32
		for f := range cx {
			want += min(cx[f], cy[f])
		}
		got := sigBound(sx, sy)
		if got != want || int(got) < countMerge(x, y) {
			t.Fatalf("sigBound(%v, %v) = %d, want %d (overlap %d)", x, y, got, want, countMerge(x, y))
		}
	}
}
