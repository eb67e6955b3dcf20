package gpuquery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/internal/query"
)

// searcher is what the scheduler hands searches to: a devRunner, or a
// fake in the tests. Each runs one search at a time.
type searcher interface {
	Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error
}

// minPart is the fewest queries of a part when a search is split over
// owners: a full device batch. Below that, one owner answers the search
// in one batch (or two pipelined ones), and a second owner would pay
// again the fixed cost of a search (its first batch's stages, which
// nothing overlaps) for little device work; and a server's batches (at
// most maxQueries by default) stay whole, each on one owner, leaving the
// other owners to the other batches in flight.
const minPart = maxQueries

// sched spreads searches over several owners (GPUs, or owners of one GPU),
// each with a few runners: a search of at least 2*minPart queries is cut
// into contiguous parts, one per owner, answered in parallel on runners
// of different owners; a smaller one goes to a free runner of the
// least-loaded owner (the fewest queries in flight). No runner ever runs
// two searches at once; a search waits for a free runner. It is safe for
// concurrent use.
type sched struct {
	minPart int
	mu      sync.Mutex
	owners  []schedOwner
	// wake is closed, and replaced, whenever a runner is freed or the
	// scheduler closes: the waiters then look again.
	wake   chan struct{}
	closed bool
}

type schedOwner struct {
	free []searcher // idle runners
	busy int        // runners in use
	load int        // queries in flight on the owner
}

var (
	errClosed = errors.New("query: Search on a closed searcher")
	// errStopped ends a part's wait for a runner when no part is left to
	// take.
	errStopped = errors.New("no part left")
)

// newSched returns a scheduler over runners[i], owner i's runners.
func newSched(runners [][]searcher, minPart int) *sched {
	s := &sched{minPart: max(minPart, 1), owners: make([]schedOwner, len(runners)), wake: make(chan struct{})}
	for i, rs := range runners {
		s.owners[i].free = append([]searcher(nil), rs...)
	}
	return s
}

// parts returns how many parts a search of n queries is cut into: one per
// owner, as long as each has at least minPart queries.
func (s *sched) parts(n int) int {
	return max(1, min(len(s.owners), n/s.minPart))
}

// Search answers qs into res (see query.Runner), on one runner or, for a
// large search, on one runner of each of several owners.
func (s *sched) Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	if len(res) != len(qs) {
		return fmt.Errorf("query: %d results for %d queries", len(res), len(qs))
	}
	if len(qs) == 0 {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return errClosed
		}
		return nil
	}
	if p := s.parts(len(qs)); p > 1 {
		return s.split(ctx, qs, limit, countOnly, res, p)
	}
	o, r, err := s.acquire(ctx, nil, nil, len(qs))
	if err != nil {
		return err
	}
	defer s.release(o, r, nil, len(qs))
	return r.Search(ctx, qs, limit, countOnly, res)
}

// split answers qs in parts contiguous parts. Up to parts workers (this
// goroutine one of them) each take a runner of an owner that no other
// worker of the search holds, then parts in order from a shared counter
// until none is left: parts run in parallel where runners are free, and
// one after the other on a worker that got its runner first where they
// are not, so that no search holds a runner while it waits for another.
// The first failure cancels the other parts.
func (s *sched) split(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result, parts int) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(qs)
	held := make([]bool, len(s.owners)) // under s.mu
	stop := make(chan struct{})         // closed once the last part is taken
	var (
		next     atomic.Int64
		stopOnce sync.Once
		errMu    sync.Mutex
		errs     []error
		wg       sync.WaitGroup
	)
	closeStop := func() { stopOnce.Do(func() { close(stop) }) }
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
		closeStop()
		cancel()
	}
	worker := func() {
		o, r, err := s.acquire(pctx, stop, held, 0)
		if err != nil {
			if err != errStopped {
				fail(err)
			}
			return
		}
		defer s.release(o, r, held, 0)
		for {
			k := int(next.Add(1)) - 1
			if k >= parts {
				return
			}
			if k == parts-1 {
				closeStop()
			}
			lo, hi := k*n/parts, (k+1)*n/parts
			s.charge(o, hi-lo)
			err := r.Search(pctx, qs[lo:hi], limit, countOnly, res[lo:hi])
			s.charge(o, lo-hi)
			if err != nil {
				fail(err)
				return
			}
		}
	}
	for range parts - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
	return partErrors(ctx, errs)
}

// partErrors returns the errors of a split search: ctx's error once when
// ctx is done, and the parts' other errors, without the cancellations
// that a failed part caused in the others.
func partErrors(ctx context.Context, errs []error) error {
	var keep []error
	done := false
	for _, err := range errs {
		switch {
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			done = true
		case ctx.Err() == nil && errors.Is(err, context.Canceled):
		default:
			keep = append(keep, err)
		}
	}
	if done {
		keep = append(keep, ctx.Err())
	}
	if len(keep) == 1 {
		return keep[0]
	}
	return errors.Join(keep...)
}

// acquire takes a free runner of the least-loaded owner (held excluded,
// where not nil; the owner taken is then marked in it), charging it
// queries, and returns the owner and the runner. It waits for one when
// none is free, and returns ctx.Err() when ctx is done, errStopped when
// stop is closed, errClosed once the scheduler is closed.
func (s *sched) acquire(ctx context.Context, stop <-chan struct{}, held []bool, queries int) (int, searcher, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		select {
		case <-stop:
			return 0, nil, errStopped
		default:
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, nil, errClosed
		}
		best := s.pickLocked(held)
		if best >= 0 {
			ow := &s.owners[best]
			r := ow.free[len(ow.free)-1]
			ow.free = ow.free[:len(ow.free)-1]
			ow.busy++
			ow.load += queries
			if held != nil {
				held[best] = true
			}
			s.mu.Unlock()
			return best, r, nil
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-stop:
			return 0, nil, errStopped
		}
	}
}

// pickLocked returns the owner with a free runner (not in held) that has
// the fewest queries in flight, then the fewest runners busy, or -1.
func (s *sched) pickLocked(held []bool) int {
	best := -1
	for i := range s.owners {
		ow := &s.owners[i]
		if len(ow.free) == 0 || held != nil && held[i] {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		if b := &s.owners[best]; ow.load < b.load || ow.load == b.load && ow.busy < b.busy {
			best = i
		}
	}
	return best
}

// release gives back owner o's runner r and the queries acquire charged,
// and wakes the waiters.
func (s *sched) release(o int, r searcher, held []bool, queries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ow := &s.owners[o]
	ow.free = append(ow.free, r)
	ow.busy--
	ow.load -= queries
	if held != nil {
		held[o] = false
	}
	s.wakeLocked()
}

// charge adds queries (negative: removes them) to owner o's load.
func (s *sched) charge(o, queries int) {
	s.mu.Lock()
	s.owners[o].load += queries
	s.mu.Unlock()
}

func (s *sched) wakeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// close makes every later search fail and wakes the waiting ones, which
// then fail too; searches running go on.
func (s *sched) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.wakeLocked()
	}
}
