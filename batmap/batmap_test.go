package batmap

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

func randomSet(r *rand.Rand, n int, universe uint64) []uint32 {
	return settest.RandomSet(r, n, 0, universe)
}

func seq(lo, n, step uint64) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(lo + uint64(i)*step)
	}
	return s
}

type collection struct {
	name     string
	c        *sets.Collection
	universe uint64 // 0: from the data
}

// collections returns random and adversarial collections.
func collections() []collection {
	r := rand.New(rand.NewPCG(1, 2))
	var out []collection
	add := func(name string, universe uint64, ss ...[]uint32) {
		out = append(out, collection{name, sets.FromSets(ss...), universe})
	}
	add("empty-collection", 0)
	add("one-set", 0, []uint32{5})
	add("empties", 10, nil, nil, []uint32{1}, nil)
	add("universe-1", 1, []uint32{0}, []uint32{0}, nil, []uint32{0})
	add("max-element", 1<<32, []uint32{0, math.MaxUint32}, []uint32{math.MaxUint32}, []uint32{0, 1, math.MaxUint32 - 1, math.MaxUint32})
	add("identical", 0, seq(3, 500, 7), seq(3, 500, 7), seq(3, 500, 7))
	add("disjoint", 0, seq(0, 300, 2), seq(1, 300, 2), seq(1000, 50, 1))
	full := seq(0, 2000, 1)
	add("every-element", 2000, full, full, seq(0, 1000, 2), seq(1, 5, 1), []uint32{1999})
	// Strides of powers of two: positions collide unless the permutations
	// mix high bits into low ones.
	add("strides", 0, seq(0, 1000, 1024), seq(0, 1000, 2048), seq(0, 500, 4096), seq(1<<20, 700, 1<<10))
	// Random sizes spanning many widths, over several universes.
	for _, u := range []uint64{100, 5000, 1 << 16, 1 << 32} {
		var ss [][]uint32
		for i := range 40 {
			n := []int{0, 1, 2, 3, 7, 8, 9, 31, 64, 100, 257, 1000, 3000}[i%13]
			if n > 0 {
				n += r.IntN(n)
			}
			ss = append(ss, randomSet(r, n, u))
		}
		add(fmt.Sprintf("random-u%d", u), 0, ss...)
	}
	// Dense tidlists as in frequent pair mining (p = 5% and 30%).
	for _, p := range []float64{0.05, 0.3} {
		var ss [][]uint32
		for range 30 {
			var s []uint32
			for x := range 4000 {
				if r.Float64() < p {
					s = append(s, uint32(x))
				}
			}
			ss = append(ss, s)
		}
		add(fmt.Sprintf("bernoulli-%v", p), 4000, ss...)
	}
	return out
}

