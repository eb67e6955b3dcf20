package gpuintersect

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/intersect"
)

// openEngine returns an engine on device 0, or skips saying why there is
// no GPU.
func openEngine(t testing.TB) *Engine {
	t.Helper()
	gputest.Need(t, gpurt.Available())
	dev, err := gpurt.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(dev)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
		dev.Close()
	})
	return e
}

// randomSet returns about n distinct sorted values from [lo, lo+span).
func randomSet(rng *rand.Rand, n int, lo, span uint64) []uint32 {
	if span == 0 {
		return nil
	}
	m := make(map[uint32]struct{}, n)
	for range n {
		m[uint32(lo+rng.Uint64N(span))] = struct{}{}
	}
	s := make([]uint32, 0, len(m))
	for x := range m {
		s = append(s, x)
	}
	slices.Sort(s)
	return s
}

// run returns a strictly increasing run [from, from+n).
func run(from uint32, n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = from + uint32(i)
	}
	return s
}

func step(from uint32, n int, by uint32) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = from + uint32(i)*by
	}
	return s
}

type pair struct {
	name string
	a, b []uint32
}

// cases returns adversarial pairs and random ones of sizes that are not
// multiples of any block or chunk size.
func cases() []pair {
	const max = ^uint32(0)
	rng := rand.New(rand.NewPCG(7, 11))
	ps := []pair{
		{"empty-empty", nil, nil},
		{"empty-one", nil, []uint32{5}},
		{"one-one-equal", []uint32{5}, []uint32{5}},
		{"one-one-differ", []uint32{5}, []uint32{6}},
		{"zero", []uint32{0}, []uint32{0, 1}},
		{"max", []uint32{max}, []uint32{max - 1, max}},
		{"zero-and-max", []uint32{0, max}, []uint32{0, 7, max}},
		{"ends-only", []uint32{0, 1, 2, max - 2, max - 1, max}, []uint32{0, max}},
		{"identical", run(1000, ipItems*threads*3+17), run(1000, ipItems*threads*3+17)},
		{"identical-top", run(max-99999, 100000), run(max-99999, 100000)},
		{"disjoint-interleaved", step(0, 50001, 2), step(1, 50001, 2)},
		{"disjoint-ranges", run(0, 10000), run(20000, 10000)},
		{"touching-ranges", run(0, 10001), run(10000, 10000)},
		{"subset", step(0, 100000, 3), step(300, 1000, 9)},
		{"skewed", randomSet(rng, 13, 0, 1<<20), randomSet(rng, 700001, 0, 1<<20)},
		{"skewed-rev", randomSet(rng, 300001, 0, 1<<22), randomSet(rng, 3, 0, 1<<22)},
		{"dense", randomSet(rng, 150000, 0, 200000), randomSet(rng, 150000, 0, 200000)},
		{"sparse-full-range", randomSet(rng, 100000, 0, 1<<32), randomSet(rng, 100000, 0, 1<<32)},
		{"block-sizes", randomSet(rng, ipItems*threads-1, 0, 3*ipItems*threads), randomSet(rng, probeChunk+1, 0, 3*ipItems*threads)},
		{"ip-block-sizes", run(0, defaultIP.threads*defaultIP.items+1), step(0, defaultIP.threads*defaultIP.items-1, 2)},
		{"mixed-with-max", append(randomSet(rng, 40000, 1<<32-100000, 99999), max), append(randomSet(rng, 40000, 1<<32-100000, 99999), max)},
	}
	// Runs that alternate between the sets stress the cross-block ties of
	// the Intersect Path partition.
	var x, y []uint32
	for v := uint32(0); v < 400000; v++ {
		switch (v / 37) % 3 {
		case 0:
			x = append(x, v)
		case 1:
			y = append(y, v)
		default:
			x, y = append(x, v), append(y, v)
		}
	}
	ps = append(ps, pair{"runs", x, y})
	for i := range 4 {
		n := 1000 + rng.IntN(300000)
		span := uint64(n) * (1 + rng.Uint64N(20))
		ps = append(ps, pair{fmt.Sprintf("random%d", i), randomSet(rng, n, 0, span), randomSet(rng, n/(1+rng.IntN(4)), 0, span)})
	}
	return ps
}

