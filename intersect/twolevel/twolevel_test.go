package twolevel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/intersect"
)

// reference is the intersection every kernel is checked against.
func reference(a, b []uint32) []uint32 { return settest.Reference(a, b) }

// randomSet returns n distinct values in [lo, lo+universe), sorted.
func randomSet(r *rand.Rand, n int, lo, universe uint64) []uint32 {
	return settest.RandomSet(r, n, lo, universe)
}

// grouped returns a set with one group of each given size, the groups at
// random distinct upper halves and each group's lower halves random.
func grouped(r *rand.Rand, sizes ...int) []uint32 {
	keys := randomSet(r, len(sizes), 0, 1<<16)
	var s []uint32
	for i, k := range keys {
		s = append(s, randomSet(r, sizes[i], uint64(k)<<16, 1<<16)...)
	}
	return s
}

// runs returns a set of random runs of consecutive values, with random
// gaps, within the group at base (and sometimes the next one).
func runs(r *rand.Rand, base uint64) []uint32 {
	var s []uint32
	x := base + uint64(r.IntN(100))
	for len(s) < 3000 && x < base+1<<17 {
		n := 1 + r.IntN([]int{3, 40, 200}[r.IntN(3)])
		for i := 0; i < n; i++ {
			s = append(s, uint32(x))
			x++
		}
		x += 1 + uint64(r.IntN([]int{2, 50, 2000}[r.IntN(3)]))
	}
	return s
}

// seq returns n values lo, lo+step, ...
func seq(lo uint64, n int, step uint64) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(lo + uint64(i)*step)
	}
	return s
}

type pair struct {
	name string
	a, b []uint32
}

