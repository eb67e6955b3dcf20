package gpuallpairs

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
)

// TestGridCovers checks that the super-tiles and their parts cover every
// entry of the caller's grid that has a pair exactly once, and that the
// parts' packed offsets agree with the repack kernel's formula and tile the
// packed buffer without overlap.
func TestGridCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 300; iter++ {
		g := grid{kr: 1 + rng.IntN(60), ks: 1 + rng.IntN(60), self: rng.IntN(2) == 0}
		if g.self {
			g.ks = g.kr
		}
		g.rows, g.cols = 1+rng.IntN(13), 1+rng.IntN(13)
		g.sr, g.sc = g.rows*(1+rng.IntN(4)), g.cols*(1+rng.IntN(4))
		if rng.IntN(4) == 0 { // a pair plan: one part per super-tile
			g.sr, g.sc = 1+rng.IntN(40), 1+rng.IntN(40)
			g.rows, g.cols = g.sr, g.sc
		}
		seen := make([]int, g.kr*g.ks)
		for _, s := range g.supers() {
			used := make([]bool, s.rows*s.cols)
			for _, p := range g.parts(s) {
				for x := 0; x < p.rows; x++ {
					for y := 0; y < p.cols; y++ {
						i, j := p.row0+x, p.col0+y
						seen[i*g.ks+j]++
						at := p.off + x*p.cols + y
						if want := packedIndex(i-s.r0, j-s.c0, s.rows, s.cols, min(g.rows, s.rows), min(g.cols, s.cols)); at != want {
							t.Fatalf("grid %+v: entry (%d, %d) at %d, kernel puts it at %d", g, i, j, at, want)
						}
						if used[at] {
							t.Fatalf("grid %+v: offset %d used twice", g, at)
						}
						used[at] = true
					}
				}
			}
		}
		for i := 0; i < g.kr; i++ {
			for j := 0; j < g.ks; j++ {
				if g.self && i >= j {
					continue
				}
				if seen[i*g.ks+j] != 1 {
					t.Fatalf("grid %+v: pair (%d, %d) covered %d times", g, i, j, seen[i*g.ks+j])
				}
			}
		}
	}
}

// TestPackedIndexIsPermutation checks the repack formula on whole
// super-tiles, including the last, partial tiles.
func TestPackedIndexIsPermutation(t *testing.T) {
	for _, c := range [][4]int{{10, 10, 3, 4}, {7, 9, 7, 9}, {16, 5, 5, 2}, {1, 1, 1, 1}, {33, 17, 8, 16}} {
		sr, sc, rows, cols := c[0], c[1], c[2], c[3]
		hit := make([]bool, sr*sc)
		for x := 0; x < sr; x++ {
			for y := 0; y < sc; y++ {
				i := packedIndex(x, y, sr, sc, rows, cols)
				if i < 0 || i >= sr*sc || hit[i] {
					t.Fatalf("%v: (%d, %d) -> %d", c, x, y, i)
				}
				hit[i] = true
			}
		}
	}
}

func problem(t *testing.T, r, s [][]uint32, rows, cols int) *allpairs.Problem {
	t.Helper()
	var sc = collection(t, r)
	var ss = sc
	if s != nil {
		ss = collection(t, s)
	} else {
		ss = nil
	}
	var pl *allpairs.Plan
	var err error
	if rows > 0 {
		pl, err = allpairs.NewTilePlan(sc, ss, rows, cols, allpairs.Options{Device: "cpu"})
	} else {
		pl, err = allpairs.NewPlan(sc, ss, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu"})
	}
	if err != nil {
		t.Fatal(err)
	}
	return pl.Problem
}

// TestColumns checks the column map: elements in two sets of a self-join,
// or in both collections of a join, in increasing order.
func TestColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, rs := range [][2][][]uint32{
		{randomSets(rng, 30, 200, 20), nil},
		{randomSets(rng, 30, 200, 20), randomSets(rng, 20, 300, 10)},
		{adversarial(), nil},
	} {
		p := problem(t, rs[0], rs[1], 0, 0)
		cols := columnsOf(p)
		next := int32(0)
		for e, c := range cols.colOf {
			keep := p.DFR[e] >= 2
			if !p.Self {
				keep = p.DFR[e] > 0 && p.DFS[e] > 0
			}
			if keep != (c >= 0) {
				t.Fatalf("element %d (df %d) has column %d", e, p.DFR[e], c)
			}
			if c >= 0 {
				if c != next {
					t.Fatalf("element %d has column %d, want %d", e, c, next)
				}
				next++
			}
		}
		if int(next) != cols.k {
			t.Fatalf("%d columns, counted %d", cols.k, next)
		}
	}
}

