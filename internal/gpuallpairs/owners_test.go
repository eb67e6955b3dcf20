package gpuallpairs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/sets"
)

// ownerLists are the sets the owner tests spread runs over: one owner,
// then two and three owners of GPU 0, which split, schedule and merge as
// several GPUs do, and, on a host of several, every GPU: the planner
// would give the tests' small problems the first GPU alone (gpurt.Weigh).
var ownerLists = func() [][]int {
	lists := [][]int{{0}, {0, 0}, {0, 0, 0}}
	if gpurt.Present() == nil {
		if all, err := gpurt.CheckGPUs(nil); err == nil && len(all) > 1 {
			lists = append(lists, all)
		}
	}
	return lists
}()

// TestOwnersMatchOneGPU checks every technique, on several shapes, in
// tiles and in pairs (threshold and containment), with super-tiles small
// enough that there are many: two and three owners of the GPU give what
// one gives, which is what the CPU gives.
func TestOwnersMatchOneGPU(t *testing.T) {
	needGPU(t)
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 0}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, tc := range testCases() {
		r := collection(t, tc.r)
		var s *sets.Collection
		if tc.s != nil {
			s = collection(t, tc.s)
		}
		const rows, cols = 16, 24
		want, _, err := tilesOf(r, s, rows, cols, allpairs.Options{Device: "cpu", Technique: "scancount"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tech := range testTechNames(t) {
			for _, gpus := range ownerLists {
				t.Run(fmt.Sprintf("%s/%s/tiles/gpus=%v", tc.name, tech, gpus), func(t *testing.T) {
					got, pl, err := tilesOf(r, s, rows, cols, allpairs.Options{Device: "gpu", GPUs: gpus}, tuned(t, tech, tiling(rows*cols, 0)))
					if err != nil {
						t.Fatal(err)
					}
					compare(t, want, got, r.Len())
					checkNotes(t, pl, gpus)
				})
			}
			for qi, q := range queries {
				wantPairs, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
				if err != nil {
					t.Fatal(err)
				}
				for _, gpus := range ownerLists[1:] {
					t.Run(fmt.Sprintf("%s/%s/q%d/gpus=%v", tc.name, tech, qi, gpus), func(t *testing.T) {
						pl, err := planOn(tuned(t, tech, tiling(300, 0)), r, s, q, 0, 0, allpairs.Options{Device: "gpu", GPUs: gpus})
						if err != nil {
							t.Fatal(err)
						}
						checkPairs(t, pl, wantPairs)
						checkNotes(t, pl, gpus)
					})
				}
			}
		}
	}
}

// checkNotes checks that a run's notes name its owners.
func checkNotes(t *testing.T, pl *allpairs.Plan, gpus []int) {
	t.Helper()
	notes := pl.Notes()
	want := "GPU 0"
	switch ords := slices.Compact(slices.Sorted(slices.Values(gpus))); {
	case len(ords) > 1:
		want = "GPUs " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ords)), ", "), "[]")
	case len(gpus) > 1:
		want = fmt.Sprintf("GPU 0 (%d owners)", len(gpus))
	}
	if !strings.Contains(notes, want) {
		t.Errorf("notes do not name the owners %v (%q): %q", gpus, want, notes)
	}
}

