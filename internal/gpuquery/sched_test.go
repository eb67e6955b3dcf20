package gpuquery

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/xsect/xsect/internal/query"
)

// The scheduler's tests run on fake runners, on any machine. A fake
// query's Terms are {mode, i}: its answer is Count i and IDs {the
// owner}; mode failQuery fails the search, a mode with a gate blocks the
// search until the gate is closed or its context is done.
const failQuery = 1

var errFake = errors.New("fake runner failed")

type fakeCall struct {
	owner, runner int
	first, n      int // the search's first query (its i) and length
}

type fakes struct {
	t     *testing.T
	mu    sync.Mutex
	calls []fakeCall
	gates map[uint32]chan struct{}
}

type fakeRunner struct {
	f             *fakes
	owner, runner int
	busy          atomic.Bool
}

func (r *fakeRunner) Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	if !r.busy.CompareAndSwap(false, true) {
		r.f.t.Errorf("owner %d runner %d: two searches at once", r.owner, r.runner)
	}
	defer r.busy.Store(false)
	r.f.mu.Lock()
	r.f.calls = append(r.f.calls, fakeCall{r.owner, r.runner, int(qs[0].Terms[1]), len(qs)})
	gate := r.f.gates[qs[0].Terms[0]]
	r.f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i, q := range qs {
		if q.Terms[0] == failQuery {
			return errFake
		}
		res[i] = query.Result{Count: int(q.Terms[1]), IDs: append(res[i].IDs[:0], uint32(r.owner))}
		if i%3 == 0 {
			runtime.Gosched() // let other searches run meanwhile
		}
	}
	return nil
}

// newFakes returns a scheduler over owners owners of perOwner fake
// runners each.
func newFakes(t *testing.T, owners, perOwner, minPart int) (*sched, *fakes) {
	f := &fakes{t: t, gates: map[uint32]chan struct{}{}}
	rs := make([][]searcher, owners)
	for o := range rs {
		for k := range perOwner {
			rs[o] = append(rs[o], &fakeRunner{f: f, owner: o, runner: k})
		}
	}
	return newSched(rs, minPart), f
}

// gate returns the gate of mode, made at first use.
func (f *fakes) gate(mode uint32) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gates[mode] == nil {
		f.gates[mode] = make(chan struct{})
	}
	return f.gates[mode]
}

// take returns the calls made since the last take.
func (f *fakes) take() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func fakeQueries(n int, mode uint32) []query.Query {
	qs := make([]query.Query, n)
	for i := range qs {
		qs[i].Terms = []uint32{mode, uint32(i)}
	}
	return qs
}

// checkAnswers checks that res[i] answers query i, and returns the owner
// that answered each.
func checkAnswers(t *testing.T, res []query.Result) []int {
	t.Helper()
	owners := make([]int, len(res))
	for i, r := range res {
		if r.Count != i || len(r.IDs) != 1 {
			t.Fatalf("result %d: %+v", i, r)
		}
		owners[i] = int(r.IDs[0])
	}
	return owners
}

func TestSchedSplit(t *testing.T) {
	const minPart = 4
	for _, owners := range []int{1, 2, 3} {
		s, f := newFakes(t, owners, 2, minPart)
		for _, n := range []int{0, 1, minPart - 1, minPart, 2*minPart - 1, 2 * minPart, 2*minPart + 1, 3 * minPart, 3*minPart + 2, 10*minPart + 3, 1000} {
			res := make([]query.Result, n)
			if err := s.Search(context.Background(), fakeQueries(n, 0), -1, false, res); err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, res)
			calls := f.take()
			parts := max(1, min(owners, n/minPart))
			if n == 0 {
				parts = 0
			}
			if len(calls) != parts {
				t.Fatalf("%d owners, %d queries: %d parts, want %d", owners, n, len(calls), parts)
			}
			// The parts, in order of their first query, tile the search
			// in near-equal contiguous pieces.
			slices.SortFunc(calls, func(a, b fakeCall) int { return a.first - b.first })
			at := 0
			for k, c := range calls {
				if c.first != at || c.n != (k+1)*n/parts-k*n/parts {
					t.Fatalf("%d owners, %d queries: parts %+v", owners, n, calls)
				}
				if parts > 1 && c.n < minPart {
					t.Fatalf("%d owners, %d queries: a part of %d", owners, n, c.n)
				}
				at += c.n
			}
		}
	}
}