var h100 = gpurt.Info{Name: "model", Memory: 80 << 30, SMs: 132, Major: 9, SharedPerBlock: 227 << 10}

// TestPlanMemory checks that plans fit their budget: mm keeps its
// matrices resident when they fit and slices them otherwise, and every
// technique refuses, with a clear error, a budget too small for its
// super-tiles.
func TestPlanMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	p := problem(t, randomSets(rng, 200, 20000, 2000), nil, 0, 0)
	tu := tiling(4096, 0)
	big, err := plan(p, mmTech{}, tu, h100, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if !big.resident {
		t.Fatal("matrices not resident with 1 TiB")
	}
	for _, b := range []int64{big.memory - 1, big.memory / 2, big.memory / 4} {
		pl, err := plan(p, mmTech{}, tu, h100, b)
		if err != nil {
			t.Fatalf("budget %d: %v", b, err)
		}
		if pl.resident || pl.memory > b || pl.kc%16 != 0 || pl.kc < 16 {
			t.Fatalf("budget %d: plan %+v", b, pl)
		}
	}
	for _, tech := range []technique{mmTech{}, scanTech{}, bitmapTech{}, dynamicTech{}, mergeTech{}} {
		_, err := plan(p, tech, tu, h100, 1000)
		if !errors.Is(err, allpairs.ErrCannotRun) {
			t.Errorf("%s with 1000 bytes: %v", tech.name(), err)
		}
		pl, err := plan(p, tech, tu, h100, 1<<34)
		if err != nil {
			t.Errorf("%s: %v", tech.name(), err)
			continue
		}
		if pl.seconds <= 0 || pl.memory <= 0 || pl.memory > 1<<34 {
			t.Errorf("%s: plan %+v", tech.name(), pl)
		}
	}
}

// TestPlanTiled checks that super-tiles of tile plans are whole multiples
// of the caller's tiles, and fall back to one caller tile when those are
// larger than the tuning's tileCounts.
func TestPlanTiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	p := problem(t, randomSets(rng, 500, 1000, 50), nil, 30, 70)
	for _, tech := range []technique{mmTech{}, scanTech{}, bitmapTech{}} {
		pl, err := plan(p, tech, tiling(10000, 0), h100, 1<<34)
		if err != nil {
			t.Fatal(err)
		}
		if pl.g.sr%30 != 0 || pl.g.sc%70 != 0 || pl.g.rows != 30 || pl.g.cols != 70 {
			t.Fatalf("%s: grid %+v", tech.name(), pl.g)
		}
	}
	pl, err := plan(p, mmTech{}, tiling(100, 0), h100, 1<<34)
	if err != nil {
		t.Fatal(err)
	}
	if pl.g.sr != 30 || pl.g.sc != 70 {
		t.Fatalf("grid %+v", pl.g)
	}
}

