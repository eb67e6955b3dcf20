package sortnet

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The networks sort every input of their size: by the 0-1 principle it is
// enough that they sort, for every 0-1 input, the permutation that numbers
// its zeros, then its ones, left to right (the network acts alike on both).
func TestSortUniqueSmallNetworks(t *testing.T) {
	for n := 0; n <= Max; n++ {
		s := make([]uint32, n)
		for mask := 0; mask < 1<<n; mask++ {
			next := [2]uint32{0, uint32(n - popcount(mask, n))}
			for i := range s {
				bit := mask >> i & 1
				s[i] = next[bit]
				next[bit]++
			}
			plain := slices.Clone(s)
			SortSmall(plain)
			for i, v := range plain {
				if v != uint32(i) {
					t.Fatalf("SortSmall, n=%d mask=%#x: got %v", n, mask, plain)
				}
			}
			got := SortUniqueSmall(s)
			if len(got) != n {
				t.Fatalf("n=%d mask=%#x: %d elements", n, mask, len(got))
			}
			for i, v := range got {
				if v != uint32(i) {
					t.Fatalf("n=%d mask=%#x: got %v", n, mask, got)
				}
			}
		}
	}
	var a [16]uint32
	for mask := 0; mask < 1<<16; mask++ {
		next := [2]uint32{0, uint32(16 - popcount(mask, 16))}
		for i := range a {
			bit := mask >> i & 1
			a[i] = next[bit]
			next[bit]++
		}
		Sort16(&a)
		for i, v := range a {
			if v != uint32(i) {
				t.Fatalf("Sort16, mask=%#x: got %v", mask, a)
			}
		}
	}
}

func popcount(mask, n int) int {
	c := 0
	for i := range n {
		c += mask >> i & 1
	}
	return c
}

// SortUniqueSmall, SortUnique32, SortSmall and Sort32 on random sets, with many repeats or
// none, and with 0 and 2^32-1.
func TestSortUniqueRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for range 20000 {
		n := r.IntN(2*Max + 1)
		limit := []uint32{2, 5, uint32(n + 1), 1 << 16, 0}[r.IntN(5)]
		s := make([]uint32, n)
		for i := range s {
			if limit == 0 {
				s[i] = r.Uint32()
			} else {
				s[i] = r.Uint32N(limit)
			}
			if r.IntN(8) == 0 {
				s[i] = [2]uint32{0, 1<<32 - 1}[r.IntN(2)]
			}
		}
		want := slices.Compact(slices.Sorted(slices.Values(s)))
		var got []uint32
		if n <= Max {
			got = SortUniqueSmall(slices.Clone(s))
		} else {
			got = SortUnique32(slices.Clone(s))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%v: got %v, want %v", s, got, want)
		}
		// And sorting alone, repeats kept.
		got = slices.Clone(s)
		if n <= Max {
			SortSmall(got)
		} else {
			Sort32(got)
		}
		if want := slices.Sorted(slices.Values(s)); !slices.Equal(got, want) {
			t.Fatalf("%v: sorted %v, want %v", s, got, want)
		}
	}
}
