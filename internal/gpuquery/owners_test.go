package gpuquery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
	"github.com/xsect/xsect/sets"
)

// The engine on two owners of GPU 0, {0, 0}: the splitting and routing
// over several GPUs, run on one.
var twoOwners = []int{0, 0}

// openOwnersRunner opens the engine as query.Searcher does, on gpus, or
// skips saying why there is no GPU.
func openOwnersRunner(t testing.TB, ix *invindex.Index, threads int, gpus []int) *setRunner {
	t.Helper()
	gputest.Need(t, gpurt.Available())
	r, err := gpuEngine{}.Open(&query.Workload{Index: ix, Threads: threads, GPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r.(*setRunner)
}

// TestGPUOwners runs the random cases of TestGPUReference on two owners of
// GPU 0, whole and split into parts (a small minimum part), and checks the
// notes name both owners once both have run batches.
func TestGPUOwners(t *testing.T) {
	referenceCases(t, rand.New(rand.NewPCG(41, 42)), func(ix *invindex.Index, docs *sets.Collection, qs []query.Query) {
		r := openOwnersRunner(t, ix, 3, twoOwners)
		if r.set.Len() != 2 || len(r.runners[0]) != runnersPerOwner || len(r.runners[1]) != runnersPerOwner {
			t.Fatalf("%d owners, runners %d and %d", r.set.Len(), len(r.runners[0]), len(r.runners[1]))
		}
		compare(t, r, ix, docs, qs, []int{-1, 0, 1, 3})
		for _, part := range []int{1, 700, len(qs) / 2, len(qs)/2 + 1} {
			r.sched.minPart = part
			compare(t, r, ix, docs, qs, []int{-1, 2})
		}
		notes := r.Notes()
		for _, who := range []string{"gpu 0#0: ", "gpu 0#1: "} {
			if !strings.Contains(notes, who) {
				t.Fatalf("notes without %q:\n%s", who, notes)
			}
		}
	})
}

// TestGPUOwnersSplit answers searches of more than two device batches on
// two owners with the real minimum part: they are split, and their ids
// overflow a batch's buffers.
func TestGPUOwnersSplit(t *testing.T) {
	ix, qs := longCase(t, rand.New(rand.NewPCG(43, 44)), 1<<15, invindex.BuildOptions{DenseRatio: -1}, 2*minPart+1000)
	r := openOwnersRunner(t, ix, 4, twoOwners)
	if r.sched.parts(len(qs)) != 2 {
		t.Fatalf("a search of %d queries in %d parts, want 2", len(qs), r.sched.parts(len(qs)))
	}
	compare(t, r, ix, nil, qs, []int{-1, 10})
}

// TestGPUOwnersConcurrent searches from several goroutines at once, small
// searches and split ones, on two owners of GPU 0, each answer checked
// against the CPU engine's.
func TestGPUOwnersConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	docs, ix, qs := randomCase(t, rng, 3000, 200, 12, 6000)
	r := openOwnersRunner(t, ix, 2, twoOwners)
	r.sched.minPart = 1000
	checkConcurrent(t, r, ix, qs, 6, 12)
	compare(t, r, ix, docs, qs, []int{-1, 3})
}

// countdown is a search's context as one part sees it: after n checks of
// Err it cancels the whole search (cancel) and reports it canceled.
type countdown struct {
	context.Context
	n      atomic.Int64
	cancel func()
}

func (c *countdown) Err() error {
	if c.n.Add(-1) < 0 {
		c.cancel()
		return context.Canceled
	}
	return c.Context.Err()
}

// cancelingRunner runs its searches under a countdown.
type cancelingRunner struct {
	r      searcher
	n      int
	cancel func()
}

func (c cancelingRunner) Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	cd := &countdown{Context: ctx, cancel: c.cancel}
	cd.n.Store(int64(c.n))
	return c.r.Search(cd, qs, limit, countOnly, res)
}

