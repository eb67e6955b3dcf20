package intersect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/settest"
)

// reference is the intersection every method is checked against.
func reference(a, b []uint32) []uint32 { return settest.Reference(a, b) }

// randomSet returns n distinct values below universe, sorted.
func randomSet(r *rand.Rand, n int, universe uint64) []uint32 {
	return settest.RandomSet(r, n, 0, universe)
}

type pair struct {
	name string
	a, b []uint32
}

// testPairs returns adversarial and random input pairs. The sizes straddle
// every SIMD block size (8, 16, 32, 64) so that tails are exercised.
func testPairs() []pair {
	max32 := uint32(math.MaxUint32)
	seq := func(lo, n, step int) []uint32 {
		s := make([]uint32, n)
		for i := range s {
			s[i] = uint32(lo + i*step)
		}
		return s
	}
	ps := []pair{
		{"both empty", nil, nil},
		{"one empty", nil, []uint32{1, 2, 3}},
		{"single equal", []uint32{7}, []uint32{7}},
		{"single differ", []uint32{7}, []uint32{8}},
		{"zero and max", []uint32{0, max32}, []uint32{0, max32}},
		{"max only", []uint32{max32}, []uint32{1, 5, max32}},
		{"zero only", []uint32{0}, []uint32{0, 1, 2}},
		{"identical 100", seq(0, 100, 3), seq(0, 100, 3)},
		{"disjoint interleaved", seq(0, 1000, 2), seq(1, 1000, 2)},
		{"disjoint ranges", seq(0, 500, 1), seq(1000, 500, 1)},
		{"nested", seq(0, 1000, 1), seq(100, 17, 7)},
		{"top of range", seq(int(max32)-999, 1000, 1), seq(int(max32)-1999, 1000, 2)},
		{"high bit crossing", seq(1<<31-50, 100, 1), seq(1<<31-10, 100, 1)},
		// Inputs aimed at the SIMD block kernels (blocks of 8 and 16,
		// windows of up to 4 blocks).
		{"identical 10000", seq(0, 10000, 1), seq(0, 10000, 1)},
		{"identical sign bit", seq(1<<31-15000, 10000, 3), seq(1<<31-15000, 10000, 3)},
		{"equal block maxima 16", blockEnds(16, 50, false), blockEnds(16, 50, true)},
		{"equal block maxima 8", blockEnds(8, 50, false), blockEnds(8, 50, true)},
		{"equal block maxima 16 shifted", blockEnds(16, 50, false)[16:], blockEnds(16, 50, true)},
		{"max at block end", append(seq(int(max32)-63, 63, 1), max32), seq(int(max32)-127, 64, 2)},
		{"zero and max at block ends", append(append([]uint32{0}, seq(1<<31-14, 14, 1)...), seq(int(max32)-15, 16, 1)...),
			append(append([]uint32{0}, seq(1<<31-7, 15, 1)...), seq(int(max32)-15, 16, 1)...)},
		{"sign bit block maxima", seq(1<<31-64, 128, 1), seq(1<<31-56, 128, 1)},
		{"sign bit interleaved", seq(1<<31-1000, 1000, 2), seq(1<<31-999, 1000, 2)},
		{"unsigned order", seq(0x7ffffff0, 40, 1), append(seq(0x7fffffe0, 16, 1), seq(0xfffffff0-8*16, 16, 8)...)},
		{"small set ends early", append(seq(0, 16, 1), 1<<30), seq(0, 100000, 1)},
		{"large set ends early", seq(0, 17, 7), append(seq(0, 64, 1), max32)},
		{"skew 1:20 dense", seq(0, 50, 20), seq(0, 1000, 1)},
		{"skew 1:5000 dense", seq(3, 20, 5000), seq(0, 100000, 1)},
		// Values at the ends of the skip kernels' 64- and 512-value blocks.
		{"skip block ends", []uint32{63, 64, 511, 512, 1023, 1535, 2047, 2048, 4095}, seq(0, 5000, 1)},
		{"skip block ends sparse", []uint32{126, 1022, 2046, 4094, 8190}, seq(0, 5000, 2)},
	}
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 100, 255, 1000, 4097}
	for _, na := range sizes {
		for _, nb := range sizes {
			for _, u := range []uint64{2 * uint64(max(na, nb)), 1 << 16, 1 << 32} {
				ps = append(ps, pair{fmt.Sprintf("random %d x %d over %d", na, nb, u),
					randomSet(r, na, u), randomSet(r, nb, u)})
			}
		}
	}
	// The lane kernels: lanes cut at 4 x 8 values of a, windows of 32
	// values of b, a lane's last window at the end of b, gaps longer than
	// a window, values past the end of b in the last lane.
	ps = append(ps,
		pair{"lanes window ends", seq(31, 40, 32), seq(0, 2000, 1)},
		pair{"lanes window ends sparse", seq(62, 40, 64), seq(0, 2000, 2)},
		pair{"lanes past the end", seq(0, 64, 100), seq(0, 3200, 1)[:1000]},
		pair{"lanes long gap", append(seq(0, 20, 1), seq(100000, 20, 1)...), seq(0, 200000, 1)},
		pair{"lanes below b", seq(0, 40, 1), seq(1000, 2000, 1)},
		pair{"lanes max", append(seq(0, 39, 1000), max32), append(seq(0, 1999, 20), max32)},
	)
	for _, na := range []int{31, 32, 33, 40} {
		for _, nb := range []int{31, 32, 33, 64, 1000} {
			ps = append(ps, pair{fmt.Sprintf("lanes %d x %d dense", na, nb), randomSet(r, na, uint64(2*nb)), randomSet(r, nb, uint64(2*nb))})
		}
	}
	// The ladder kernels: b cut to a multiple of the first stride (64 to
	// 1536), a to the values up to the cut's last; values at the ends of
	// every stride's blocks, ratios around the switches between ladders.
	var ends []uint32
	for _, s := range []int{32, 64, 96, 128, 192, 256, 384, 768, 1536} {
		for _, k := range []int{1, 2, 3, 5} {
			ends = append(ends, uint32(k*s-1), uint32(k*s))
		}
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	for _, nb := range []int{3071, 3072, 3073, 4607, 6143, 6200, 10239} {
		ps = append(ps,
			pair{fmt.Sprintf("ladder block ends %d", nb), ends, seq(0, nb, 1)},
			pair{fmt.Sprintf("ladder block ends sparse %d", nb), ends, seq(0, nb, 3)},
			pair{fmt.Sprintf("ladder past the cut %d", nb), seq(nb-70, 60, 1), seq(0, nb, 1)},
			pair{fmt.Sprintf("ladder max %d", nb), append(seq(0, 20, 97), max32-1, max32), append(seq(0, nb-1, 1), max32)},
			pair{fmt.Sprintf("ladder max cut %d", nb), append(seq(0, 20, 97), max32), append(seq(int(max32)-nb, nb, 1), max32)[1:]},
		)
	}
	// A rung that moves resets the finer rungs to its position: values at
	// either end and inside of consecutive and distant first-stride blocks.
	for _, s := range []int{64, 128, 256, 384, 768, 1536} {
		var a []uint32
		offs := []int{s - 1, 0, s / 2, s - 32, 31, 32, s - 33, 1}
		for k := 0; k < 24; k++ {
			a = append(a, uint32(s*(k+k/8)+offs[k%len(offs)]))
		}
		slices.Sort(a)
		a = slices.Compact(a)
		ps = append(ps, pair{fmt.Sprintf("ladder resets %d", s), a, seq(0, 40*s, 1)},
			pair{fmt.Sprintf("ladder resets sparse %d", s), a, seq(0, 40*s, 2)})
	}
	// Intersect's ladders write each value two probes late: the first and
	// last probes, matching or not, one to five of them, every ladder.
	for _, nb := range []int{100, 1000, 5000, 20000} {
		for na := 1; na <= 5; na++ {
			var all, odd []uint32
			for i := range na {
				v := uint32(2 * (i*nb/na + nb/(2*na)))
				all = append(all, v)
				odd = append(odd, v+uint32(i%2))
			}
			b := seq(0, nb, 2)
			ps = append(ps, pair{fmt.Sprintf("ladder queue all %d x %d", na, nb), all, b},
				pair{fmt.Sprintf("ladder queue alternate %d x %d", na, nb), odd, b})
		}
	}
	for _, ratio := range []int{16, 47, 48, 49, 199, 200, 201, 287, 288, 289, 559, 560, 561, 1399, 1400, 1401, 3000, 7000} {
		for _, na := range []int{1, 3, 10} {
			nb := na * ratio
			a, b := randomSet(r, na, uint64(2*nb)), randomSet(r, nb, uint64(2*nb))
			ps = append(ps, pair{fmt.Sprintf("ladder %d x %d", na, nb), a, b},
				pair{fmt.Sprintf("ladder %d x %d in b", na, nb), b[len(b)/3 : len(b)/3+na], b})
		}
	}
	// Ratios around the dispatch's crossovers (intersect_amd64.go).
	for _, ratio := range []int{7, 8, 9, 12, 14, 17, 18, 19, 23, 24, 28, 40, 48, 64, 68, 112, 1024, 1400, 3072, 5500, 7680} {
		for _, d := range []int{-1, 0, 1} {
			na := 40
			nb := na*ratio + d
			ps = append(ps, pair{fmt.Sprintf("crossover %d x %d", na, nb), randomSet(r, na, uint64(4*nb)), randomSet(r, nb, uint64(4*nb))})
		}
	}
	for _, ratio := range []int{10, 20, 50, 100, 200, 1000} {
		nb := 20000
		ps = append(ps, pair{fmt.Sprintf("skew 1:%d", ratio),
			randomSet(r, nb/ratio, 40000), randomSet(r, nb, 40000)})
	}
	return ps
}