// TestSchedSplitParallel checks that the parts of a split search run at
// once, each on its own owner: every part waits at a gate that opens only
// once all have started.
func TestSchedSplitParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const owners, minPart = 3, 5
		s, f := newFakes(t, owners, 2, minPart)
		gate := f.gate(7)
		n := owners*minPart + 2
		res := make([]query.Result, n)
		done := make(chan error)
		go func() { done <- s.Search(context.Background(), fakeQueries(n, 7), -1, false, res) }()
		synctest.Wait()
		calls := f.take()
		seen := map[int]bool{}
		for _, c := range calls {
			seen[c.owner] = true
		}
		if len(calls) != owners || len(seen) != owners {
			t.Fatalf("parts running at once: %+v, want one on each of %d owners", calls, owners)
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		checkAnswers(t, res)

		// Owner 0 busy with a search of more queries than a part, owner
		// 1 idle with two free runners: the part that comes second, seeing
		// owner 1 the less loaded, still goes to owner 0.
		s, f = newFakes(t, 2, 2, minPart)
		gate, big := f.gate(7), f.gate(8)
		heavy := make(chan error)
		go func() {
			heavy <- s.Search(context.Background(), fakeQueries(2*minPart-1, 8), -1, false, make([]query.Result, 2*minPart-1))
		}()
		synctest.Wait()
		f.take()
		res = make([]query.Result, 2*minPart)
		go func() { done <- s.Search(context.Background(), fakeQueries(len(res), 7), -1, false, res) }()
		synctest.Wait()
		if calls := f.take(); len(calls) != 2 || calls[0].owner == calls[1].owner {
			t.Fatalf("parts running at once: %+v, want one on each owner", calls)
		}
		close(gate)
		close(big)
		if err := errors.Join(<-done, <-heavy); err != nil {
			t.Fatal(err)
		}
		checkAnswers(t, res)
	})
}

// TestSchedSplitBusy splits a search while all but one owner are busy:
// its parts run one after the other on the free owner, and the search
// does not wait for the others.
func TestSchedSplitBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const minPart = 4
		s, f := newFakes(t, 3, 1, minPart)
		gate := f.gate(7)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if err := s.Search(context.Background(), fakeQueries(1, 7), -1, false, make([]query.Result, 1)); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		busy := f.take()
		free := 3 - busy[0].owner - busy[1].owner // owners 0+1+2 = 3
		res := make([]query.Result, 3*minPart)
		if err := s.Search(context.Background(), fakeQueries(len(res), 0), -1, false, res); err != nil {
			t.Fatal(err)
		}
		for i, o := range checkAnswers(t, res) {
			if o != free {
				t.Fatalf("query %d answered on owner %d, want the free one, %d", i, o, free)
			}
		}
		if calls := f.take(); len(calls) != 3 {
			t.Fatalf("parts %+v, want 3", calls)
		}
		close(gate)
		wg.Wait()
	})
}

// TestSchedRouting checks that small searches go to the owner with the
// fewest queries in flight, and wait when every runner is busy.
func TestSchedRouting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := newFakes(t, 2, 2, 1000)
		type search struct {
			n    int
			gate uint32
			done chan error
			res  []query.Result
		}
		start := func(n int, gate uint32) *search {
			f.gate(gate)
			sr := &search{n: n, gate: gate, done: make(chan error, 1), res: make([]query.Result, n)}
			go func() { sr.done <- s.Search(context.Background(), fakeQueries(n, gate), -1, false, sr.res) }()
			synctest.Wait()
			return sr
		}
		ownerOf := func(what string, want int) {
			t.Helper()
			calls := f.take()
			if len(calls) != 1 || calls[0].owner != want {
				t.Fatalf("%s: calls %+v, want one on owner %d", what, calls, want)
			}
		}
		a := start(10, 10)
		ownerOf("first search", 0) // a tie: the first owner
		b := start(3, 11)
		ownerOf("second search", 1) // owner 1 has nothing in flight
		c := start(1, 12)
		ownerOf("third search", 1) // owner 1 has 3 queries in flight, owner 0 10
		d := start(1, 13)
		ownerOf("fourth search", 0) // owner 1's runners are both busy
		e := start(2, 14)
		if calls := f.take(); len(calls) != 0 {
			t.Fatalf("a search ran with every runner busy: %+v", calls)
		}
		select {
		case err := <-e.done:
			t.Fatalf("a search returned (%v) with every runner busy", err)
		default:
		}
		close(f.gate(10)) // a ends: owner 0 has a free runner
		synctest.Wait()
		ownerOf("waiting search", 0)
		for _, sr := range []*search{b, c, d, e} {
			close(f.gate(sr.gate))
		}
		for _, sr := range []*search{a, b, c, d, e} {
			if err := <-sr.done; err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, sr.res)
		}
	})
}