func TestLookup(t *testing.T) {
	for _, m := range Methods() {
		got, err := Lookup(m.String())
		if err != nil || got != m {
			t.Errorf("Lookup(%q) = %v, %v", m.String(), got, err)
		}
	}
	if m, err := Lookup("auto"); err != nil || m != Auto {
		t.Errorf("Lookup(auto) = %v, %v", m, err)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup(nope) succeeded")
	}
	if s := Method(99).String(); s != "Method(99)" {
		t.Errorf("Method(99) = %q", s)
	}
}

func TestTrim(t *testing.T) {
	a, b := trim([]uint32{1, 5, 9, 20}, []uint32{6, 9, 10, 30})
	if !slices.Equal(a, []uint32{9, 20}) || !slices.Equal(b, []uint32{6, 9, 10}) {
		t.Errorf("trim = %v, %v", a, b)
	}
	if a, b := trim([]uint32{1, 2}, []uint32{3, 4}); a != nil || b != nil {
		t.Errorf("disjoint trim = %v, %v", a, b)
	}
	if a, b := trim([]uint32{0, ^uint32(0)}, []uint32{^uint32(0)}); !slices.Equal(a, []uint32{^uint32(0)}) || len(b) != 1 {
		t.Errorf("trim at max = %v, %v", a, b)
	}
}

// TestPlanTiles checks that tiles cover every match exactly once and keep
// to their limits.
func TestPlanTiles(t *testing.T) {
	for _, p := range cases() {
		a, b := trim(p.a, p.b)
		want := intersect.Count(a, b)
		for _, lim := range []struct {
			elems int
			span  uint64
		}{{2, 0}, {3, 0}, {1000, 0}, {1 << 30, 0}, {5000, 4096}, {1 << 30, 1 << 16}, {1 << 30, 1}} {
			if (lim.elems < 1000 || lim.span == 1) && len(a)+len(b) > 20000 {
				continue // thousands of tiles: slow, and no new case
			}
			ts, err := planTiles(a, b, lim.elems, lim.span)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for i, tl := range ts {
				if tl.elems() > lim.elems {
					t.Fatalf("%s %+v: tile %d holds %d elements", p.name, lim, i, tl.elems())
				}
				if lim.span > 0 && uint64(tl.hi)-uint64(tl.lo)+1 > lim.span {
					t.Fatalf("%s %+v: tile %d spans %d..%d", p.name, lim, i, tl.lo, tl.hi)
				}
				if i > 0 && tl.lo <= ts[i-1].hi {
					t.Fatalf("%s %+v: tiles %d and %d overlap", p.name, lim, i-1, i)
				}
				ta, tb := a[tl.a0:tl.a1], b[tl.b0:tl.b1]
				if ta[0] < tl.lo || ta[len(ta)-1] > tl.hi || tb[0] < tl.lo || tb[len(tb)-1] > tl.hi {
					t.Fatalf("%s %+v: tile %d's elements leave [%d, %d]", p.name, lim, i, tl.lo, tl.hi)
				}
				got += intersect.Count(ta, tb)
			}
			if got != want {
				t.Errorf("%s %+v: tiles count %d, want %d", p.name, lim, got, want)
			}
		}
	}
	if _, err := planTiles([]uint32{1}, []uint32{1}, 1, 0); err == nil {
		t.Error("planTiles with room for one element succeeded")
	}
}

func TestLimits(t *testing.T) {
	for _, m := range Methods() {
		for _, mat := range []bool{false, true} {
			n := m.need(mat)
			elems, span := n.limits(1 << 30)
			if elems < 1<<25 || float64(elems)*n.perElem > 1<<30 {
				t.Errorf("%v: %d elements per GiB", m, elems)
			}
			if (n.bitmaps > 0) != (span > 0) || span > 1<<32 {
				t.Errorf("%v: span %d with %d bitmaps", m, span, n.bitmaps)
			}
			if n.bitmaps > 0 && float64(elems)*n.perElem+float64(span)/8*float64(n.bitmaps) > 1<<30 {
				t.Errorf("%v: plan exceeds the budget", m)
			}
		}
	}
}