// TestGPUOwnersCanceled cancels split searches on two owners of GPU 0 from
// inside a part, between its device batches, with batches of the other
// part on the device: the search returns the context's error, and the
// searches after it are right.
func TestGPUOwnersCanceled(t *testing.T) {
	ix, qs := cancelCase(t, rand.New(rand.NewPCG(50, 51)))
	r := openOwnersRunner(t, ix, 2, twoOwners)
	whole := r.sched
	for _, owner := range r.runners {
		for _, dr := range owner {
			dr.batchQueries = 1000
		}
	}
	for _, n := range []int{0, 1, 3, 7} {
		for _, countOnly := range []bool{true, false} {
			ctx, cancel := context.WithCancel(context.Background())
			rs := make([][]searcher, len(r.runners))
			for i, owner := range r.runners {
				for _, dr := range owner {
					rs[i] = append(rs[i], cancelingRunner{dr, n, cancel})
				}
			}
			r.sched = newSched(rs, len(qs)/2)
			res := make([]query.Result, len(qs))
			err := r.Search(ctx, qs, 10, countOnly, res)
			cancel()
			if err != context.Canceled {
				t.Fatalf("canceled after %d checks: %v", n, err)
			}
		}
		r.sched = whole
		compare(t, r, ix, nil, qs, []int{-1, 10})
	}
}

