package gpuallpairs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/sets"
)

// needGPU skips the test, saying why, where no GPU can be used.
func needGPU(t testing.TB) {
	t.Helper()
	gputest.Need(t, gpurt.Available())
}

// needBLAS skips a test of the matrix-product techniques, saying why,
// where cuBLAS does not load (a machine with the driver alone).
func needBLAS(t testing.TB) {
	t.Helper()
	if _, err := gpurt.BLASLibrary(); err != nil {
		t.Skipf("%v: mm and mmjoin need cuBLAS; skipping", err)
	}
}

// testTechniques returns the techniques of this package that the machine
// can run: mm only where cuBLAS loads.
func testTechniques(t testing.TB) []technique {
	t.Helper()
	all := []technique{mmTech{}, mmscanTech{}, scanTech{}, bitmapTech{}, dynamicTech{}, mergeTech{}}
	if _, err := gpurt.BLASLibrary(); err != nil {
		t.Logf("%v: mm and mmscan need cuBLAS; leaving them out", err)
		return all[2:]
	}
	return all
}

// wholeOnly reports whether tech runs only with every set on the device,
// never in pieces.
func wholeOnly(tech technique) bool {
	_, ok := tech.(mmscanTech)
	return ok
}

// testTechNames returns testTechniques' names.
func testTechNames(t testing.TB) []string {
	var out []string
	for _, tech := range testTechniques(t) {
		out = append(out, tech.name())
	}
	return out
}

