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

// TestIntersections checks the four intersections against a hash set, for
// both element types, on random sets of many sizes and density, including
// the empty set and both ends of the range.
func TestIntersections(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 400 {
		na, nb := r.IntN(70), r.IntN(70)
		if trial%7 == 0 {
			nb = r.IntN(3000) // skewed sizes: the galloping regime
		}
		u := 1 + r.IntN(4*(na+nb)+2)
		a32, b32 := set32(r, na, u), set32(r, nb, u)
		checkIntersections(t, a32, b32)
		checkIntersections(t, to16(a32), to16(b32))
	}
	checkIntersections(t, []uint32{0, ^uint32(0)}, []uint32{0, 1, ^uint32(0)})
	checkIntersections(t, []uint16{0, 0xffff}, []uint16{0xffff})
}

func checkIntersections[T uint16 | uint32](t *testing.T, a, b []T) {
	t.Helper()
	in := map[T]bool{}
	for _, x := range a {
		in[x] = true
	}
	var want []T
	for _, x := range b {
		if in[x] {
			want = append(want, x)
		}
	}
	if n := CountBranchless(a, b); n != len(want) {
		t.Fatalf("CountBranchless(%v, %v) = %d, want %d", a, b, n, len(want))
	}
	if n := CountGallop(a, b); n != len(want) {
		t.Fatalf("CountGallop(%v, %v) = %d, want %d", a, b, n, len(want))
	}
	prefix := []T{7}
	if got := IntersectBranchless(slices.Clone(prefix), a, b); !slices.Equal(got[1:], want) || got[0] != 7 {
		t.Fatalf("IntersectBranchless(%v, %v) = %v, want [7] + %v", a, b, got, want)
	}
	if got := IntersectGallop(slices.Clone(prefix), a, b); !slices.Equal(got[1:], want) || got[0] != 7 {
		t.Fatalf("IntersectGallop(%v, %v) = %v, want [7] + %v", a, b, got, want)
	}
}

// set32 returns up to n distinct values below u, sorted.
func set32(r *rand.Rand, n, u int) []uint32 {
	seen := map[uint32]bool{}
	for range n {
		seen[uint32(r.IntN(u))] = true
	}
	s := make([]uint32, 0, len(seen))
	for x := range seen {
		s = append(s, x)
	}
	slices.Sort(s)
	return s
}

// to16 keeps the values below 2^16 (they stay sorted and distinct).
func to16(s []uint32) []uint16 {
	var out []uint16
	for _, x := range s {
		if x <= 0xffff {
			out = append(out, uint16(x))
		}
	}
	return out
}