// checkConcurrent runs rounds of searches of slices of qs of many sizes
// (split where they reach two minimum parts) from goroutines at once, and
// checks each answer against the CPU engine's.
func checkConcurrent(t *testing.T, r query.Runner, ix *invindex.Index, qs []query.Query, goroutines, rounds int) {
	t.Helper()
	const limit = 10
	want := make([]query.Result, len(qs))
	if err := query.NewCPU(ix, 0).Search(context.Background(), qs, limit, false, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 47))
			var res []query.Result
			for k := range rounds {
				var lo, hi int
				switch k % 3 {
				case 0: // a server's batch
					lo = rng.IntN(len(qs))
					hi = min(len(qs), lo+1+rng.IntN(64))
				case 1: // any slice
					lo = rng.IntN(len(qs))
					hi = lo + rng.IntN(len(qs)-lo+1)
				default: // the whole
					lo, hi = 0, len(qs)
				}
				res = slices.Grow(res[:0], hi-lo)[:hi-lo]
				countOnly := k%4 == 3
				if err := r.Search(context.Background(), qs[lo:hi], limit, countOnly, res); err != nil {
					errs <- err
					return
				}
				for i := range res {
					w := want[lo+i]
					if res[i].Count != w.Count || !countOnly && !slices.Equal(res[i].IDs, w.IDs) || countOnly && res[i].IDs != nil {
						errs <- fmt.Errorf("goroutine %d round %d, queries [%d, %d), count only %v: query %d %v: GPU %d %v, CPU %d %v",
							g, k, lo, hi, countOnly, lo+i, qs[lo+i].Terms, res[i].Count, head(res[i].IDs), w.Count, head(w.IDs))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGPUOwnersRealData runs the TREC 2005 efficiency queries on gcide on
// two owners of GPU 0: three times over in one search (split with the
// real minimum part; the counts of the queries of 2+ terms sum to three
// times the anchors' 2,451,938), against the CPU engine, and from several
// goroutines at once.
func TestGPUOwnersRealData(t *testing.T) {
	gputest.Need(t, gpurt.Available())
	ix, qs := gcideTREC(t)
	r := openOwnersRunner(t, ix, 0, twoOwners)
	var three []query.Query
	for range 3 {
		three = append(three, qs...)
	}
	if r.sched.parts(len(three)) != 2 {
		t.Fatalf("a search of %d queries in %d parts, want 2", len(three), r.sched.parts(len(three)))
	}
	res := make([]query.Result, len(three))
	if err := r.Search(context.Background(), three, -1, true, res); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i, q := range three {
		if len(q.Terms) >= 2 {
			sum += res[i].Count
		}
	}
	if sum != 3*2451938 {
		t.Errorf("counts of the queries of 2+ terms sum to %d, want %d", sum, 3*2451938)
	}
	compare(t, r, ix, nil, three, []int{-1, 10})
	r.sched.minPart = 8192
	checkConcurrent(t, r, ix, qs, 8, 9)
	t.Log(r.Notes())
}

func TestGPUOwnersClosed(t *testing.T) {
	ix, _ := invindex.FromDocs(sets.FromSets([]uint32{1, 2}), invindex.BuildOptions{})
	r := openOwnersRunner(t, ix, 1, twoOwners)
	for range 2 {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Search(context.Background(), make([]query.Query, 1), -1, false, make([]query.Result, 1)); err == nil {
		t.Error("Search after Close succeeded")
	}
}

// TestEstimateGPUs checks, on any machine, that the estimate spreads the
// device's work over the distinct GPUs asked for, and counts the memory
// of every owner of the most shared GPU.
func TestEstimateGPUs(t *testing.T) {
	rng := rand.New(rand.NewPCG(48, 49))
	_, ix, sample := randomCase(t, rng, 2000, 100, 30, 100)
	est := func(gpus []int) engine.Estimate {
		e, err := gpuEngine{}.Estimate(&query.Workload{Index: ix, Threads: 4, GPUs: gpus, Sample: sample, Queries: 1e9})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	one, two, same, twice := est([]int{0}), est([]int{0, 1}), est([]int{1, 1}), est([]int{0, 0, 1})
	if !(two.Seconds < one.Seconds && same.Seconds >= one.Seconds && twice.Seconds > two.Seconds) {
		t.Errorf("seconds: GPU 0 %g, GPUs 0 and 1 %g, GPU 1 twice %g, 0 twice and 1 %g", one.Seconds, two.Seconds, same.Seconds, twice.Seconds)
	}
	if one.Memory <= 0 || two.Memory != one.Memory || same.Memory != 2*one.Memory || twice.Memory != 2*one.Memory {
		t.Errorf("memory: %d, %d, %d, %d", one.Memory, two.Memory, same.Memory, twice.Memory)
	}
	if !strings.Contains(one.Detail, "over 1 GPU") || !strings.Contains(two.Detail, "over 2 GPUs") || !strings.Contains(same.Detail, "over 1 GPU") {
		t.Errorf("details: %q, %q, %q", one.Detail, two.Detail, same.Detail)
	}
}

// TestWeighGPUs: a command's few queries, whose GPUs are left to the
// planner, run on the first GPU alone on a host of several (the estimate
// says why), and unknown queries (a server's stream) on every GPU;
// on a host of one nothing is weighed. The answers are the CPU's either
// way.
func TestWeighGPUs(t *testing.T) {
	gputest.Need(t, gpurt.Available())
	docs, ix, qs := randomCase(t, rand.New(rand.NewPCG(31, 32)), 3000, 200, 400, 64)
	all, err := gpurt.CheckGPUs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, queries := range []int{len(qs), 0} {
		w := &query.Workload{Index: ix, Threads: 2, Sample: qs, Queries: queries}
		if queries == 0 {
			w.Sample = nil
		}
		cs, chosen, err := query.Plan(w, engine.Choice{Device: "gpu"})
		if err != nil {
			t.Fatalf("queries %d: %v (%v)", queries, err, cs)
		}
		est := chosen.Estimate
		if queries > 0 {
			gputest.CheckWeighed(t, fmt.Sprintf("%d queries", queries), len(all), est.Detail, est.DeviceName)
		} else if strings.Contains(est.Detail, "alone") {
			t.Errorf("unknown queries on %d GPUs: %q; want nothing weighed", len(all), est.Detail)
		}
		r, err := chosen.Engine.Open(w)
		if err != nil {
			t.Fatal(err)
		}
		want := runnersPerOwner * len(all)
		if queries > 0 {
			want = runnersPerOwner // GPU 0 alone, weighed or the host's one
		}
		if got := r.Concurrency(); got != want {
			t.Errorf("%d queries on %d GPUs: concurrency %d, want %d", queries, len(all), got, want)
		}
		compare(t, r, ix, docs, qs, []int{-1, 2})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
