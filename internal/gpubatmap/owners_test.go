package gpubatmap

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/pairs"
	"github.com/xsect/xsect/sets"
)

// TestOwners runs every case on two and three owners of GPU 0, with
// batches of the usual size and small ones (many batches to share):
// pairs, counts and dense counts as on one owner, which checkResults
// checks against the sets.
func TestOwners(t *testing.T) {
	needGPU(t)
	for _, gpus := range [][]int{{0, 0}, {0, 0, 0}} {
		set, err := gpurt.OpenSet(gpus)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range refCases() {
			t.Run(fmt.Sprintf("%s/gpus=%v", c.name, gpus), func(t *testing.T) {
				b := build(t, c)
				for _, batchEntries := range []int64{1 << 24, 3000} {
					checkResults(t, c, b, func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
						opt.maxEntries = batchEntries
						var st Stats
						opt.Stats = &st
						n, err := run(context.Background(), set, b, opt, m, emit, tileFn)
						if err == nil && m != modeDense && st.Batches >= len(gpus) && !strings.Contains(st.String(), fmt.Sprintf("(%d owners)", len(gpus))) {
							t.Errorf("stats do not name the owners: %s", st.String())
						}
						return n, err
					})
				}
			})
		}
	}
}

// TestOwnersWorkers checks the worker ids of Pairs on several owners: in
// [0, Workers), never used by two goroutines at once.
func TestOwnersWorkers(t *testing.T) {
	needGPU(t)
	set, err := gpurt.OpenSet([]int{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	b := build(t, refCases()[3])
	opt := Options{MinCount: 1, Threads: 7, maxEntries: 2000}
	nw := Workers(opt, set)
	if nw != 6 {
		t.Fatalf("Workers(7 threads, 3 owners) = %d, want 6", nw)
	}
	busy := make([]atomic.Bool, nw)
	var pairs atomic.Int64
	err = Pairs(context.Background(), set, b, opt, func(w int, ps []Pair) error {
		if w < 0 || w >= nw {
			return fmt.Errorf("worker %d of %d", w, nw)
		}
		if !busy[w].CompareAndSwap(false, true) {
			return fmt.Errorf("worker %d used by two goroutines at once", w)
		}
		defer busy[w].Store(false)
		pairs.Add(int64(len(ps)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Count(context.Background(), gpurt.NewSet(set.Owner(0)), b, opt)
	if err != nil || n != pairs.Load() {
		t.Fatalf("%d pairs on 3 owners, %d (%v) on one", pairs.Load(), n, err)
	}
}

// TestOwnersStop fails fn on the third call: every owner stops and Pairs
// returns that error; the set then runs again.
func TestOwnersStop(t *testing.T) {
	needGPU(t)
	set, err := gpurt.OpenSet([]int{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	b := build(t, refCases()[3])
	boom := errors.New("boom")
	var calls atomic.Int64
	err = Pairs(context.Background(), set, b, Options{Threads: 4, maxEntries: 500}, func(int, []Pair) error {
		if calls.Add(1) == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Pairs = %v, want boom", err)
	}
	want, err := Count(context.Background(), gpurt.NewSet(set.Owner(0)), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Count(context.Background(), set, b, Options{maxEntries: 500})
	if err != nil || got != want {
		t.Fatalf("after the stopped run: %d (%v), want %d", got, err, want)
	}
}

// TestOwnersEngines runs the pairs and allpairs engines with GPUs set to
// two owners: the same pairs as the CPU.
func TestOwnersEngines(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(51, 52))
	tx := sets.New()
	var s []uint32
	for range 2000 {
		s = s[:0]
		for x := range 600 {
			if r.Float64() < 0.03+0.2*float64(x%7)/7 {
				s = append(s, uint32(x))
			}
		}
		tx.Add(s)
	}
	for _, support := range []int{1, 40} {
		want, err := pairs.Collect(context.Background(), tx, pairs.Options{MinSupport: support, Technique: "apriori", Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: support, Technique: "batmap", Device: "gpu", GPUs: []int{0, 0}})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []pairs.Pair
		if _, err := plan.Run(context.Background(), func(ps []pairs.Pair) error {
			mu.Lock()
			got = append(got, ps...)
			mu.Unlock()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		sets.SortPairs(got)
		if !slices.Equal(got, want) {
			t.Fatalf("support %d: %d pairs, want %d", support, len(got), len(want))
		}
		if !strings.Contains(plan.Notes(), "2 owners") {
			t.Errorf("notes do not name the owners: %q", plan.Notes())
		}
	}
	c := collection(r, 700, 20000, 900)
	for _, q := range []allpairs.Query{{MinOverlap: 1}, {Containment: allpairs.Ratio{Num: 1, Den: 10}}} {
		want, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "gpu", GPUs: []int{0, 0, 0}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: %d pairs, want %d", q, len(got), len(want))
		}
		n, _, err := allpairs.Count(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "gpu", GPUs: []int{0, 0}})
		if err != nil || n != int64(len(want)) {
			t.Fatalf("%+v: count %d (%v), want %d", q, n, err, len(want))
		}
		// Every GPU of a host of several, named: the planner would give
		// so small a problem the first alone.
		if all, err := gpurt.CheckGPUs(nil); err == nil && len(all) > 1 {
			got, err := allpairs.Collect(context.Background(), c, nil, q, allpairs.Options{Technique: "batmap", Device: "gpu", GPUs: all})
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%+v on GPUs %v: %d pairs (%v), want %d", q, all, len(got), err, len(want))
			}
		}
	}
}