func collection(t testing.TB, ss [][]uint32) *sets.Collection {
	t.Helper()
	c := sets.FromSets(ss...)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func randomSets(rng *rand.Rand, k, universe, maxSize int) [][]uint32 {
	out := make([][]uint32, k)
	for i := range out {
		n := rng.IntN(maxSize + 1)
		m := map[uint32]bool{}
		for len(m) < min(n, universe) {
			m[uint32(rng.IntN(universe))] = true
		}
		out[i] = slices.Sorted(maps.Keys(m))
	}
	return out
}

// adversarial is a collection with empty, single-element, identical,
// disjoint and extreme-valued sets, of sizes off every block size.
func adversarial() [][]uint32 {
	seq := func(lo, n, step uint32) []uint32 {
		s := make([]uint32, n)
		for i := range s {
			s[i] = lo + uint32(i)*step
		}
		return s
	}
	return [][]uint32{
		{},
		{0},
		{^uint32(0)},
		{0, ^uint32(0)},
		seq(0, 33, 1),
		seq(0, 33, 1),
		seq(1, 17, 2),
		seq(0, 17, 2),
		seq(100, 1, 1),
		{},
		seq(4000000000, 65, 3),
		seq(0, 1000, 7),
		seq(3, 999, 5),
		{^uint32(0) - 1, ^uint32(0)},
		seq(1<<31, 31, 1<<20),
	}
}

// dense returns every count of r × s as row-major kr × ks (upper triangle
// only for a self-join), from tiles.
func denseFromTiles(kr, ks int, run func(fn func(*allpairs.Tile) error) error) ([]uint32, error) {
	m := make([]uint32, kr*ks)
	err := run(func(t *allpairs.Tile) error {
		for x := 0; x < t.Rows; x++ {
			for y := 0; y < t.Cols; y++ {
				m[(t.Row0+x)*ks+t.Col0+y] = t.At(x, y)
			}
		}
		return nil
	})
	return m, err
}

// tilesOf computes every count of r × s in tiles of rows × cols, with the
// engine that opt picks, or with e in its place if e is not nil (see
// planOn).
func tilesOf(r, s *sets.Collection, rows, cols int, opt allpairs.Options, e allpairs.Engine) ([]uint32, *allpairs.Plan, error) {
	ks := r.Len()
	if s != nil {
		ks = s.Len()
	}
	pl, err := planOn(e, r, s, allpairs.Query{}, rows, cols, opt)
	if err != nil {
		return nil, pl, err
	}
	m, err := denseFromTiles(r.Len(), ks, func(fn func(*allpairs.Tile) error) error {
		return pl.Tiles(context.Background(), fn)
	})
	return m, pl, err
}

// planOn makes the plan of r × s for q (a tile plan of rows × cols if rows
// is positive) with opt, and, if e is not nil, has e estimate and run it
// instead of the registered engine of its name: e is that engine made
// with a test's tuning (see tuned).
func planOn(e allpairs.Engine, r, s *sets.Collection, q allpairs.Query, rows, cols int, opt allpairs.Options) (*allpairs.Plan, error) {
	if e != nil {
		opt.Technique = e.Name()
	}
	var pl *allpairs.Plan
	var err error
	if rows > 0 {
		pl, err = allpairs.NewTilePlan(r, s, rows, cols, opt)
	} else {
		pl, err = allpairs.NewPlan(r, s, q, opt)
	}
	if e == nil || pl == nil {
		return pl, err
	}
	// The registered engine's estimate does not count: e's tuning may let
	// it run where that one cannot, or the other way round.
	c := pl.Chosen
	if c.Engine.Name() != e.Name() {
		return nil, fmt.Errorf("plan chose %s, not %s", c.Engine.Name(), e.Name())
	}
	c.Engine, c.Bounded = e, false
	c.Device, c.Err = allpairs.DeviceOf(e, pl.Problem)
	if c.Err == nil {
		c.Estimate, c.Err = e.Estimate(pl.Problem)
	}
	c.CheckMemory(pl.Problem.Memory)
	if c.Err != nil {
		return nil, fmt.Errorf("%s on %s: %w", e.Name(), e.Kind(), c.Err)
	}
	pl.Chosen = c
	return pl, nil
}

// tuned returns the registered engine named name, made with tu.
func tuned(t testing.TB, name string, tu tuning) allpairs.Engine {
	t.Helper()
	if name == "mm" || name == "mmjoin" || name == "mmscan" {
		needBLAS(t)
	}
	for _, e := range allpairs.Engines() {
		if e.Name() != name {
			continue
		}
		switch e := e.(type) {
		case *engine:
			return &engine{t: e.t, tune: tu}
		case mmjoinEngine:
			return mmjoinEngine{tune: tu}
		case fakeMMJoin:
			return fakeMMJoin{tune: tu}
		}
	}
	t.Fatalf("no engine of this package is named %q", name)
	return nil
}

// tiling is the default tuning with super-tiles of at most counts counts
// and, if limit is positive, at most limit bytes of device memory planned.
func tiling(counts, limit int64) tuning {
	tu := defaultTuning()
	tu.tileCounts, tu.memoryLimit = counts, limit
	return tu
}

type testCase struct {
	name string
	r, s [][]uint32
}

func testCases() []testCase {
	rng := rand.New(rand.NewPCG(1, 2))
	return []testCase{
		{"adversarial", adversarial(), nil},
		{"adversarial-x-random", adversarial(), randomSets(rng, 37, 2000, 40)},
		{"random-small", randomSets(rng, 70, 300, 30), nil},
		{"random-wide", randomSets(rng, 45, 1<<20, 300), nil},
		{"random-rxs", randomSets(rng, 50, 500, 60), randomSets(rng, 61, 700, 80)},
		{"dense", randomSets(rng, 40, 64, 64), nil},
	}
}

// TestTilesMatchCPU checks every GPU technique's tiles against the CPU's,
// with super-tiles small enough that there are many, tile shapes that do
// not divide the collections, and (for mm) matrices sliced by columns.
func TestTilesMatchCPU(t *testing.T) {
	needGPU(t)
	for _, tc := range testCases() {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		for _, shape := range [][2]int{{7, 5}, {16, 16}, {64, 1000}, {1000, 1000}} {
			want, _, err := tilesOf(r, s, shape[0], shape[1], allpairs.Options{Device: "cpu", Technique: "scancount"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tech := range testTechNames(t) {
				for _, counts := range []int64{int64(shape[0] * shape[1]), 300, 16 << 20} {
					name := fmt.Sprintf("%s/%dx%d/%s/counts=%d", tc.name, shape[0], shape[1], tech, counts)
					t.Run(name, func(t *testing.T) {
						got, pl, err := tilesOf(r, s, shape[0], shape[1], allpairs.Options{Device: "gpu"}, tuned(t, tech, tiling(counts, 0)))
						if err != nil {
							t.Fatal(err)
						}
						if pl.Chosen.Device.Kind != allpairs.GPU {
							t.Fatalf("ran on %v", pl.Chosen.Device.Kind)
						}
						compare(t, want, got, r.Len())
					})
				}
			}
		}
	}
}

func compare(t *testing.T, want, got []uint32, kr int) {
	t.Helper()
	bad := 0
	ks := len(want) / max(kr, 1)
	for i := range want {
		if want[i] != got[i] {
			if bad < 5 {
				t.Errorf("count (%d, %d) = %d, want %d", i/ks, i%ks, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d counts differ", bad, len(want))
	}
}

// TestMatrixSlices forces mm to multiply its matrices in slices of
// columns, accumulating.
func TestMatrixSlices(t *testing.T) {
	needGPU(t)
	needBLAS(t)
	rng := rand.New(rand.NewPCG(3, 4))
	r := collection(t, randomSets(rng, 90, 5000, 400))
	s := collection(t, randomSets(rng, 70, 5000, 300))
	for _, rs := range []*sets.Collection{nil, s} {
		ks := r.Len()
		if rs != nil {
			ks = rs.Len()
		}
		want, _, err := tilesOf(r, rs, 32, 32, allpairs.Options{Device: "cpu", Technique: "scancount"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := allpairs.NewTilePlan(r, rs, 32, 32, allpairs.Options{Device: "gpu", Technique: "mm"})
		if err != nil {
			t.Fatal(err)
		}
		info := mustDevice(t).dev.Info()
		pl, err := plan(p.Problem, mmTech{}, tiling(1024, 0), info, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		rowsM := matrixRows(r.Len())
		if rs != nil {
			rowsM += matrixRows(ks)
		}
		matrix := int64(rowsM) * int64(pl.kc)
		limit := pl.memory - matrix + matrix/5
		tu := tiling(1024, limit)
		pl, err = plan(p.Problem, mmTech{}, tu, info, tu.budget(1<<40))
		if err != nil {
			t.Fatal(err)
		}
		if pl.resident || pl.kc >= columnsOf(p.Problem).k {
			t.Fatalf("plan under %d bytes keeps the matrices resident (%d columns per slice)", limit, pl.kc)
		}
		t.Logf("slices of %d of %d columns", pl.kc, columnsOf(p.Problem).k)
		got, _, err := tilesOf(r, rs, 32, 32, allpairs.Options{Device: "gpu"}, tuned(t, "mm", tu))
		if err != nil {
			t.Fatal(err)
		}
		compare(t, want, got, r.Len())
	}
}

func mustDevice(t *testing.T) *state {
	st, err := device()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPairsMatchCPU checks pair plans (threshold, containment) against the
// CPU, through the engines' parallel filtering of row strips; and with
// the slots' pinned buffers started at one pair, so that fetch grows them.
func TestPairsMatchCPU(t *testing.T) {
	needGPU(t)
	t.Run("grown", func(t *testing.T) {
		defer func(n int) { pairsHostStart = n }(pairsHostStart)
		pairsHostStart = 12
		pairsMatchCPU(t)
	})
	pairsMatchCPU(t)
}

func pairsMatchCPU(t *testing.T) {
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 3}, {MinOverlap: 0}, {Containment: allpairs.Ratio{Num: 1, Den: 1}}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, tc := range testCases() {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		for qi, q := range queries {
			want, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tech := range testTechNames(t) {
				t.Run(fmt.Sprintf("%s/q%d/%s", tc.name, qi, tech), func(t *testing.T) {
					pl, err := planOn(tuned(t, tech, tiling(500, 0)), r, s, q, 0, 0, allpairs.Options{Device: "gpu"})
					if err != nil {
						t.Fatal(err)
					}
					checkPairs(t, pl, want)
				})
			}
		}
	}
}

// TestMMHalfMatchCPU checks the mm technique's float16 product on its own
// (the path taken where cuBLAS has no int8 product), pairs and tiles,
// against the CPU.
func TestMMHalfMatchCPU(t *testing.T) {
	needGPU(t)
	needBLAS(t)
	tu := defaultTuning()
	tu.half = true
	mm := tuned(t, "mm", tu)
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 0}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, tc := range testCases() {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		for qi, q := range queries {
			t.Run(fmt.Sprintf("%s/q%d", tc.name, qi), func(t *testing.T) {
				want, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
				if err != nil {
					t.Fatal(err)
				}
				pl, err := planOn(mm, r, s, q, 0, 0, allpairs.Options{Device: "gpu"})
				if err != nil {
					t.Fatal(err)
				}
				checkPairs(t, pl, want)
				if !strings.Contains(pl.Notes(), "float16") {
					t.Fatalf("the run does not say it used float16 products: %q", pl.Notes())
				}
			})
		}
	}
}

// checkPairs checks that pl collects the pairs want, and that it counts
// as many: a count-only run, which counts them on the device.
func checkPairs(t *testing.T, pl *allpairs.Plan, want []allpairs.Pair) {
	t.Helper()
	got, err := pl.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	n, err := pl.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(want)) {
		t.Fatalf("Count = %d, Collect gave %d pairs", n, len(want))
	}
}

func firstDiff(a, b []allpairs.Pair) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLargest checks a GPU run on the largest sets of a skewed collection,
// with ids mapped back.
func TestLargest(t *testing.T) {
	needGPU(t)
	needBLAS(t)
	rng := rand.New(rand.NewPCG(5, 6))
	c := collection(t, randomSets(rng, 300, 3000, 200))
	want, err := allpairs.Collect(context.Background(), c, nil, allpairs.Query{MinOverlap: 2}, allpairs.Options{Device: "cpu", Largest: 100})
	if err != nil {
		t.Fatal(err)
	}
	got, err := allpairs.Collect(context.Background(), c, nil, allpairs.Query{MinOverlap: 2}, allpairs.Options{Device: "gpu", Technique: "mm", Largest: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d", len(got), len(want))
	}
}

// TestMMJoinMatchCPU checks MMJoin across devices against the CPU's
// scan-count: a split that makes many elements heavy, bands of a few rows
// with a host budget of a few bands (so that workers wait for bands nobody
// prefetched), int8 and float16 products, both layouts of the index part
// (a self-join's bands on either side of the diagonal), self-joins and
// joins, pair, threshold and containment queries; no block of the product
// is read outside the bands.
func TestMMJoinMatchCPU(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(25, 26))
	r := collection(t, skewedSets(rng, 300, 2000, 400))
	s := collection(t, skewedSets(rng, 200, 2500, 300))
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 0}, {MinOverlap: 3}, {Containment: allpairs.Ratio{Num: 1, Den: 1}}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, other := range []*sets.Collection{nil, s} {
		for qi, q := range queries {
			want, err := allpairs.Collect(context.Background(), r, other, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
			if err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []struct {
				wordNS float64
				counts int64
				host   int64
				half   bool
				layout int
			}{{1e-6, 16 << 20, 1 << 30, false, layoutProbe}, {1e-6, 1000, 8000, false, layoutProbe}, {1e-4, 3000, 1 << 30, true, layoutProbe},
				{1e-6, 16 << 20, 1 << 30, false, layoutElement}, {1e-6, 1000, 8000, false, layoutElement}, {1e-4, 3000, 1 << 30, true, layoutElement},
				{0, 4 << 20, 1 << 30, false, layoutAuto}} {
				name := fmt.Sprintf("self=%v/q%d/word=%g/counts=%d/host=%d/half=%v/layout=%d", other == nil, qi, cfg.wordNS, cfg.counts, cfg.host, cfg.half, cfg.layout)
				t.Run(name, func(t *testing.T) {
					tu := cheapProduct(cfg.wordNS)
					tu.bandCounts, tu.bandHostBytes, tu.half, tu.layout = cfg.counts, cfg.host, cfg.half, cfg.layout
					pl, err := planOn(tuned(t, "mmjoin", tu), r, other, q, 0, 0, allpairs.Options{Device: "gpu"})
					if cfg.wordNS == 0 && err != nil && errors.Is(err, allpairs.ErrCannotRun) {
						t.Skipf("the default costs make nothing heavy here: %v", err)
					}
					if err != nil {
						t.Fatal(err)
					}
					if pl.Chosen.Device.Kind != allpairs.GPU {
						t.Fatalf("ran on %v", pl.Chosen.Device.Kind)
					}
					t.Log(pl.Chosen.Estimate.Detail)
					got, err := pl.Collect(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%d pairs, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
					}
					if strings.Contains(pl.Notes(), "outside the bands") {
						t.Fatalf("the product was read outside its bands: %s", pl.Notes())
					}
				})
			}
		}
	}
}

// TestMMJoinTiles checks that MMJoin refuses tile plans with a clear error.
func TestMMJoinTiles(t *testing.T) {
	needGPU(t)
	c := collection(t, adversarial())
	_, err := allpairs.NewTilePlan(c, nil, 8, 8, allpairs.Options{Device: "gpu", Technique: "mmjoin"})
	if !errors.Is(err, allpairs.ErrCannotRun) {
		t.Fatalf("tile plan: %v", err)
	}
}

// TestPiecesMatchCPU forces plans in pieces with a tiny memory limit (a few
// budgets per technique between the smallest that runs and the whole
// problem's) and checks their tiles and pairs against the CPU: pieces of S
// and of R, R's uploaded while the previous one is counted.
func TestPiecesMatchCPU(t *testing.T) {
	needGPU(t)
	info := mustDevice(t).dev.Info()
	rng := rand.New(rand.NewPCG(27, 28))
	cases := []testCase{
		{"self", randomSets(rng, 300, 3000, 200), nil},
		{"rxs", randomSets(rng, 260, 3000, 150), randomSets(rng, 200, 3000, 250)},
		{"adversarial", append(adversarial(), randomSets(rng, 100, 1000, 60)...), nil},
	}
	pieced := map[string]int{}
	for _, tc := range cases {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		const rows, cols = 24, 40
		want, _, err := tilesOf(r, s, rows, cols, allpairs.Options{Device: "cpu", Technique: "scancount"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := allpairs.Query{MinOverlap: 2}
		wantPairs, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tech := range testTechniques(t) {
			if wholeOnly(tech) {
				continue
			}
			tp, err := allpairs.NewTilePlan(r, s, rows, cols, allpairs.Options{Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			pp, err := allpairs.NewPlan(r, s, q, allpairs.Options{Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range []*allpairs.Problem{tp.Problem, pp.Problem} {
				_, _, tiled := pr.Tiled()
				for _, limit := range pieceLimits(t, pr, tech, tiling(2000, 0), info) {
					pieced[tech.name()]++
					t.Run(fmt.Sprintf("%s/%s/tiles=%v/limit=%d", tc.name, tech.name(), tiled, limit), func(t *testing.T) {
						tu := tiling(2000, limit)
						pl, err := plan(pr, tech, tu, info, tu.budget(1<<40))
						if err != nil {
							t.Fatal(err)
						}
						t.Logf("%d x %d pieces, super-tiles %dx%d, %d R buffers, %s", len(pl.rPieces), len(pl.sPieces), pl.g.sr, pl.g.sc, pl.rBufs, pl.detail)
						e := tuned(t, tech.name(), tu)
						opt := allpairs.Options{Device: "gpu"}
						if !tiled {
							pp, err := planOn(e, r, s, q, 0, 0, opt)
							if err != nil {
								t.Fatal(err)
							}
							checkPairs(t, pp, wantPairs)
							return
						}
						got, ap, err := tilesOf(r, s, rows, cols, opt, e)
						if err != nil {
							t.Fatal(err)
						}
						if ap.Chosen.Device.Kind != allpairs.GPU {
							t.Fatalf("ran on %v", ap.Chosen.Device.Kind)
						}
						compare(t, want, got, r.Len())
					})
				}
			}
		}
	}
	for _, tech := range testTechniques(t) {
		if pieced[tech.name()] == 0 && !wholeOnly(tech) {
			t.Errorf("%s never ran in pieces", tech.name())
		}
	}
}

// pieceLimits returns up to four budgets under which t runs p in pieces,
// each giving a different plan (none when every budget that runs p at all
// holds every set: mm's sliced matrices need little beside the sets).
func pieceLimits(t *testing.T, p *allpairs.Problem, tech technique, tu tuning, info gpurt.Info) []int64 {
	t.Helper()
	whole, err := plan(p, tech, tu, info, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	var limits []int64
	seen := map[string]bool{}
	for k := 39; k >= 1; k-- {
		b := whole.memory * int64(k) / 40
		pl, err := plan(p, tech, tu, info, b)
		if err != nil || len(pl.rPieces)+len(pl.sPieces) == 2 {
			continue
		}
		key := fmt.Sprint(len(pl.rPieces), len(pl.sPieces), pl.g.sr, pl.g.sc)
		if !seen[key] {
			seen[key] = true
			limits = append(limits, b)
		}
	}
	if len(limits) > 4 {
		limits = []int64{limits[0], limits[len(limits)/3], limits[2*len(limits)/3], limits[len(limits)-1]}
	}
	return limits
}

// TestMMScanSplits checks mmscan with the heavy elements forced, from none
// (scan-count alone) through some (both parts adding into one super-tile)
// to every shared element (the product alone): tiles, pairs and counts
// against the CPU, thresholds constant and per set.
func TestMMScanSplits(t *testing.T) {
	needGPU(t)
	needBLAS(t)
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 3}, {MinOverlap: 0}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, tc := range testCases() {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		want, _, err := tilesOf(r, s, 16, 24, allpairs.Options{Device: "cpu", Technique: "scancount"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, heavy := range []int{-1, 1, 3, 40, 1 << 30} {
			e := &engine{t: mmscanTech{heavy: heavy}, tune: tiling(300, 0)}
			t.Run(fmt.Sprintf("%s/heavy=%d/tiles", tc.name, heavy), func(t *testing.T) {
				got, _, err := tilesOf(r, s, 16, 24, allpairs.Options{Device: "gpu"}, e)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, want, got, r.Len())
			})
			for qi, q := range queries {
				t.Run(fmt.Sprintf("%s/heavy=%d/q%d", tc.name, heavy, qi), func(t *testing.T) {
					wantPairs, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
					if err != nil {
						t.Fatal(err)
					}
					pl, err := planOn(e, r, s, q, 0, 0, allpairs.Options{Device: "gpu"})
					if err != nil {
						t.Fatal(err)
					}
					checkPairs(t, pl, wantPairs)
				})
			}
		}
	}
}