// testPairs returns adversarial and random input pairs. Group sizes and
// overlaps straddle the kernel's block sizes (chunks of 8 stream values,
// windows of 32), so that every tail is exercised.
func testPairs() []pair {
	max32 := uint64(math.MaxUint32)
	r := rand.New(rand.NewPCG(1, 2))
	ps := []pair{
		{"both empty", nil, nil},
		{"one empty", nil, []uint32{1, 2, 3}},
		{"single equal", []uint32{7}, []uint32{7}},
		{"single differ", []uint32{7}, []uint32{8}},
		{"same low, other group", []uint32{7}, []uint32{1<<16 | 7}},
		{"zero and max", []uint32{0, math.MaxUint32}, []uint32{0, math.MaxUint32}},
		{"max only", []uint32{math.MaxUint32}, []uint32{1, 5, math.MaxUint32}},
		{"zero only", []uint32{0}, []uint32{0, 1, 2}},
		{"zero against high group", []uint32{0}, []uint32{1 << 16, 2 << 16}},
		{"identical 100", seq(0, 100, 3), seq(0, 100, 3)},
		{"disjoint interleaved", seq(0, 1000, 2), seq(1, 1000, 2)},
		{"disjoint ranges", seq(0, 500, 1), seq(1000, 500, 1)},
		{"nested", seq(0, 1000, 1), seq(100, 17, 7)},
		{"top of range", seq(max32-999, 1000, 1), seq(max32-1999, 1000, 2)},
		{"high bit crossing", seq(1<<31-50, 100, 1), seq(1<<31-10, 100, 1)},
		{"full group", seq(5<<16, 1<<16, 1), seq(5<<16, 1<<16, 1)},
		{"full group vs odd", seq(5<<16, 1<<16, 1), seq(5<<16+1, 1<<15, 2)},
		{"full group vs one", seq(5<<16, 1<<16, 1), []uint32{5<<16 | 65535}},
		{"full group vs last", []uint32{5<<16 | 65535}, seq(5<<16, 1<<16, 1)},
		{"top group full", seq(max32-65535, 1<<16, 1), seq(max32-65535, 21846, 3)},
		{"own groups", seq(3, 5000, 1<<16), seq(3, 3000, 1<<16)},
		{"own groups shifted", seq(3, 5000, 1<<16), seq(4, 3000, 1<<16)},
		{"own groups vs dense", seq(0, 65536, 1<<16), seq(0, 200000, 1)},
		{"all groups of both", seq(0, 1<<16, 1<<16), seq(0, 1<<16, 1<<16)},
		{"lows 0 and 65535", []uint32{0, 65535, 1 << 16, 1<<16 | 65535}, []uint32{0, 65535, 1 << 16, 1<<16 | 65535}},
	}
	// Groups of sizes around the block sizes, paired with each other within
	// one upper half, dense (universe 2 * size) and sparse.
	sizes := []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 1000, 4097}
	for _, na := range sizes {
		for _, nb := range sizes {
			for _, u := range []uint64{2 * uint64(max(na, nb)), 1 << 16} {
				ps = append(ps, pair{fmt.Sprintf("group %d x %d over %d", na, nb, u),
					randomSet(r, na, 7<<16, u), randomSet(r, nb, 7<<16, u)})
			}
		}
	}
	// Many groups of one size, both sets drawing from the same few upper
	// halves so that most groups pair up.
	for _, g := range []int{1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65} {
		for _, dense := range []bool{false, true} {
			u := uint64(1 << 16)
			if dense {
				u = uint64(2 * g)
			}
			var a, b []uint32
			for k := uint64(0); k < 40; k++ {
				if r.IntN(4) > 0 {
					a = append(a, randomSet(r, g, k<<16, u)...)
				}
				if r.IntN(4) > 0 {
					b = append(b, randomSet(r, g+r.IntN(3)-1, k<<16, u)...)
				}
			}
			ps = append(ps, pair{fmt.Sprintf("groups of %d dense=%v", g, dense), a, b})
		}
	}
	for _, n := range []int{1, 10, 1000, 100000} {
		for _, u := range []uint64{1 << 17, 1 << 20, 1 << 24, 1 << 32} {
			ps = append(ps, pair{fmt.Sprintf("random %d over %d", n, u),
				randomSet(r, n, 0, u), randomSet(r, n+r.IntN(n+1), 0, u)})
		}
	}
	// Runs and gaps within one group: long stretches of one set fall
	// between two values of the other, so a kernel that consumes too much
	// or too little of one side shows.
	for trial := 0; trial < 30; trial++ {
		base := uint64(r.IntN(4)) << 16
		ps = append(ps, pair{fmt.Sprintf("runs %d", trial), runs(r, base), runs(r, base)})
	}
	ps = append(ps,
		pair{"half then overlap", append(seq(0, 500, 1), seq(1000, 500, 1)...), seq(1000, 400, 1)},
		pair{"overlap at the end", append(seq(0, 3000, 1), seq(60000, 100, 1)...), seq(59990, 100, 1)},
		pair{"comb vs block", seq(0, 2000, 32), seq(30000, 2000, 1)},
		pair{"uneven groups", grouped(r, 1, 5000, 3, 64, 65536, 40), grouped(r, 65536, 2, 33, 700, 1, 9)},
		pair{"skew 1:100", randomSet(r, 1000, 0, 1<<20), randomSet(r, 100000, 0, 1<<20)},
		pair{"skew 1:1000 sparse", randomSet(r, 100, 0, 1<<32), randomSet(r, 100000, 0, 1<<32)},
	)
	return ps
}

func allMethods() []Method {
	auto, _ := Lookup("auto")
	return append(Methods(), auto)
}

func TestRoundTrip(t *testing.T) {
	for _, p := range testPairs() {
		for _, s := range [][]uint32{p.a, p.b} {
			t2 := FromSorted(s)
			if got := t2.AppendTo([]uint32{9}); got[0] != 9 || !slices.Equal(got[1:], s) {
				t.Fatalf("%s: AppendTo(FromSorted(s)) differs from s", p.name)
			}
			if t2.Len() != len(s) {
				t.Fatalf("%s: Len = %d, want %d", p.name, t2.Len(), len(s))
			}
			groups := map[uint32]bool{}
			for _, x := range s {
				groups[x>>16] = true
			}
			if t2.Groups() != len(groups) || t2.SizeBytes() != 4*len(groups)+2*len(s) {
				t.Fatalf("%s: Groups = %d, SizeBytes = %d; want %d groups", p.name, t2.Groups(), t2.SizeBytes(), len(groups))
			}
		}
	}
	var zero Set
	if zero.Len() != 0 || len(zero.AppendTo(nil)) != 0 || Count(&zero, FromSorted([]uint32{1})) != 0 {
		t.Fatal("the zero Set is not empty")
	}
}

func TestFromSortedPanics(t *testing.T) {
	for _, s := range [][]uint32{{2, 1}, {1, 1}, {0, 5, 5, 6}} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, "not strictly increasing") {
					t.Errorf("FromSorted(%v) did not panic with a clear message: %q", s, msg)
				}
			}()
			FromSorted(s)
		}()
	}
}