// TestOwnersInPieces runs every technique in pieces (R and S cut to fit a
// small memory limit, R's next piece prefetched) on three owners: each
// owner loads the pieces of the super-tiles it takes, and the prefetch is
// a guess.
func TestOwnersInPieces(t *testing.T) {
	needGPU(t)
	info := mustDevice(t).dev.Info()
	rng := rand.New(rand.NewPCG(41, 42))
	cases := []testCase{
		{"self", randomSets(rng, 300, 3000, 200), nil},
		{"rxs", randomSets(rng, 260, 3000, 150), randomSets(rng, 200, 3000, 250)},
	}
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
		tp, err := allpairs.NewTilePlan(r, s, rows, cols, allpairs.Options{Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tech := range testTechniques(t) {
			if wholeOnly(tech) {
				continue
			}
			limits := pieceLimits(t, tp.Problem, tech, tiling(2000, 0), info)
			if len(limits) == 0 {
				continue
			}
			limit := limits[len(limits)-1] // the most pieces
			for _, gpus := range ownerLists[1:] {
				t.Run(fmt.Sprintf("%s/%s/limit=%d/gpus=%v", tc.name, tech.name(), limit, gpus), func(t *testing.T) {
					got, pl, err := tilesOf(r, s, rows, cols, allpairs.Options{Device: "gpu", GPUs: gpus}, tuned(t, tech.name(), tiling(2000, limit)))
					if err != nil {
						t.Fatal(err)
					}
					compare(t, want, got, r.Len())
					t.Logf("%s", pl.Notes())
				})
			}
		}
	}
}

// TestOwnersStopOnError fails the caller's tile callback at its fifth
// tile: the run stops on every owner and returns that error; a cancelled
// context stops it likewise.
func TestOwnersStopOnError(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(43, 44))
	r := collection(t, randomSets(rng, 400, 2000, 100))
	boom := errors.New("boom")
	for _, tech := range testTechNames(t) {
		t.Run(tech, func(t *testing.T) {
			pl, err := planOn(tuned(t, tech, tiling(256, 0)), r, nil, allpairs.Query{}, 16, 16, allpairs.Options{Device: "gpu", GPUs: []int{0, 0, 0}})
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			err = pl.Tiles(context.Background(), func(*allpairs.Tile) error {
				if calls.Add(1) == 5 {
					return boom
				}
				return nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Tiles = %v, want boom", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			pl, err = planOn(tuned(t, tech, tiling(256, 0)), r, nil, allpairs.Query{MinOverlap: 1}, 0, 0, allpairs.Options{Device: "gpu", GPUs: []int{0, 0}})
			if err != nil {
				t.Fatal(err)
			}
			err = pl.Join(ctx, func([]allpairs.Pair) error {
				cancel()
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Join after cancel = %v, want context.Canceled", err)
			}
			// The owners are free for the next run.
			got, err := allpairs.Collect(context.Background(), r, nil, allpairs.Query{MinOverlap: 3}, allpairs.Options{Device: "gpu", Technique: tech, GPUs: []int{0, 0}})
			if err != nil {
				t.Fatal(err)
			}
			want, err := allpairs.Collect(context.Background(), r, nil, allpairs.Query{MinOverlap: 3}, allpairs.Options{Device: "cpu", Technique: "scancount"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after the stopped runs: %d pairs, want %d", len(got), len(want))
			}
		})
	}
}

// TestSpreadEstimate checks the planner's arithmetic for several GPUs:
// the super-tiles' time divides by the GPUs (never by more than there are
// super-tiles), what every GPU does once does not, nor does the host's
// report of the pairs, which overlaps the super-tiles.
func TestSpreadEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	p := problem(t, randomSets(rng, 3000, 2000, 50), nil, 0, 0)
	pl, err := plan(p, mmTech{}, tiling(1<<16, 0), gpurt.ReferenceH100(), 1<<34)
	if err != nil {
		t.Fatal(err)
	}
	if pl.supers < 8 || pl.tiledSec <= 0 || pl.onceSec <= 0 {
		t.Fatalf("plan of %d super-tiles, %.3g s tiled, %.3g s once", pl.supers, pl.tiledSec, pl.onceSec)
	}
	// Overlap 1 between sets of 50 of 2000 elements: most pairs qualify.
	if pl.reportSec <= 0 || pl.reportSec != p.ReportSeconds() {
		t.Fatalf("the pairs' report: %.3g s in the plan, %.3g s in the problem", pl.reportSec, p.ReportSeconds())
	}
	at := func(n float64) float64 {
		a, b := pl.tiledSec/n, pl.reportSec
		return pl.onceSec + (max(a, b) + min(a, b)/4)
	}
	if want := at(1); pl.seconds != want {
		t.Fatalf("one GPU: %.6g s, want %.6g", pl.seconds, want)
	}
	pl.spread(4, "GPUs 0, 1, 2, 3")
	if want := at(4); pl.seconds != want || !strings.Contains(pl.detail, "spread over GPUs 0, 1, 2, 3") {
		t.Fatalf("4 GPUs: %.6g s (%s), want %.6g", pl.seconds, pl.detail, want)
	}
	pl.spread(pl.supers+100, "many")
	if want := at(float64(pl.supers)); pl.seconds != want {
		t.Fatalf("more GPUs than super-tiles: %.6g s, want %.6g", pl.seconds, want)
	}

	// A count reports nothing, and brings nothing back.
	p.CountOnly = true
	pl, err = plan(p, mmTech{}, tiling(1<<16, 0), gpurt.ReferenceH100(), 1<<34)
	if err != nil {
		t.Fatal(err)
	}
	if pl.reportSec != 0 || pl.seconds != pl.onceSec+pl.tiledSec {
		t.Fatalf("a count: %.3g s of report, %.6g s in all, want %.6g", pl.reportSec, pl.seconds, pl.onceSec+pl.tiledSec)
	}
}

// TestMMJoinOwners runs MMJoin across devices on one, two and three owners
// of GPU 0, which share the bands of the heavy product: bands of a few
// rows (many of them), a host budget of a few, int8 and float16 products,
// both layouts, self-joins and joins; the pairs are the CPU's, and the
// notes name the owners and their bands.
func TestMMJoinOwners(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(47, 48))
	r := collection(t, skewedSets(rng, 300, 2000, 400))
	s := collection(t, skewedSets(rng, 200, 2500, 300))
	queries := []allpairs.Query{{MinOverlap: 1}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, other := range []*sets.Collection{nil, s} {
		for qi, q := range queries {
			want, err := allpairs.Collect(context.Background(), r, other, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
			if err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []struct {
				counts, host int64
				half         bool
				layout       int
			}{{1000, 8000, false, layoutProbe}, {3000, 1 << 30, true, layoutElement}, {1000, 1 << 30, false, layoutElement}} {
				for _, gpus := range ownerLists {
					name := fmt.Sprintf("self=%v/q%d/counts=%d/host=%d/half=%v/layout=%d/gpus=%v", other == nil, qi, cfg.counts, cfg.host, cfg.half, cfg.layout, gpus)
					t.Run(name, func(t *testing.T) {
						tu := cheapProduct(1e-6)
						tu.bandCounts, tu.bandHostBytes, tu.half, tu.layout = cfg.counts, cfg.host, cfg.half, cfg.layout
						pl, err := planOn(tuned(t, "mmjoin", tu), r, other, q, 0, 0, allpairs.Options{Device: "gpu", GPUs: gpus})
						if err != nil {
							t.Fatal(err)
						}
						got, err := pl.Collect(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("%d pairs, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
						}
						checkNotes(t, pl, gpus)
						if notes := pl.Notes(); !strings.Contains(notes, "bands busy") || strings.Contains(notes, "outside the bands") {
							t.Fatalf("notes: %s", notes)
						}
						t.Logf("%s", pl.Notes())
					})
				}
			}
		}
	}
}

// TestWeighGPUs: where the problem leaves its GPUs to the planner, a
// problem of milliseconds runs on the first GPU alone on a host of several
// (gpurt.Weigh), and the plan says so; on a host of one nothing is
// weighed, and the run is on GPU 0. Either way the pairs are the CPU's.
func TestWeighGPUs(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(7, 8))
	r := collection(t, randomSets(rng, 300, 2000, 60))
	q := allpairs.Query{MinOverlap: 2}
	want, err := allpairs.Collect(context.Background(), r, nil, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := gpurt.CheckGPUs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tech := range testTechNames(t) {
		pl, err := planOn(tuned(t, tech, defaultTuning()), r, nil, q, 0, 0, allpairs.Options{Device: "gpu"})
		if err != nil {
			t.Fatalf("%s: %v", tech, err)
		}
		est := pl.Chosen.Estimate
		gputest.CheckWeighed(t, tech, len(all), est.Detail, est.DeviceName)
		got, err := pl.Collect(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", tech, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d pairs, want %d", tech, len(got), len(want))
		}
	}
}
