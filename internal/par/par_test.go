package par

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counts returns how many times each index of [0, n) was visited by run,
// which calls visit from any goroutine.
func counts(n int, run func(visit func(i int))) []int32 {
	c := make([]atomic.Int32, n)
	run(func(i int) { c[i].Add(1) })
	out := make([]int32, n)
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}

func once(t *testing.T, name string, got []int32) {
	t.Helper()
	for i, c := range got {
		if c != 1 {
			t.Fatalf("%s: index %d visited %d times", name, i, c)
		}
	}
}

func TestDo(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 7} {
		// All at once: every worker waits for the others.
		var wg sync.WaitGroup
		wg.Add(max(n, 0))
		got := counts(max(n, 0), func(visit func(int)) {
			Do(n, func(w int) {
				wg.Done()
				wg.Wait()
				visit(w)
			})
		})
		once(t, "Do", got)
	}
}

func TestFor(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		for _, threads := range []int{-1, 0, 1, 2, 3, 8, 2000} {
			var mu sync.Mutex
			var ranges [][2]int
			got := counts(n, func(visit func(int)) {
				For(n, threads, func(lo, hi int) {
					mu.Lock()
					ranges = append(ranges, [2]int{lo, hi})
					mu.Unlock()
					for i := lo; i < hi; i++ {
						visit(i)
					}
				})
			})
			once(t, "For", got)
			want := max(1, min(threads, n))
			if n == 0 {
				want = 0
			}
			if len(ranges) != want {
				t.Errorf("For(%d, %d): %d ranges, want %d", n, threads, len(ranges), want)
			}
			// Near equal: lengths differ by at most one, none empty.
			for _, r := range ranges {
				if l := r[1] - r[0]; l < n/want || l > n/want+1 || l == 0 {
					t.Errorf("For(%d, %d): range %v", n, threads, r)
				}
			}
		}
	}
}

func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100, 10000} {
		for _, threads := range []int{-1, 0, 1, 2, 8} {
			once(t, "Each", counts(n, func(visit func(int)) { Each(n, threads, visit) }))
		}
	}
	// One thread: in order, on the caller's goroutine (no locking needed).
	var order []int
	Each(5, 1, func(i int) { order = append(order, i) })
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Errorf("Each on one thread: %v", order)
	}
}

func TestTasks(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 1, 2, 100, 10000} {
		for _, threads := range []int{-1, 0, 1, 2, 8} {
			workers := max(1, min(threads, n))
			got := counts(n, func(visit func(int)) {
				err := Tasks(ctx, n, threads, func(w, i int) error {
					if w < 0 || w >= workers {
						t.Errorf("Tasks(%d, %d): worker %d", n, threads, w)
					}
					visit(i)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
			once(t, "Tasks", got)
		}
	}
	// The first error stops the hand-out and comes back: on one worker
	// right after it; on four, the others finish the task they hold
	// (tasks after the error take a millisecond each, so that they cannot
	// all have run before the error is seen, unless the failing worker
	// is held off for a quarter of a second).
	bad := errors.New("bad")
	var ran atomic.Int64
	err := Tasks(ctx, 1000, 1, func(_, i int) error {
		ran.Add(1)
		if i == 10 {
			return bad
		}
		return nil
	})
	if err != bad || ran.Load() != 11 {
		t.Errorf("one worker, error at task 10: %v after %d tasks, want it after 11", err, ran.Load())
	}
	ran.Store(0)
	err = Tasks(ctx, 1000, 4, func(_, i int) error {
		ran.Add(1)
		switch {
		case i == 10:
			return bad
		case i > 10:
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if err != bad || ran.Load() >= 1000 {
		t.Errorf("four workers, error at task 10: %v after %d tasks", err, ran.Load())
	}
	// A context done: no task runs.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ran.Store(0)
	if err := Tasks(cctx, 100, 2, func(_, _ int) error { ran.Add(1); return nil }); !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Errorf("canceled: %v after %d tasks", err, ran.Load())
	}
}

func BenchmarkEach(b *testing.B) {
	x := make([]uint64, 1<<16)
	for b.Loop() {
		Each(len(x)/256, 2, func(c int) {
			for i := c * 256; i < (c+1)*256; i++ {
				x[i] += uint64(i)
			}
		})
	}
}

func BenchmarkFor(b *testing.B) {
	x := make([]uint64, 1<<16)
	for b.Loop() {
		For(len(x), 2, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				x[i] += uint64(i)
			}
		})
	}
}
