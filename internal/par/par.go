// Package par spreads a loop over goroutines: the one way xsect's packages
// run work in parallel, in the shapes their callers need.
//
//   - Do runs n workers, one per goroutine, each knowing its number (for
//     per-worker buffers and ranges a caller cuts itself);
//   - For cuts a range into near equal consecutive parts, one per goroutine;
//   - Each hands out the indices of a range in increasing order to a few
//     goroutines, each taking the next as it finishes one (work whose cost
//     varies, heaviest first);
//   - Tasks is Each with the worker's number, that stops at the first error
//     or when a context is done.
//
// threads is a plain int, as in the options of every workload: at most
// that many goroutines run, and one or less runs on the caller's
// goroutine alone. Each call returns when all its work has.
package par

import (
	"context"
	"sync"
	"sync/atomic"
)

// Do calls fn(w) for every w in [0, n), each on a goroutine of its own
// (fn(n-1) on the caller's), all at once.
func Do(n int, fn func(w int)) {
	if n <= 0 {
		return
	}
	var wg sync.WaitGroup
	for w := range n - 1 {
		wg.Go(func() { fn(w) })
	}
	fn(n - 1)
	wg.Wait()
}

// For cuts [0, n) into min(threads, n) consecutive ranges of near equal
// length and calls fn(lo, hi) on each, as Do runs its workers. With
// threads at most 1 it calls fn(0, n) on the caller's goroutine; with n 0
// not at all.
func For(n, threads int, fn func(lo, hi int)) {
	parts := max(1, min(threads, n))
	if n <= 0 {
		return
	}
	Do(parts, func(w int) { fn(n*w/parts, n*(w+1)/parts) })
}

// Each calls fn(i) for every i in [0, n) on up to threads goroutines,
// which take the indices in increasing order, each the next one free. With
// threads or n at most 1, it runs on the caller's goroutine.
func Each(n, threads int, fn func(i int)) {
	workers := min(threads, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	Do(workers, func(int) {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			fn(i)
		}
	})
}

// Tasks calls fn(worker, task) for every task in [0, n) on up to threads
// workers, numbered from 0, which take the tasks in increasing order, each
// the next one free: callers put the heaviest first, and index per-worker
// buffers by worker. It stops handing out tasks at the first error, or
// when ctx is done, and returns that error (the first, when several fail
// at once).
func Tasks(ctx context.Context, n, threads int, fn func(worker, task int) error) error {
	var next atomic.Int64
	var stop atomic.Bool
	var once sync.Once
	var first error
	Do(max(1, min(threads, n)), func(w int) {
		for !stop.Load() {
			t := int(next.Add(1) - 1)
			if t >= n {
				return
			}
			err := ctx.Err()
			if err == nil {
				err = fn(w, t)
			}
			if err != nil {
				once.Do(func() { first = err })
				stop.Store(true)
			}
		}
	})
	return first
}
