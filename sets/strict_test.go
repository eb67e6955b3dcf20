package sets

import (
	"math"
	"math/rand/v2"
	"testing"
)

// isStrictRef is IsStrict as its definition says.
func isStrictRef(s []uint32) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}

func TestIsStrict(t *testing.T) {
	check := func(s []uint32) {
		t.Helper()
		if got, want := IsStrict(s), isStrictRef(s); got != want {
			t.Fatalf("IsStrict(%v) = %v, want %v", s, got, want)
		}
	}
	check(nil)
	check([]uint32{7})
	check([]uint32{0, math.MaxUint32})
	check([]uint32{math.MaxUint32, 0})
	check([]uint32{math.MaxUint32, math.MaxUint32})
	// A single fault (a repeat, a step down, the largest step down) at
	// every position of every length up to three unrolled blocks and a
	// tail.
	for n := 2; n <= 27; n++ {
		for at := 1; at < n; at++ {
			for _, fault := range []string{"repeat", "down", "wrap"} {
				s := make([]uint32, n)
				for i := range s {
					s[i] = uint32(i) * 1000
				}
				switch fault {
				case "repeat":
					s[at] = s[at-1]
				case "down":
					s[at] = s[at-1] - 1
				case "wrap":
					for i := range s {
						s[i] = math.MaxUint32 - uint32(n-i)
					}
					s[at-1], s[at] = math.MaxUint32, 0
				}
				check(s)
			}
			ok := make([]uint32, n)
			for i := range ok {
				ok[i] = math.MaxUint32 - uint32(n-1-i)
			}
			check(ok)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := make([]uint32, r.IntN(40))
		v := uint32(0)
		for i := range s {
			v += uint32(r.IntN(3)) // steps of 0 make repeats
			s[i] = v
		}
		check(s)
	}
}

func FuzzIsStrict(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := make([]uint32, len(b)/4)
		for i := range s {
			s[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
		}
		if got, want := IsStrict(s), isStrictRef(s); got != want {
			t.Fatalf("IsStrict(%v) = %v, want %v", s, got, want)
		}
	})
}

func BenchmarkIsStrict(b *testing.B) {
	s := make([]uint32, 1<<20)
	for i := range s {
		s[i] = uint32(i * 13)
	}
	b.SetBytes(4 << 20)
	for b.Loop() {
		IsStrict(s)
	}
}
