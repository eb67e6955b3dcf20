package settest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestReference(t *testing.T) {
	if got := Reference([]uint32{1, 2, 3, ^uint32(0)}, []uint32{^uint32(0), 3, 2, 9}); !slices.Equal(got, []uint32{2, 3, ^uint32(0)}) {
		t.Errorf("Reference = %v, want [2 3 4294967295]", got)
	}
	if got := Reference(nil, []uint32{1}); len(got) != 0 {
		t.Errorf("Reference(nil, [1]) = %v, want empty", got)
	}
}

func TestRandomSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		n         int
		lo, u     uint64
		wantCount int
	}{{0, 0, 10, 0}, {5, 100, 10, 5}, {20, 7, 10, 10}, {1000, 1 << 31, 1 << 31, 1000}} {
		s := RandomSet(r, c.n, c.lo, c.u)
		if len(s) != c.wantCount {
			t.Errorf("RandomSet(%d, %d, %d): %d values, want %d", c.n, c.lo, c.u, len(s), c.wantCount)
		}
		for i, x := range s {
			if uint64(x) < c.lo || uint64(x) >= c.lo+c.u || i > 0 && s[i-1] >= x {
				t.Fatalf("RandomSet(%d, %d, %d): value %d at %d out of range or order", c.n, c.lo, c.u, x, i)
			}
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range [][2][]uint32{
		{nil, nil}, {{1}, nil}, {{1, 2, 3}, {2, 3, 4}}, {{0, 4294967295}, {4294967295}}, {{5, 6, 7}, {1, 2}},
	} {
		if got, want := Count(c[0], c[1]), len(Reference(c[0], c[1])); got != want {
			t.Errorf("Count(%v, %v) = %d, want %d", c[0], c[1], got, want)
		}
	}
}