// blockEnds returns n blocks of w values where every block ends with the
// same value in both sets (odd selects the other set's values before it).
func blockEnds(w, n int, odd bool) []uint32 {
	var s []uint32
	for k := range n {
		base := uint32(1000 * k)
		for i := range w - 1 {
			v := base + uint32(2*i)
			if odd {
				v++
			}
			s = append(s, v)
		}
		s = append(s, base+999)
	}
	return s
}

func allMethods() []Method {
	auto, _ := Lookup("auto")
	return append(Methods(), auto)
}

func TestMethods(t *testing.T) {
	for _, m := range allMethods() {
		t.Run(m.Name, func(t *testing.T) {
			for _, p := range testPairs() {
				checkMethod(t, m, p)
				checkMethod(t, m, pair{p.name + " swapped", p.b, p.a})
			}
		})
	}
}

func checkMethod(t *testing.T, m Method, p pair) {
	t.Helper()
	want := reference(p.a, p.b)
	ac, bc := slices.Clone(p.a), slices.Clone(p.b)
	if got := m.Count(p.a, p.b); got != len(want) {
		t.Fatalf("%s: Count = %d, want %d", p.name, got, len(want))
	}
	// Intersect must append after existing content and leave it alone.
	prefix := []uint32{42, 43}
	got := m.Intersect(slices.Clone(prefix), p.a, p.b)
	if !slices.Equal(got[:2], prefix) || !slices.Equal(got[2:], want) {
		t.Fatalf("%s: Intersect = %v, want %v after the prefix", p.name, got, want)
	}
	// A dst with spare capacity: nothing past the result may change
	// semantics; the result must still be right.
	dst := make([]uint32, 0, len(want)+64)
	if got := m.Intersect(dst, p.a, p.b); !slices.Equal(got, want) {
		t.Fatalf("%s: Intersect into spare capacity = %v, want %v", p.name, got, want)
	}
	if !slices.Equal(ac, p.a) || !slices.Equal(bc, p.b) {
		t.Fatalf("%s: inputs modified", p.name)
	}
}

