package radix

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// check sorts a copy of s and compares it with slices.Sort.
func check(t *testing.T, what string, s []uint32) {
	t.Helper()
	want := slices.Clone(s)
	slices.Sort(want)
	got := slices.Clone(s)
	tmp := make([]uint32, len(s))
	Sort(got, tmp)
	if !slices.Equal(got, want) {
		t.Fatalf("%s, n=%d: not sorted: %v", what, len(s), got)
	}
}

func TestSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// The masks make every digit width win somewhere and leave digits that
	// are constant in every key.
	masks := []uint32{0, 1, 0x3f, 0xff, 0x7ff, 0xff00, 0xffff, 0x00ff00ff, 0x1ffff, 0xffff0000, 0x80000001, 0xffffffff}
	sizes := []int{}
	for n := 0; n <= 100; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 255, 256, 257, 1000, 4095, 100000)
	for _, n := range sizes {
		for _, mask := range masks {
			s := make([]uint32, n)
			for i := range s {
				s[i] = r.Uint32() & mask
			}
			check(t, fmt.Sprintf("mask %#x", mask), s)
			if n > 3 {
				s[0], s[1] = math.MaxUint32, 0
				check(t, fmt.Sprintf("mask %#x with 0 and 2^32-1", mask), s)
			}
			// Duplicates: a few values repeated.
			for i := range s {
				s[i] = uint32(r.IntN(4)) * (mask/3 + 1)
			}
			check(t, fmt.Sprintf("mask %#x, duplicates", mask), s)
		}
		s := make([]uint32, n)
		for i := range s {
			s[i] = 12345
		}
		check(t, "all equal", s)
		for i := range s {
			s[i] = uint32(n - i)
		}
		check(t, "reversed", s)
		slices.Reverse(s)
		check(t, "sorted", s)
	}
}

// A longer tmp than s is fine, and Sort leaves it out of the result.
func TestSortLongTmp(t *testing.T) {
	s := []uint32{3, 1, 2}
	tmp := []uint32{9, 9, 9, 9, 9}
	Sort(s, tmp)
	if !slices.Equal(s, []uint32{1, 2, 3}) {
		t.Fatal(s)
	}
}

func TestDigitBits(t *testing.T) {
	for _, c := range []struct{ n, width, want int }{
		{20, 16, 6}, {700, 16, 8}, {100000, 32, 11}, {2, 1, 6},
	} {
		if got := digitBits(c.n, c.width); got != c.want {
			t.Errorf("digitBits(%d, %d) = %d, want %d", c.n, c.width, got, c.want)
		}
	}
}

func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n    int
		mask uint32
	}{{20, 0xffff}, {32, 0xffff}, {64, 0xffff}, {128, 0xffff}, {700, 0xffff}, {64, 0xffffffff}, {128, 0xffffffff}, {1000, 0xffffffff}, {100000, 0xffffffff}} {
		n := c.n
		// Many inputs, so that branch predictors cannot learn one.
		const sets = 64
		in := make([]uint32, n*sets)
		for i := range in {
			in[i] = r.Uint32() & c.mask
		}
		s, tmp := make([]uint32, n*sets), make([]uint32, n)
		b.Run(fmt.Sprintf("n=%d/mask=%x/radix", n, c.mask), func(b *testing.B) {
			for b.Loop() {
				copy(s, in)
				for i := 0; i < len(s); i += n {
					Sort(s[i:i+n], tmp)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/mask=%x/slices", n, c.mask), func(b *testing.B) {
			for b.Loop() {
				copy(s, in)
				for i := 0; i < len(s); i += n {
					slices.Sort(s[i : i+n])
				}
			}
		})
	}
}