// TestMethods runs every method on every case, through every entry point,
// against the CPU's intersect package.
func TestMethods(t *testing.T) {
	e := openEngine(t)
	for _, p := range cases() {
		want := intersect.Intersect(nil, p.a, p.b)
		sa, err := e.Upload(p.a)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := e.Upload(p.b)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Methods() {
			for _, swap := range []bool{false, true} {
				a, b, da, db := p.a, p.b, sa, sb
				if swap {
					a, b, da, db = b, a, db, da
				}
				name := fmt.Sprintf("%s/%v/swap=%v", p.name, m, swap)
				if n, err := e.Count(a, b, m); err != nil || n != len(want) {
					t.Errorf("%s: Count = %d, %v; want %d", name, n, err, len(want))
				}
				got, err := e.Intersect([]uint32{42}, a, b, m)
				if err != nil || got[0] != 42 || !slices.Equal(got[1:], want) {
					t.Errorf("%s: Intersect: %v; %s", name, err, diff(got[1:], want))
				}
				if n, _, err := e.CountSets(da, db, m); err != nil || n != len(want) {
					t.Errorf("%s: CountSets = %d, %v; want %d", name, n, err, len(want))
				}
				out, _, err := e.IntersectSets(da, db, m)
				if err != nil {
					t.Errorf("%s: IntersectSets: %v", name, err)
					continue
				}
				got, err = e.Download(nil, out)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("%s: IntersectSets: %v; %s", name, err, diff(got, want))
				}
				e.Free(out)
			}
		}
		e.Free(sa)
		e.Free(sb)
	}
}

// TestIPShapes runs the ip method in other block shapes than the default,
// and with tiles loaded through registers. Only the default shape is
// prebuilt: the others need NVRTC.
func TestIPShapes(t *testing.T) {
	base := openEngine(t)
	if _, _, err := gpurt.Compiler(); err != nil {
		t.Skipf("%v: the shapes other than the default are compiled at run time; skipping", err)
	}
	for _, cfg := range []ipConfig{{256, 15, true, false}, {128, 7, false, false}, {1024, 11, false, false}, {512, 23, true, false},
		{512, 23, false, true}, {128, 5, false, true}, {256, 15, true, true}} {
		e, err := newEngine(base.Device(), cfg, gpurt.NewStager(stageSlots, stageBytes))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cases() {
			want := intersect.Intersect(nil, p.a, p.b)
			sa, _ := e.Upload(p.a)
			sb, _ := e.Upload(p.b)
			if n, _, err := e.CountSets(sa, sb, IP); err != nil || n != len(want) {
				t.Errorf("%v %s: CountSets = %d, %v; want %d", cfg, p.name, n, err, len(want))
			}
			out, _, err := e.IntersectSets(sa, sb, IP)
			if err != nil {
				t.Fatalf("%v %s: %v", cfg, p.name, err)
			}
			got, _ := e.Download(nil, out)
			if !slices.Equal(got, want) {
				t.Errorf("%v %s: IntersectSets: %s", cfg, p.name, diff(got, want))
			}
			e.Free(out)
			e.Free(sa)
			e.Free(sb)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSmallStaging runs uploads and downloads through a ring of three
// slots of 4 KiB, so that every set larger than 1,024 elements cycles
// through the ring many times, in tiles that reuse it.
func TestSmallStaging(t *testing.T) {
	base := openEngine(t)
	e, err := newEngine(base.Device(), defaultIP, gpurt.NewStager(3, 4096))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, limit := range []uint64{0, 256 << 10} {
		e.MemoryLimit = limit
		for _, p := range cases() {
			want := intersect.Intersect(nil, p.a, p.b)
			for _, m := range []Method{IP, HI} {
				name := fmt.Sprintf("%s/%v/limit=%d", p.name, m, limit)
				if n, err := e.Count(p.a, p.b, m); err != nil || n != len(want) {
					t.Errorf("%s: Count = %d, %v; want %d", name, n, err, len(want))
				}
				got, err := e.Intersect(nil, p.a, p.b, m)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("%s: Intersect: %v; %s", name, err, diff(got, want))
				}
			}
			s, err := e.Upload(p.a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Download([]uint32{7}, s)
			if err != nil || got[0] != 7 || !slices.Equal(got[1:], p.a) {
				t.Errorf("%s: Upload and Download: %v; %s", p.name, err, diff(got[1:], p.a))
			}
			e.Free(s)
		}
	}
}

// TestTiling forces problems into many tiles with a small memory limit.
func TestTiling(t *testing.T) {
	e := openEngine(t)
	e.MemoryLimit = 256 << 10 // about 60,000 elements, 1M values of bitmap
	rng := rand.New(rand.NewPCG(3, 4))
	a := randomSet(rng, 500000, 0, 5_000_000)
	b := randomSet(rng, 400000, 0, 5_000_000)
	a = append(a, ^uint32(0))
	b = append(b, ^uint32(0))
	want := intersect.Intersect(nil, a, b)
	for _, m := range Methods() {
		if n, err := e.Count(a, b, m); err != nil || n != len(want) {
			t.Errorf("%v: Count = %d, %v; want %d", m, n, err, len(want))
		}
		got, err := e.Intersect(nil, a, b, m)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%v: Intersect: %v; %s", m, err, diff(got, want))
		}
	}
}

// TestLarge checks a problem bigger than the staging pipeline's buffers,
// through the package-level functions.
func TestLarge(t *testing.T) {
	e := openEngine(t)
	rng := rand.New(rand.NewPCG(5, 6))
	n := 6_000_003
	a := make([]uint32, 0, n)
	b := make([]uint32, 0, n)
	for v := uint32(0); len(a) < n || len(b) < n; v++ {
		r := rng.Uint32()
		if r&1 != 0 && len(a) < n {
			a = append(a, v)
		}
		if r&2 != 0 && len(b) < n {
			b = append(b, v)
		}
	}
	want := intersect.Intersect(nil, a, b)
	for _, m := range Methods() {
		n, err := Count(e.Device(), a, b, m)
		if err != nil || n != len(want) {
			t.Errorf("%v: Count = %d, %v; want %d", m, n, err, len(want))
		}
		got, err := Intersect(e.Device(), nil, a, b, m)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%v: Intersect: %v; %s", m, err, diff(got, want))
		}
	}
}

// diff describes the first difference between got and want.
func diff(got, want []uint32) string {
	if slices.Equal(got, want) {
		return "equal"
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("len %d vs %d; first difference at %d: %d, want %d", len(got), len(want), i, got[i], want[i])
		}
	}
	return fmt.Sprintf("len %d, want %d", len(got), len(want))
}