func TestLookup(t *testing.T) {
	for _, m := range Methods() {
		got, err := Lookup(m.Name)
		if err != nil || got.Name != m.Name {
			t.Errorf("Lookup(%q) = %v, %v", m.Name, got.Name, err)
		}
	}
	if _, err := Lookup("nonesuch"); err == nil {
		t.Error("Lookup of an unknown name succeeded")
	}
}

func TestAll(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		k := r.IntN(6)
		sets := make([][]uint32, k)
		for i := range sets {
			sets[i] = randomSet(r, r.IntN(300), 400)
		}
		var want []uint32
		if k > 0 {
			want = slices.Clone(sets[0])
			for _, s := range sets[1:] {
				want = reference(want, s)
			}
		}
		got := IntersectAll([]uint32{9}, sets...)
		if got[0] != 9 || !slices.Equal(got[1:], want) {
			t.Fatalf("IntersectAll(%d sets) = %v, want %v", k, got[1:], want)
		}
		if n := CountAll(sets...); n != len(want) {
			t.Fatalf("CountAll(%d sets) = %d, want %d", k, n, len(want))
		}
		for _, m := range Methods() {
			if got := m.IntersectAll(nil, sets...); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("%s.IntersectAll(%d sets) = %v, want %v", m.Name, k, got, want)
			}
			if n := m.CountAll(sets...); n != len(want) {
				t.Fatalf("%s.CountAll(%d sets) = %d, want %d", m.Name, k, n, len(want))
			}
		}
	}
}

func TestCountAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := randomSet(r, 5000, 20000), randomSet(r, 5000, 20000)
	small := randomSet(r, 10, 20000)
	if n := testing.AllocsPerRun(10, func() { Count(a, b); Count(small, b) }); n != 0 {
		t.Errorf("Count allocated %v times", n)
	}
}

// FuzzMethods decodes two sets from the fuzzer's bytes and checks every
// method against the reference.
func FuzzMethods(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, []byte{3, 4, 5, 6}, uint8(0))
	f.Add([]byte{}, []byte{255, 255, 255, 255}, uint8(3))
	f.Fuzz(func(t *testing.T, ab, bb []byte, shift uint8) {
		a, b := decodeSet(ab, shift), decodeSet(bb, shift)
		for _, m := range allMethods() {
			checkMethod(t, m, pair{"fuzz", a, b})
		}
	})
}

// FuzzSkewed checks every method on random pairs of any size ratio, large
// enough for the search-like kernels: na values against na*ratio, with a
// share of common values.
func FuzzSkewed(f *testing.F) {
	f.Add(uint64(1), uint16(100), uint16(16), uint8(10))
	f.Add(uint64(2), uint16(40), uint16(3000), uint8(50))
	f.Add(uint64(3), uint16(33), uint16(8), uint8(100))
	f.Fuzz(func(t *testing.T, seed uint64, na, ratio uint16, common uint8) {
		n, k := int(na%2000), int(ratio%5000)+1
		r := rand.New(rand.NewPCG(seed, uint64(n)<<16|uint64(k)))
		b := randomSet(r, n*k, uint64(4*n*k+64))
		a := randomSet(r, n, uint64(4*n*k+64))
		// Replace a share of a by values of b, keeping a a set.
		for i := range a {
			if len(b) > 0 && r.IntN(100) < int(common%101) {
				a[i] = b[r.IntN(len(b))]
			}
		}
		slices.Sort(a)
		a = slices.Compact(a)
		for _, m := range allMethods() {
			checkMethod(t, m, pair{"fuzz skewed", a, b})
		}
	})
}

// decodeSet reads little-endian 16-bit deltas shifted left, so that small
// fuzz inputs still reach large values and dense overlaps.
func decodeSet(p []byte, shift uint8) []uint32 {
	s := []uint32{}
	var x uint64
	for i := 0; i+1 < len(p); i += 2 {
		x += uint64(p[i]) | uint64(p[i+1])<<8
		v := x << (shift % 17)
		if v > math.MaxUint32 {
			break
		}
		if len(s) > 0 && uint32(v) <= s[len(s)-1] {
			continue
		}
		s = append(s, uint32(v))
	}
	return s
}

func TestPairsAreSets(t *testing.T) {
	for _, p := range testPairs() {
		for _, s := range [][]uint32{p.a, p.b} {
			for i := 1; i < len(s); i++ {
				if s[i-1] >= s[i] {
					t.Fatalf("%s: not strictly increasing at %d", p.name, i)
				}
			}
		}
	}
}