func TestMethods(t *testing.T) {
	ps := testPairs()
	for _, m := range allMethods() {
		t.Run(m.Name, func(t *testing.T) {
			for _, p := range ps {
				checkMethod(t, m, p)
				checkMethod(t, m, pair{p.name + " swapped", p.b, p.a})
			}
		})
	}
}

func checkMethod(t *testing.T, m Method, p pair) {
	t.Helper()
	want := reference(p.a, p.b)
	// The plain-slice package must agree: it is what the layout competes
	// with.
	if n := intersect.Count(p.a, p.b); n != len(want) {
		t.Fatalf("%s: intersect.Count = %d, reference %d", p.name, n, len(want))
	}
	a, b := FromSorted(p.a), FromSorted(p.b)
	ac, bc := a.clone(), b.clone()
	if got := m.Count(a, b); got != len(want) {
		t.Fatalf("%s: %s Count = %d, want %d", m.Name, p.name, got, len(want))
	}
	// Intersect must append after existing content and leave it alone.
	prefix := []uint32{42, 43}
	got := m.Intersect(slices.Clone(prefix), a, b)
	if !slices.Equal(got[:2], prefix) || !slices.Equal(got[2:], want) {
		t.Fatalf("%s: %s Intersect = %v, want %v after the prefix", m.Name, p.name, head(got), head(want))
	}
	dst := make([]uint32, 0, len(want)+64)
	if got := m.Intersect(dst, a, b); !slices.Equal(got, want) {
		t.Fatalf("%s: %s Intersect into spare capacity = %v, want %v", m.Name, p.name, head(got), head(want))
	}
	s := m.IntersectSet(a, b)
	if got := s.AppendTo(nil); !slices.Equal(got, want) {
		t.Fatalf("%s: %s IntersectSet = %v, want %v", m.Name, p.name, head(got), head(want))
	}
	if w := FromSorted(want); !slices.Equal(s.hdr, w.hdr) || !slices.Equal(s.lows, w.lows) {
		t.Fatalf("%s: %s IntersectSet is not in canonical form", m.Name, p.name)
	}
	if !a.equal(ac) || !b.equal(bc) {
		t.Fatalf("%s: %s: inputs modified", m.Name, p.name)
	}
}

func head(s []uint32) []uint32 { return s[:min(len(s), 20)] }

func (s *Set) clone() *Set { return &Set{hdr: slices.Clone(s.hdr), lows: slices.Clone(s.lows)} }

func (s *Set) equal(t *Set) bool { return slices.Equal(s.hdr, t.hdr) && slices.Equal(s.lows, t.lows) }

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

func TestCountAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := FromSorted(randomSet(r, 5000, 0, 1<<20)), FromSorted(randomSet(r, 5000, 0, 1<<20))
	small := FromSorted(randomSet(r, 10, 0, 1<<20))
	for _, m := range Methods() {
		if n := testing.AllocsPerRun(10, func() { m.Count(a, b); m.Count(small, b) }); n != 0 {
			t.Errorf("%s: Count allocated %v times", m.Name, n)
		}
	}
}

// FuzzMethods decodes two sets from the fuzzer's bytes and checks every
// method against the reference.
func FuzzMethods(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, []byte{3, 4, 5, 6}, uint8(0))
	f.Add([]byte{}, []byte{255, 255, 255, 255}, uint8(3))
	f.Add([]byte{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, []byte{2, 0, 2, 0, 2, 0, 2, 0, 2, 0}, uint8(16))
	f.Fuzz(func(t *testing.T, ab, bb []byte, shift uint8) {
		a, b := decodeSet(ab, shift), decodeSet(bb, shift)
		for _, m := range allMethods() {
			checkMethod(t, m, pair{"fuzz", a, b})
		}
	})
}

// decodeSet reads bytes as deltas (a zero byte meaning a jump of 65536 so
// that groups change often) shifted left, so that small fuzz inputs reach
// large values, long groups and dense overlaps alike.
func decodeSet(p []byte, shift uint8) []uint32 {
	s := []uint32{}
	var x uint64
	for i, c := range p {
		d := uint64(c)
		if d == 0 {
			d = 1 << 16
		}
		if i > 0 || c != 0 {
			x += d << (shift % 8)
		}
		if x > math.MaxUint32 {
			break
		}
		s = append(s, uint32(x))
	}
	return s
}