// TestPlanPieces checks plans under budgets below what the whole problem
// needs: they fit, their pieces cover the sets in runs aligned with the
// super-tiles, and the items cover every super-tile once, inside the
// pieces they name. Every technique must get a plan in pieces at some
// budget.
func TestPlanPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	r := randomSets(rng, 400, 6000, 300)
	s := randomSets(rng, 300, 6000, 200)
	for _, tc := range []struct {
		s          [][]uint32
		rows, cols int
	}{{nil, 0, 0}, {s, 0, 0}, {nil, 30, 70}, {s, 64, 16}} {
		p := problem(t, r, tc.s, tc.rows, tc.cols)
		tu := tiling(3000, 0)
		for _, tech := range []technique{mmTech{}, scanTech{}, bitmapTech{}, dynamicTech{}, mergeTech{}} {
			whole, err := plan(p, tech, tu, h100, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.rPieces) != 1 || len(whole.sPieces) != 1 || whole.shared != p.Self {
				t.Fatalf("%s: plan with 1 TiB in pieces: %v x %v", tech.name(), whole.rPieces, whole.sPieces)
			}
			pieced := 0
			for k := 1; k < 40; k++ {
				b := whole.memory * int64(k) / 40
				pl, err := plan(p, tech, tu, h100, b)
				if err != nil {
					if !errors.Is(err, allpairs.ErrCannotRun) {
						t.Fatalf("%s, budget %d: %v", tech.name(), b, err)
					}
					continue
				}
				if pl.memory > b {
					t.Fatalf("%s: plan of %d bytes for a budget of %d", tech.name(), pl.memory, b)
				}
				if len(pl.rPieces) > 1 || len(pl.sPieces) > 1 {
					pieced++
				}
				checkPieces(t, tech.name(), pl.rPieces, p.R.Len(), pl.g.sr)
				checkPieces(t, tech.name(), pl.sPieces, p.S.Len(), pl.g.sc)
				seen := map[super]int{}
				for _, it := range pl.items() {
					seen[it.s]++
					rp, sp := pl.rPieces[it.a], pl.sPieces[it.b]
					if it.s.r0 < rp.lo || it.s.r0+it.s.rows > rp.hi || it.s.c0 < sp.lo || it.s.c0+it.s.cols > sp.hi {
						t.Fatalf("%s: super-tile %+v outside pieces %v x %v", tech.name(), it.s, rp, sp)
					}
				}
				for _, su := range pl.g.supers() {
					if seen[su] != 1 {
						t.Fatalf("%s: super-tile %+v in %d items", tech.name(), su, seen[su])
					}
				}
				if len(seen) != len(pl.g.supers()) {
					t.Fatalf("%s: %d items for %d super-tiles", tech.name(), len(seen), len(pl.g.supers()))
				}
			}
			if pieced == 0 {
				t.Errorf("%s (self %v, tiles %dx%d): no budget gave a plan in pieces", tech.name(), p.Self, tc.rows, tc.cols)
			}
		}
	}
}

func checkPieces(t *testing.T, name string, ps []span, k, step int) {
	t.Helper()
	at := 0
	for _, x := range ps {
		if x.lo != at || x.hi <= x.lo && k > 0 || x.lo%step != 0 {
			t.Fatalf("%s: pieces %v of %d sets, step %d", name, ps, k, step)
		}
		at = x.hi
	}
	if at != k {
		t.Fatalf("%s: pieces %v end at %d of %d", name, ps, at, k)
	}
}

// TestCutPieces checks the greedy cut against a linear scan.
func TestCutPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range 500 {
		k, step := rng.IntN(100), 1+rng.IntN(9)
		w := make([]int64, k)
		for i := range w {
			w[i] = 1 + rng.Int64N(20)
		}
		bytes := func(sp span) int64 {
			var n int64
			for _, x := range w[sp.lo:sp.hi] {
				n += x
			}
			return n
		}
		limit := 1 + rng.Int64N(200)
		got, ok := cutPieces(k, step, limit, bytes)
		// The same greedy cut, one group at a time.
		var want []span
		wok := true
		for lo := 0; lo < k; {
			hi := min(k, lo+step)
			if bytes(span{lo, hi}) > limit {
				wok = false
				break
			}
			for hi < k && bytes(span{lo, min(k, hi+step)}) <= limit {
				hi = min(k, hi+step)
			}
			want = append(want, span{lo, hi})
			lo = hi
		}
		if k == 0 {
			want = []span{{0, 0}}
		}
		if ok != wok || ok && !slices.Equal(got, want) {
			t.Fatalf("k %d step %d limit %d: %v %v, want %v %v", k, step, limit, got, ok, want, wok)
		}
	}
}

