package gpubatmap

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/pairs"
	"github.com/xsect/xsect/sets"
)

// needGPU skips the test, saying why, where no GPU can be used.
func needGPU(t testing.TB) *gpurt.Device {
	t.Helper()
	gputest.Need(t, gpurt.Available())
	dev, err := gpurt.Default()
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func gpuRun(dev *gpurt.Device, b *batmap.Batmaps) func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
	return func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
		return run(context.Background(), gpurt.NewSet(dev), b, opt, m, emit, tileFn)
	}
}

// TestGPU checks the device's counts, pairs and counts of pairs against
// the sets for every case (8-, 16- and 32-bit entries, mixed widths,
// forced failures, k = 0, 1, 2, sizes off the tile), with one batch and
// with many, and against batmap.AllPairs.
func TestGPU(t *testing.T) {
	dev := needGPU(t)
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, c)
			// The kernel the layout calls for, and on 8-bit entries the
			// popcount kernel, which only sets of 2^25 elements or more
			// would otherwise reach.
			kernels := []string{""}
			if b.Layout.EntryBits == 8 {
				kernels = append(kernels, "batmap8popc")
			}
			for _, kernel := range kernels {
				for _, batchEntries := range []int64{1 << 24, 3000} {
					checkResults(t, c, b, func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
						opt.maxEntries, opt.kernel = batchEntries, kernel
						return run(context.Background(), gpurt.NewSet(dev), b, opt, m, emit, tileFn)
					})
				}
			}
			// batmap.AllPairs agrees.
			want := wantCounts(b, c.c)
			err := b.AllPairs(context.Background(), batmap.PairsOptions{}, func(_ int, tl *batmap.Tile) error {
				for x := range tl.Rows {
					for y := range tl.Cols {
						if p, q := tl.Row0+x, tl.Col0+y; p < q && tl.At(x, y) != want[p][q] {
							t.Errorf("AllPairs (%d, %d): %d, want %d", p, q, tl.At(x, y), want[p][q])
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGPUPinnedPieces copies outputs back in many small pieces.
func TestGPUPinnedPieces(t *testing.T) {
	dev := needGPU(t)
	c := refCases()[3] // mixed 8-bit
	b := build(t, c)
	st := stateOf(dev)
	// Fresh small buffers for this test, the usual ones after it.
	swap := func(n int) {
		st.mu.Lock()
		defer st.mu.Unlock()
		err := dev.Do(func(cx *gpurt.Ctx) error {
			for i := range st.pinned {
				if err := st.pinned[i].Free(cx); err != nil {
					return err
				}
			}
			st.pinnedBytes = n
			return st.warm(cx)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	swap(4096)
	defer swap(pinnedBytes)
	if st.pinned[0].Len() != 4096 || st.pinned[1].Len() != 4096 {
		t.Fatalf("pinned buffers of %d and %d bytes, want 4096", st.pinned[0].Len(), st.pinned[1].Len())
	}
	checkResults(t, c, b, gpuRun(dev, b))
}

// TestGPUMemoryLimit checks that a run refuses a budget below its
// batmaps, and fits a small one with many batches.
func TestGPUMemoryLimit(t *testing.T) {
	dev := needGPU(t)
	c := refCases()[3]
	b := build(t, c)
	_, err := Count(context.Background(), gpurt.NewSet(dev), b, Options{Memory: 1000})
	if err == nil || !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "device memory") {
		t.Fatalf("1000 bytes: %v", err)
	}
	var st Stats
	n, err := Count(context.Background(), gpurt.NewSet(dev), b, Options{Memory: 4*int64(len(b.Words)) + 1<<20, Stats: &st})
	if err != nil {
		t.Fatal(err)
	}
	want := wantCounts(b, c.c)
	var wantN int64
	for p := range want {
		for q := p + 1; q < len(want); q++ {
			wantN++
		}
	}
	if n != wantN {
		t.Fatalf("count %d, want %d", n, wantN)
	}
	t.Logf("stats with a small budget: %+v", st)
}

// TestGPUCancel checks that a done context stops a run.
func TestGPUCancel(t *testing.T) {
	dev := needGPU(t)
	b := build(t, refCases()[3])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Count(ctx, gpurt.NewSet(dev), b, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

// TestPairsEngine checks the pairs engine against the CPU's on random
// transactions, with forced insertion failures too, and --count.
func TestPairsEngine(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(21, 22))
	tx := sets.New()
	var s []uint32
	for range 3000 {
		s = s[:0]
		for x := range 400 {
			if r.Float64() < 0.05+0.2*float64(x%7)/7 {
				s = append(s, uint32(x*3))
			}
		}
		tx.Add(s)
	}
	for _, cfg := range []batmap.Config{{}, {MaxLoop: 1, Load: 0.8}, {EntryBits: 16}, {EntryBits: 32}} {
		for _, support := range []int{1, 30, 200} {
			want, err := pairs.Collect(context.Background(), tx, pairs.Options{MinSupport: support, Technique: "apriori", Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: support, Technique: "batmap", Device: "gpu"})
			if err != nil {
				t.Fatal(err)
			}
			plan.Engine = pairsEngine{cfg: cfg}
			got, err := plan.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v support %d: %d pairs, want %d", cfg, support, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%+v support %d: pair %d is %v, want %v", cfg, support, i, got[i], want[i])
				}
			}
			plan, err = pairs.NewPlan(tx, pairs.Options{MinSupport: support, Technique: "batmap", Device: "gpu", CountOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			plan.Engine = pairsEngine{cfg: cfg}
			n, err := plan.Run(context.Background(), func([]pairs.Pair) error { return nil })
			if err != nil || n != int64(len(want)) {
				t.Fatalf("%+v support %d: count %d (%v), want %d", cfg, support, n, err, len(want))
			}
		}
	}
}

// TestAllpairsEngine checks the allpairs engine against the CPU's batmap
// engine on overlap and containment self-joins.
func TestAllpairsEngine(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(31, 32))
	c := collection(r, 700, 20000, 900)
	for _, q := range []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 5}, {Containment: allpairs.Ratio{Num: 1, Den: 10}}, {MinOverlap: 0}} {
		want, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "gpu"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d pairs, want %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%+v: pair %d is %v, want %v", q, i, got[i], want[i])
			}
		}
		n, _, err := allpairs.Count(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "gpu"})
		if err != nil || n != int64(len(want)) {
			t.Fatalf("%+v: count %d (%v), want %d", q, n, err, len(want))
		}
	}
}

// TestGPUKernels logs each kernel's registers and blocks per
// multiprocessor (the micro-tile wants two blocks of 256 threads).
func TestGPUKernels(t *testing.T) {
	dev := needGPU(t)
	err := dev.Do(func(c *gpurt.Ctx) error {
		for _, name := range kernelNames {
			m, err := c.Load(sourceOf(name))
			if err != nil {
				return err
			}
			t.Logf("%s: module from %v; NVRTC log: %q", name, m.From, m.Log)
			k, err := m.Kernel(name)
			if err != nil {
				return err
			}
			if _, err := m.Kernel("batmap8"); name != "batmap8" && err == nil {
				return fmt.Errorf("module of %s holds batmap8 too", name)
			}
			occ, err := c.Occupancy(k, 256, 0)
			if err != nil {
				return err
			}
			t.Logf("%s: %d registers, %d blocks of 256 per SM", name, k.Registers(), occ)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
