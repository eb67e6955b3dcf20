package sorted

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGallop checks Gallop against a linear scan from every start on
// sorted slices with duplicates, both element types.
func TestGallop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		b32 := make([]uint32, n)
		for i := range b32 {
			b32[i] = uint32(r.IntN(3 * (n + 1)))
		}
		if n > 2 {
			b32[0], b32[1] = 0, ^uint32(0) // both ends of the range
		}
		slices.Sort(b32)
		b16 := make([]uint16, n)
		for i, v := range b32 {
			b16[i] = uint16(min(v, 0xffff))
		}
		for lo := 0; lo <= n+1; lo++ {
			for _, x := range []uint32{0, 1, uint32(r.IntN(3*(n+1) + 1)), 0xfffe, 0xffff, ^uint32(0)} {
				if got, want := Gallop(b32, lo, x), linear(b32, lo, x); got != want {
					t.Fatalf("uint32 n=%d lo=%d x=%d: got %d, want %d", n, lo, x, got, want)
				}
				x16 := uint16(min(x, 0xffff))
				if got, want := Gallop(b16, lo, x16), linear(b16, lo, x16); got != want {
					t.Fatalf("uint16 n=%d lo=%d x=%d: got %d, want %d", n, lo, x16, got, want)
				}
			}
		}
	}
}

func linear[T uint16 | uint32](b []T, lo int, x T) int {
	if lo >= len(b) {
		return lo
	}
	for lo < len(b) && b[lo] < x {
		lo++
	}
	return lo
}