// TestRatesScale checks that the cost model follows the device: the H100
// gets the fitted rates, an H200 (same SMs, faster memory) only faster
// memory-bound kernels, an A100 slower ones of every kind; and that a
// technique's estimate follows its kernels' rates.
func TestRatesScale(t *testing.T) {
	ref := gpurt.ReferenceH100()
	if got := ratesFor(ref); got != h100Rates {
		t.Errorf("rates on the reference = %+v, want %+v", got, h100Rates)
	}
	if got := ratesFor(h100); got != h100Rates {
		t.Errorf("rates on a device that reports no clocks = %+v, want the reference's", got)
	}
	h200 := ref
	h200.MemClockKHz, h200.BusWidth = 3201000, 6144
	r := ratesFor(h200)
	mem := h200.PeakBandwidth() / ref.PeakBandwidth()
	if r.int8 != h100Rates.int8 || r.word != h100Rates.word || r.read != h100Rates.read || math.Abs(r.step/h100Rates.step-mem) > 1e-9 || math.Abs(r.clear/h100Rates.clear-mem) > 1e-9 {
		t.Errorf("H200 rates %+v: want compute as the H100's, memory-bound x%.3f", r, mem)
	}
	a100 := gpurt.Info{SMs: 108, Major: 8, ClockKHz: 1410000, MemClockKHz: 1593000, BusWidth: 5120, SharedPerBlock: 163 << 10, Memory: 80 << 30}
	ra := ratesFor(a100)
	for name, x := range map[string][2]float64{"int8": {ra.int8, h100Rates.int8}, "word": {ra.word, h100Rates.word}, "step": {ra.step, h100Rates.step}, "build": {ra.build, h100Rates.build}} {
		if x[0] >= x[1] {
			t.Errorf("A100 %s rate %.3g, not below the H100's %.3g", name, x[0], x[1])
		}
	}
	// The same problem: every technique's estimate on the A100 exceeds
	// the H100's, and merge (binary searches, memory-bound) gains on the
	// H200.
	rng := rand.New(rand.NewPCG(21, 22))
	p := problem(t, randomSets(rng, 300, 20000, 500), nil, 0, 0)
	for _, tech := range []technique{mmTech{}, scanTech{}, bitmapTech{}, dynamicTech{}, mergeTech{}} {
		a, errA := plan(p, tech, defaultTuning(), a100, 1<<34)
		h, errH := plan(p, tech, defaultTuning(), ref, 1<<34)
		if errA != nil || errH != nil {
			t.Fatalf("%s: %v, %v", tech.name(), errA, errH)
		}
		if a.seconds <= h.seconds {
			t.Errorf("%s: %.3g s on the A100, %.3g s on the H100", tech.name(), a.seconds, h.seconds)
		}
	}
	m200, _ := plan(p, mergeTech{}, defaultTuning(), h200, 1<<34)
	m100, _ := plan(p, mergeTech{}, defaultTuning(), ref, 1<<34)
	if m200.seconds >= m100.seconds {
		t.Errorf("merge: %.3g s on the H200, %.3g s on the H100", m200.seconds, m100.seconds)
	}
}

// TestPlanCountOnly checks that a count-only plan's estimate leaves out
// the counts' way back (count_ge counts on the device), and nothing else.
func TestPlanCountOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	c := randomSets(rng, 3000, 2000, 200)
	pairs := problem(t, c, nil, 0, 0)
	counts := problem(t, c, nil, 0, 0)
	counts.CountOnly = true
	for _, tech := range []technique{mmTech{}, scanTech{}, bitmapTech{}} {
		a, err := plan(pairs, tech, defaultTuning(), h100, 1<<34)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plan(counts, tech, defaultTuning(), h100, 1<<34)
		if err != nil {
			t.Fatal(err)
		}
		if b.seconds >= a.seconds || b.onceSec != a.onceSec || b.memory != a.memory {
			t.Errorf("%s: count-only plan %.3g s (once %.3g, %d bytes), pair plan %.3g s (once %.3g, %d bytes)",
				tech.name(), b.seconds, b.onceSec, b.memory, a.seconds, a.onceSec, a.memory)
		}
	}
}

