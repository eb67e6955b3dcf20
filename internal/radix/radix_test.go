package radix

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var tmp []uint32
	for _, n := range []int{0, 1, 2, 3, 31, 256, 257, 1000, 100000} {
		for _, mask := range []uint32{0, 1, 0xff, 0xff00, 0x00ff00ff, 0xffff0000, 0xffffffff} {
			s := make([]uint32, n)
			for i := range s {
				s[i] = r.Uint32() & mask
			}
			if n > 3 {
				s[0], s[1] = 0xffffffff, 0
			}
			want := slices.Sorted(slices.Values(s))
			if cap(tmp) < n {
				tmp = make([]uint32, n)
			}
			Sort(s, tmp)
			if !slices.Equal(s, want) {
				t.Fatalf("n=%d mask=%#x: not sorted", n, mask)
			}
		}
	}
}

func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n    int
		mask uint32
	}{{32, 0xffff}, {64, 0xffff}, {128, 0xffff}, {64, 0xffffffff}, {128, 0xffffffff}, {1000, 0xffffffff}, {100000, 0xffffffff}} {
		n := c.n
		in := make([]uint32, n)
		for i := range in {
			in[i] = r.Uint32() & c.mask
		}
		s, tmp := make([]uint32, n), make([]uint32, n)
		b.Run(fmt.Sprintf("n=%d/mask=%x/radix", n, c.mask), func(b *testing.B) {
			for b.Loop() {
				copy(s, in)
				Sort(s, tmp)
			}
		})
		b.Run(fmt.Sprintf("n=%d/mask=%x/slices", n, c.mask), func(b *testing.B) {
			for b.Loop() {
				copy(s, in)
				slices.Sort(s)
			}
		})
	}
}