// TestSchedCancel cancels searches waiting for a runner and searches
// running, whole or split: each returns the context's error.
func TestSchedCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const minPart = 3
		s, f := newFakes(t, 2, 1, minPart)
		gate := f.gate(7)
		for _, tc := range []struct {
			what string
			n    int
			busy bool // every runner busy first: the search waits
		}{{"waiting", 1, true}, {"waiting split", 4 * minPart, true}, {"running", 1, false}, {"running split", 4 * minPart, false}} {
			ctx, cancel := context.WithCancel(context.Background())
			var held sync.WaitGroup
			if tc.busy {
				for range 2 {
					held.Go(func() { s.Search(context.Background(), fakeQueries(1, 7), -1, false, make([]query.Result, 1)) })
				}
				synctest.Wait()
			}
			done := make(chan error, 1)
			go func() { done <- s.Search(ctx, fakeQueries(tc.n, 7), -1, false, make([]query.Result, tc.n)) }()
			synctest.Wait()
			cancel()
			if err := <-done; err != context.Canceled {
				t.Fatalf("%s: %v, want %v", tc.what, err, context.Canceled)
			}
			if tc.busy {
				gate <- struct{}{}
				gate <- struct{}{}
				held.Wait()
			}
			f.take()
		}
		// The runners are all free again.
		res := make([]query.Result, 4*minPart)
		if err := s.Search(context.Background(), fakeQueries(len(res), 0), -1, false, res); err != nil {
			t.Fatal(err)
		}
		checkAnswers(t, res)
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Search(canceled, fakeQueries(1, 0), -1, false, make([]query.Result, 1)); err != context.Canceled {
			t.Fatalf("search on a canceled context: %v", err)
		}
	})
}

// TestSchedError fails one part of a split search while the others wait
// at a gate that never opens: the failure stops them, and the search
// returns that error alone.
func TestSchedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const owners, minPart = 4, 10
		s, f := newFakes(t, owners, 2, minPart)
		f.gate(7)
		for bad := range owners {
			qs := fakeQueries(owners*minPart, 7)
			for i := bad * minPart; i < (bad+1)*minPart; i++ {
				qs[i].Terms[0] = failQuery
			}
			err := s.Search(context.Background(), qs, -1, false, make([]query.Result, len(qs)))
			if err != errFake {
				t.Fatalf("part %d failing: %v, want %v", bad, err, errFake)
			}
		}
		// A small search's error too.
		if err := s.Search(context.Background(), fakeQueries(1, failQuery), -1, false, make([]query.Result, 1)); err != errFake {
			t.Fatalf("small search: %v", err)
		}
	})
}

func TestSchedClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := newFakes(t, 1, 1, 10)
		gate := f.gate(7)
		held := make(chan error, 1)
		go func() { held <- s.Search(context.Background(), fakeQueries(1, 7), -1, false, make([]query.Result, 1)) }()
		synctest.Wait()
		waiting := make(chan error, 1)
		go func() {
			waiting <- s.Search(context.Background(), fakeQueries(1, 0), -1, false, make([]query.Result, 1))
		}()
		synctest.Wait()
		s.close()
		if err := <-waiting; err != errClosed {
			t.Fatalf("waiting search after close: %v", err)
		}
		close(gate)
		if err := <-held; err != nil {
			t.Fatalf("running search after close: %v", err)
		}
		for _, n := range []int{0, 1, 100} {
			if err := s.Search(context.Background(), fakeQueries(n, 0), -1, false, make([]query.Result, n)); err != errClosed {
				t.Fatalf("search of %d after close: %v", n, err)
			}
		}
	})
}

// TestSchedConcurrent runs searches of every size from several goroutines
// at once: every answer lands in its place, and no runner ever runs two
// searches at once (the fake checks; run with -race).
func TestSchedConcurrent(t *testing.T) {
	s, _ := newFakes(t, 3, 2, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 40 {
				n := (g*37 + k*11) % 90
				res := make([]query.Result, n)
				if err := s.Search(context.Background(), fakeQueries(n, 0), -1, false, res); err != nil {
					t.Error(err)
					return
				}
				for i, r := range res {
					if r.Count != i {
						t.Errorf("search of %d: result %d is %+v", n, i, r)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for o := range s.owners {
		if ow := s.owners[o]; ow.busy != 0 || ow.load != 0 || len(ow.free) != 2 {
			t.Errorf("owner %d after the searches: %+v", o, ow)
		}
	}
}