var (
	fuzzOnce   sync.Once
	fuzzEngine *Engine
)

// FuzzMethods checks every method against the CPU on sets decoded from
// the fuzzer's bytes: deltas, so that runs, gaps and 2^32-1 all occur.
func FuzzMethods(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1}, []byte{1, 1, 1, 1}, uint8(0))
	f.Add([]byte{255, 255, 255, 255}, []byte{255, 255, 255, 255}, uint8(3))
	f.Add(make([]byte, 4000), []byte{0, 0, 0, 0, 7}, uint8(200))
	f.Fuzz(func(t *testing.T, da, db []byte, shift uint8) {
		gputest.Need(t, gpurt.Available())
		fuzzOnce.Do(func() {
			dev, err := gpurt.Open(0)
			if err == nil {
				fuzzEngine, err = New(dev)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
		if fuzzEngine == nil {
			t.Skip("no engine")
		}
		a, b := decodeSet(da, shift), decodeSet(db, shift)
		want := intersect.Intersect(nil, a, b)
		for _, m := range Methods() {
			got, err := fuzzEngine.Intersect(nil, a, b, m)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%v: %v; %s", m, err, diff(got, want))
			}
			if n, err := fuzzEngine.Count(a, b, m); err != nil || n != len(want) {
				t.Fatalf("%v: Count = %d, %v; want %d", m, n, err, len(want))
			}
		}
	})
}

// decodeSet reads bytes as gaps (scaled by shift) of a strictly increasing
// set; a gap that would pass 2^32-1 ends the set at 2^32-1.
func decodeSet(data []byte, shift uint8) []uint32 {
	var s []uint32
	x := uint64(0)
	for i, c := range data {
		gap := uint64(c) << (shift % 24)
		if i > 0 {
			gap++
		}
		x += gap
		if x > 1<<32-1 {
			if len(s) == 0 || s[len(s)-1] != 1<<32-1 {
				s = append(s, 1<<32-1)
			}
			break
		}
		s = append(s, uint32(x))
	}
	return s
}