// tooBig reports whether Build would allocate over 64 MiB: forced 8-bit
// entries over a universe of 2^32 are 3·2^26 bytes each.
func tooBig(t *testing.T, c *sets.Collection, cfg Config) bool {
	sizes := make([]int, c.Len())
	var u uint64
	for i := range sizes {
		sizes[i] = c.SetLen(i)
		if n := sizes[i]; n > 0 {
			u = max(u, uint64(c.Set(i)[n-1])+1)
		}
	}
	if cfg.Universe != 0 {
		u = cfg.Universe
	}
	l, err := NewLayout(u, sizes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l.Memory(sizes, 1) > 64<<20
}

type variant struct {
	name string
	cfg  Config
}

func variants() []variant {
	var vs []variant
	for _, eb := range []int{0, 8, 16, 32} {
		vs = append(vs, variant{fmt.Sprintf("bits=%d", eb), Config{EntryBits: eb}})
	}
	vs = append(vs,
		variant{"load=1", Config{EntryBits: 8, Load: 1}},
		variant{"load=0.7", Config{Load: 0.7}},
		variant{"maxloop=1", Config{EntryBits: 8, MaxLoop: 1, Load: 1}},
		variant{"maxloop=1,bits=32", Config{EntryBits: 32, MaxLoop: 1, Load: 0.8}},
		variant{"seed=9,threads=1", Config{Seed: 9, Threads: 1}},
		variant{"base=1", Config{Base: 1}},
		variant{"base=3", Config{Base: 3}},
		variant{"base=5,bits=16", Config{Base: 5, EntryBits: 16}},
		variant{"base=7,maxloop=1", Config{Base: 7, MaxLoop: 1, Load: 1}},
	)
	return vs
}

// checkInvariants verifies the stored form of every batmap: each element
// that did not fail is held, in exactly two entries whose indicator bits
// differ, failed elements are not held, and nothing else is stored.
func checkInvariants(t *testing.T, b *Batmaps, c *sets.Collection) {
	t.Helper()
	l := b.Layout
	codeMask := uint32(1)<<(l.EntryBits-1) - 1
	for k := range b.Len() {
		w := b.Batmap(k)
		if b.Offsets[k]%2 != 0 || len(w)%2 != 0 {
			t.Fatalf("batmap %d: offset %d, %d words: not 64-bit aligned", k, b.Offsets[k], len(w))
		}
		set := c.Set(int(b.IDs[k]))
		if len(w) != l.Words(len(set)) || int(b.Sizes[k]) != len(set) {
			t.Fatalf("batmap %d: %d words for %d elements, want %d", k, len(w), len(set), l.Words(len(set)))
		}
		if k > 0 && b.Offsets[k]-b.Offsets[k-1] > uint64(len(w)) {
			t.Fatalf("batmap %d narrower than batmap %d", k, k-1)
		}
		r := uint32(len(w) * 32 / l.EntryBits / 3)
		if int(r) != l.R(len(set)) || int(r)%l.Base != 0 || int(r)%l.R0 != 0 {
			t.Fatalf("batmap %d: range %d for %d elements, want %d (base %d, r0 %d)", k, r, len(set), l.R(len(set)), l.Base, l.R0)
		}
		entry := func(i uint32) uint32 {
			per := uint32(32 / l.EntryBits)
			return w[i/per] >> (uint32(l.EntryBits) * (i % per)) & (codeMask<<1 | 1)
		}
		failed := b.FailedAt(k)
		stored := 0
		for _, x := range set {
			var inds []uint32
			for tb := range 3 {
				p := l.perms.pi(tb, x)
				e := entry(l.index(tb, p%r))
				if e&codeMask == l.code(p) {
					inds = append(inds, e>>(l.EntryBits-1))
				}
			}
			_, isFailed := slices.BinarySearch(failed, x)
			switch {
			case isFailed && len(inds) != 0:
				t.Fatalf("batmap %d: failed element %d stored %d times", k, x, len(inds))
			case !isFailed && (len(inds) != 2 || inds[0] == inds[1]):
				t.Fatalf("batmap %d: element %d stored with indicators %v", k, x, inds)
			}
			stored += len(inds)
		}
		nonEmpty := 0
		for i := range 3 * r {
			if entry(i) != 0 {
				nonEmpty++
			}
		}
		if nonEmpty != stored {
			t.Fatalf("batmap %d: %d entries used, %d copies of elements", k, nonEmpty, stored)
		}
	}
}

func TestCountsExact(t *testing.T) {
	for _, col := range collections() {
		for _, v := range variants() {
			t.Run(col.name+"/"+v.name, func(t *testing.T) {
				cfg := v.cfg
				cfg.Universe = col.universe
				if tooBig(t, col.c, cfg) {
					t.Skip("forced entry width makes the batmaps huge")
				}
				b, err := Build(col.c, cfg)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, b, col.c)
				k := col.c.Len()
				want := make([]int, k*k)
				for i := range k {
					for j := range k {
						want[i*k+j] = settest.Count(col.c.Set(i), col.c.Set(j))
						if got := b.Count(i, j); got != want[i*k+j] {
							t.Fatalf("Count(%d, %d) = %d, want %d (layout %v, %d failures)", i, j, got, want[i*k+j], b.Layout, b.Failures())
						}
					}
				}
				for _, T := range []int{0, 4, 8} {
					checkAllPairs(t, b, want, T)
				}
			})
		}
	}
}