// TestMMScanColumns checks mmscan's split: forced, exactly the heaviest
// elements in increasing order; chosen by the cost model on a skewed
// collection, some heavy elements and not all, the light reads what the
// light elements' lists make.
func TestMMScanColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	// Zipf-like: element e in a set with probability ~ 1/(e+1).
	sets := make([][]uint32, 20000)
	for i := range sets {
		for e := range 20000 {
			if rng.Float64() < 0.5/float64(e+1) {
				sets[i] = append(sets[i], uint32(e))
			}
		}
	}
	p := problem(t, sets, nil, 0, 0)
	reads := func(heavy func(e int) bool) float64 {
		n := 0.0
		for e, d := range p.DFR {
			if !heavy(e) {
				n += float64(d) * float64(d)
			}
		}
		return n
	}
	for _, force := range []int{-1, 1, 5} {
		sp := mmscanColumns(p, h100, force)
		if sp.cols.k != max(force, 0) {
			t.Fatalf("forced %d: %d heavy", force, sp.cols.k)
		}
		last := int32(-1)
		for e, c := range sp.cols.colOf {
			if c < 0 {
				continue
			}
			if c != last+1 {
				t.Fatalf("forced %d: element %d has column %d after %d", force, e, c, last)
			}
			last = c
			// Every heavier element is heavy too.
			for f, d := range p.DFR {
				if d > p.DFR[e] && sp.cols.colOf[f] < 0 && d >= 2 {
					t.Fatalf("forced %d: element %d (df %d) heavy, %d (df %d) not", force, e, p.DFR[e], f, d)
				}
			}
		}
		if got, want := sp.light, reads(func(e int) bool { return sp.cols.colOf[e] >= 0 }); got != want {
			t.Errorf("forced %d: light reads %g, want %g", force, got, want)
		}
		for e, d := range sp.lightDF() {
			if want := p.DFS[e]; sp.cols.colOf[e] >= 0 && d != 0 || sp.cols.colOf[e] < 0 && d != want {
				t.Fatalf("forced %d: the index's frequency of element %d is %d (column %d, df %d)", force, e, d, sp.cols.colOf[e], want)
			}
		}
	}
	sp := mmscanColumns(p, h100, 0)
	shared := 0
	for _, d := range p.DFR {
		if d >= 2 {
			shared++
		}
	}
	if sp.cols.k == 0 || sp.cols.k >= shared {
		t.Errorf("the cost model made %d of %d shared elements heavy on a Zipf collection", sp.cols.k, shared)
	}
	t.Logf("%d of %d shared elements heavy, light reads %.3g of %.3g", sp.cols.k, shared, sp.light, reads(func(int) bool { return false }))
}

// TestMMScanColumnsMany checks the choice among more shared elements than
// can be heavy (maxHeavy): the heaviest are kept, and of those tied at the
// cut the first in the order of elements; an element in one set never is.
func TestMMScanColumnsMany(t *testing.T) {
	const (
		wide  = maxHeavy + 3000 // elements 0 to wide-1 in two sets: df 2
		heavy = 1000            // elements below in a third set too: df 3
		alone = 500             // elements from wide on in one set: df 1
	)
	a := make([]uint32, wide+alone)
	for e := range a {
		a[e] = uint32(e)
	}
	b := a[:wide]
	c := a[:heavy]
	p := problem(t, [][]uint32{a, b, c}, nil, 0, 0)
	sp := mmscanColumns(p, h100, maxHeavy+10)
	if sp.cols.k != maxHeavy {
		t.Fatalf("%d heavy elements, want %d", sp.cols.k, maxHeavy)
	}
	for e, col := range sp.cols.colOf {
		if want := e < maxHeavy; (col >= 0) != want || want && col != int32(e) {
			t.Fatalf("element %d (df %d) has column %d", e, p.DFR[e], col)
		}
	}
	// The light work: the tied elements left out (df 2) and those in one set.
	if want := float64(4*(wide-maxHeavy) + alone); sp.light != want {
		t.Errorf("light reads %g, want %g", sp.light, want)
	}
}