// checkAllPairs runs AllPairs and compares every pair with want (by set
// ids, k×k).
func checkAllPairs(t *testing.T, b *Batmaps, want []int, T int) {
	t.Helper()
	k := b.Len()
	got := make([]int, k*k)
	for i := range got {
		got[i] = -1
	}
	var mu sync.Mutex
	var pairsDone int64
	err := b.AllPairs(context.Background(), PairsOptions{TileSize: T, Threads: 3, Progress: func(d, _ int64) {
		mu.Lock()
		pairsDone = max(pairsDone, d)
		mu.Unlock()
	}}, func(w int, tl *Tile) error {
		mu.Lock()
		defer mu.Unlock()
		if tl.Row0 > tl.Col0 {
			t.Errorf("tile at (%d, %d) below the diagonal", tl.Row0, tl.Col0)
		}
		for x := range tl.Rows {
			for y := range tl.Cols {
				p, q := tl.Row0+x, tl.Col0+y
				if p >= q {
					if tl.At(x, y) != 0 {
						t.Errorf("tile entry (%d, %d) not above the diagonal is %d", p, q, tl.At(x, y))
					}
					continue
				}
				i, j := int(b.IDs[p]), int(b.IDs[q])
				if got[i*k+j] != -1 {
					t.Errorf("pair (%d, %d) delivered twice", i, j)
				}
				got[i*k+j], got[j*k+i] = int(tl.At(x, y)), int(tl.At(x, y))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		for j := range k {
			if i != j && got[i*k+j] != want[i*k+j] {
				t.Fatalf("tile size %d: pair (%d, %d) = %d, want %d", T, i, j, got[i*k+j], want[i*k+j])
			}
		}
	}
	if k > 1 && pairsDone != int64(k)*int64(k-1)/2 {
		t.Fatalf("progress reached %d pairs of %d", pairsDone, k*(k-1)/2)
	}
}

func TestFailuresForced(t *testing.T) {
	// Load 0.7 cannot hold two copies of every element: 3r < 2|S|
	// for many sets, so failures are certain, and counts must stay exact.
	r := rand.New(rand.NewPCG(3, 4))
	var ss [][]uint32
	for range 12 {
		ss = append(ss, randomSet(r, 200+r.IntN(400), 3000))
	}
	c := sets.FromSets(ss...)
	b, err := Build(c, Config{Load: 0.6, MaxLoop: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b.Failures() == 0 {
		t.Fatal("no failed insertions at load 0.6 with MaxLoop 1")
	}
	checkInvariants(t, b, c)
	for i := range c.Len() {
		for j := range c.Len() {
			if got, want := b.Count(i, j), settest.Count(c.Set(i), c.Set(j)); got != want {
				t.Fatalf("Count(%d, %d) = %d, want %d", i, j, got, want)
			}
		}
		for _, x := range []uint32{0, 1, 17, 2999, 3000, math.MaxUint32} {
			_, want := slices.BinarySearch(c.Set(i), x)
			if got := b.Contains(i, x); got != want {
				t.Fatalf("Contains(%d, %d) = %v, want %v", i, x, got, want)
			}
		}
	}
}

func TestContains(t *testing.T) {
	for _, col := range collections() {
		b, err := Build(col.c, Config{Universe: col.universe, MaxLoop: 2, Load: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		for i := range col.c.Len() {
			s := col.c.Set(i)
			for _, x := range s {
				if !b.Contains(i, x) {
					t.Fatalf("%s: set %d lacks its element %d", col.name, i, x)
				}
			}
			for range 50 {
				x := uint32(r.Uint64N(max(b.Layout.Universe, 1)))
				_, want := slices.BinarySearch(s, x)
				if got := b.Contains(i, x); got != want {
					t.Fatalf("%s: Contains(%d, %d) = %v, want %v", col.name, i, x, got, want)
				}
			}
		}
	}
}

func TestLayoutChoice(t *testing.T) {
	// Dense sets: compression pays, 8-bit entries.
	l, err := NewLayout(10000, []int{500, 800, 1000, 2000}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if l.EntryBits != 8 || l.Shift != 7 || l.R0 != 128 {
		t.Fatalf("dense sets: got %v, want 8-bit entries with s=7", l)
	}
	// 625 elements at load 2: 5·256 = 1280 wastes least (2048 with the
	// paper's powers of two).
	l, err = NewLayout(12500, []int{625, 625, 625, 625}, Config{EntryBits: 8})
	if err != nil {
		t.Fatal(err)
	}
	if l.Base != 5 || l.R(625) != 1280 {
		t.Fatalf("625 elements: base %d, range %d; want 5 and 1280", l.Base, l.R(625))
	}
	if l, _ := NewLayout(12500, []int{625}, Config{Base: 1}); l.R(625) != 2048 {
		t.Fatalf("625 elements with powers of two: range %d, want 2048", l.R(625))
	}
	// Sparse sets over a large universe: compression's minimum width
	// (3·2^s bytes, s = 25 here) would dwarf them.
	l, err = NewLayout(1<<32, []int{10, 20, 30, 5}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if l.EntryBits != 32 || l.Shift != 2 {
		t.Fatalf("sparse sets: got %v, want 32-bit entries", l)
	}
	for _, bad := range []Config{{EntryBits: 12}, {Load: -1}, {Load: math.NaN()}, {MaxLoop: -1}, {Base: 2}, {Base: 9}} {
		if _, err := NewLayout(100, []int{1}, bad); err == nil {
			t.Errorf("NewLayout accepted %+v", bad)
		}
	}
	if _, err := NewLayout(1<<32+1, nil, Config{}); err == nil {
		t.Error("NewLayout accepted a universe above 2^32")
	}
	if _, err := Build(sets.FromSets([]uint32{7}), Config{Universe: 7}); err == nil {
		t.Error("Build accepted an element outside the universe")
	}
}

func TestEntryShift(t *testing.T) {
	for _, tc := range []struct {
		m    uint64
		bits int
		s    uint
	}{
		{1, 8, 0}, {127, 8, 0}, {128, 8, 1}, {254, 8, 1}, {255, 8, 2},
		{12500, 8, 7}, {1 << 32, 8, 26}, {1 << 31, 32, 1}, {1<<31 - 1, 32, 0}, {1 << 32, 32, 2},
		{32767, 16, 0}, {32768, 16, 1},
	} {
		s := entryShift(tc.m, tc.bits)
		if s != tc.s {
			t.Errorf("entryShift(%d, %d) = %d, want %d", tc.m, tc.bits, s, tc.s)
		}
		maxCode := uint64(1)<<(tc.bits-1) - 1
		if (tc.m-1)>>s+1 > maxCode {
			t.Errorf("entryShift(%d, %d): largest code %d above %d", tc.m, tc.bits, (tc.m-1)>>s+1, maxCode)
		}
	}
}

func TestPermutations(t *testing.T) {
	for _, m := range []uint64{1, 2, 3, 100, 1000, 4096, 65537} {
		p := newPerms(m, 42)
		for tb := range 3 {
			seen := make([]bool, m)
			for x := range m {
				y := p.pi(tb, uint32(x))
				if uint64(y) >= m || seen[y] {
					t.Fatalf("π_%d over %d is not a permutation at %d -> %d", tb, m, x, y)
				}
				seen[y] = true
			}
		}
		q := newPerms(m, 42)
		q.tabulate(2)
		for tb := range 3 {
			for x := range m {
				if p.pi(tb, uint32(x)) != q.pi(tb, uint32(x)) {
					t.Fatalf("tabulated π_%d differs at %d", tb, x)
				}
			}
		}
	}
}

func TestCountWords(t *testing.T) {
	c := sets.FromSets(seq(0, 300, 3), seq(0, 40, 1), seq(1, 900, 1))
	b, err := Build(c, Config{EntryBits: 8, Universe: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for j := range 3 {
			if i == j {
				continue
			}
			p, q := b.Position(i), b.Position(j)
			want := settest.Count(c.Set(i), c.Set(j))
			if got := CountWords(b.Batmap(p), b.Batmap(q), 8); got != want {
				t.Errorf("CountWords(%d, %d) = %d, want %d", i, j, got, want)
			}
			// The same words at an odd address take the 32-bit path.
			buf := make([]uint32, len(b.Batmap(p))+1)
			copy(buf[1:], b.Batmap(p))
			if got := CountWords(buf[1:], b.Batmap(q), 8); got != want {
				t.Errorf("unaligned CountWords(%d, %d) = %d, want %d", i, j, got, want)
			}
		}
	}
	if CountWords(nil, b.Batmap(0), 8) != 0 {
		t.Error("CountWords with an empty batmap is not 0")
	}
	defer func() {
		if recover() == nil {
			t.Error("CountWords of lengths 6 and 4 did not panic")
		}
	}()
	CountWords(make([]uint32, 6), make([]uint32, 4), 8)
}

// TestKernels checks the kernel in use against the portable one on random
// words, including every entry width's corner values.
func TestKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, eb := range []int{8, 16, 32} {
		hi, lo := masks(eb)
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200} {
			mk := func() []uint64 {
				w := make([]uint64, n)
				for i := range w {
					// Few distinct values, so that equal entries are common.
					w[i] = []uint64{0, ^uint64(0), hi, ^hi, lo, r.Uint64(), r.Uint64() & 0x0101010180808080}[r.IntN(7)]
					if r.IntN(2) == 0 {
						w[i] = r.Uint64() & 0x8383838383838383
					}
				}
				return w
			}
			a, b0, b1, b2, b3 := mk(), mk(), mk(), mk(), mk()
			k := kernelFor(eb)
			for _, b := range [][]uint64{a, b0} {
				if got, want := k.one(a, b), countGeneric(a, b, hi, lo); got != want {
					t.Fatalf("%s %d bits, %d words: one = %d, want %d", Kernel(), eb, n, got, want)
				}
			}
			g0, g1, g2, g3 := k.four(a, b0, b1, b2, b3)
			w0, w1, w2, w3 := countGeneric(a, b0, hi, lo), countGeneric(a, b1, hi, lo), countGeneric(a, b2, hi, lo), countGeneric(a, b3, hi, lo)
			if g0 != w0 || g1 != w1 || g2 != w2 || g3 != w3 {
				t.Fatalf("%s %d bits, %d words: four = %d %d %d %d, want %d %d %d %d", Kernel(), eb, n, g0, g1, g2, g3, w0, w1, w2, w3)
			}
		}
	}
}

// TestFormula checks the SWAR formula entry by entry against its
// definition, for every pair of 8-bit entries.
func TestFormula(t *testing.T) {
	hi, lo := masks(8)
	for x := range 256 {
		for y := range 256 {
			want := 0
			if x&0x7f == y&0x7f && (x|y)&0x80 != 0 {
				want = 1
			}
			// Put the pair in every byte lane, next to lanes that borrow.
			for lane := range 8 {
				xw := uint64(x)<<(8*lane) | 0x00ff00ff00ff00ff&^(0xff<<(8*lane))
				yw := uint64(y)<<(8*lane) | 0x0000ff00ff00ff00&^(0xff<<(8*lane))
				other := countGeneric([]uint64{xw &^ (0xff << (8 * lane))}, []uint64{yw &^ (0xff << (8 * lane))}, hi, lo)
				if got := countGeneric([]uint64{xw}, []uint64{yw}, hi, lo) - other; got != want {
					t.Fatalf("entries %#x, %#x in lane %d: %d matches, want %d", x, y, lane, got, want)
				}
			}
		}
	}
}

func TestAllPairsStops(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var ss [][]uint32
	for range 64 {
		ss = append(ss, randomSet(r, 50, 1000))
	}
	b, err := Build(sets.FromSets(ss...), Config{})
	if err != nil {
		t.Fatal(err)
	}
	stop := fmt.Errorf("stop")
	if err := b.AllPairs(context.Background(), PairsOptions{TileSize: 4}, func(int, *Tile) error { return stop }); err != stop {
		t.Fatalf("AllPairs returned %v, want the callback's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.AllPairs(ctx, PairsOptions{TileSize: 4}, func(int, *Tile) error { return nil }); err != context.Canceled {
		t.Fatalf("AllPairs returned %v, want context.Canceled", err)
	}
}

// FuzzCount builds batmaps of sets decoded from the fuzzer's bytes, with
// the configuration they choose, and checks every count.
func FuzzCount(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 255, 4, 5}, uint8(8), uint8(1), uint16(300))
	f.Add([]byte{9, 9, 9, 1, 0, 0, 0, 7}, uint8(32), uint8(2), uint16(7))
	f.Fuzz(func(t *testing.T, data []byte, eb, maxLoop uint8, universe uint16) {
		u := uint64(universe) + 1
		var ss [][]uint32
		var cur []uint32
		for _, x := range data {
			if x == 255 {
				ss = append(ss, cur)
				cur = nil
				continue
			}
			cur = append(cur, uint32(uint64(x)*uint64(x)*31%u))
		}
		ss = append(ss, cur)
		c := sets.FromSets(ss...)
		bits := []int{8, 16, 32}[eb%3]
		b, err := Build(c, Config{Universe: u, EntryBits: bits, MaxLoop: int(maxLoop%4) + 1, Load: []float64{0.7, 1, 2}[eb%3]})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, b, c)
		for i := range c.Len() {
			for j := range c.Len() {
				if got, want := b.Count(i, j), settest.Count(c.Set(i), c.Set(j)); got != want {
					t.Fatalf("Count(%d, %d) = %d, want %d", i, j, got, want)
				}
			}
		}
	})
}

// TestSegmentedTile covers tiles of wide batmaps of one width, which
// AllPairs compares a segment at a time, against Count's path.
func TestSegmentedTile(t *testing.T) {
	c := bernoulli(13, 20000, 0.15, 3)
	k := c.Len()
	want := make([]int, k*k)
	for i := range k {
		for j := range k {
			want[i*k+j] = settest.Count(c.Set(i), c.Set(j))
		}
	}
	for _, base := range []int{1, 5} {
		b, err := Build(c, Config{Load: 2, Base: base})
		if err != nil {
			t.Fatal(err)
		}
		if w := len(b.batmap64(0)); w <= segment || w != len(b.batmap64(b.Len()-1)) {
			t.Fatalf("base %d: batmaps of %d..%d words: not one width above a segment", base, w, len(b.batmap64(b.Len()-1)))
		}
		for _, T := range []int{4, 8, 16} {
			checkAllPairs(t, b, want, T)
		}
	}
}

// The runs of tileOrder give the tiles in the order a stable sort of all
// of them, heaviest first, would: every tile once, each as costly as the
// next or more, ties by row then column; widths may be in any order.
func TestTileOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		n, T := 1+r.IntN(60), 4*(1+r.IntN(3))
		b := &Batmaps{IDs: make([]uint32, n), Offsets: make([]uint64, n+1)}
		for k := range n {
			b.Offsets[k+1] = b.Offsets[k] + 2*uint64(1+r.IntN(3))
		}
		if r.IntN(2) == 0 { // widths as AllPairs has them: increasing
			slices.Sort(b.Offsets)
			for k := range n {
				b.Offsets[k+1] = max(b.Offsets[k+1], 2*b.Offsets[k]-b.Offsets[max(k-1, 0)])
			}
		}
		nt := (n + T - 1) / T
		type tile struct {
			p, q int
			cost uint64
		}
		var want []tile
		for p := range nt {
			for q := p; q < nt; q++ {
				last := min((q+1)*T, n) - 1
				want = append(want, tile{p, q, b.Offsets[last+1] - b.Offsets[last]})
			}
		}
		slices.SortStableFunc(want, func(x, y tile) int { return int(int64(y.cost) - int64(x.cost)) })
		o := b.tileOrder(nt, T)
		if o.len() != int64(len(want)) {
			t.Fatalf("n %d, T %d: %d tiles, want %d", n, T, o.len(), len(want))
		}
		for i, w := range want {
			if p, q := o.at(int64(i)); p != w.p || q != w.q {
				t.Fatalf("n %d, T %d: tile %d is (%d, %d), want (%d, %d)", n, T, i, p, q, w.p, w.q)
			}
		}
	}
}
