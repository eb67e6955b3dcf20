package engine

import (
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/sets"
)

// FirstError keeps the first error of a run's callbacks; engines poll Err
// between chunks of work and stop. Its methods are safe for concurrent use
// and Err is cheap while there is none. The zero value holds no error.
type FirstError struct {
	failed atomic.Bool
	mu     sync.Mutex
	err    error
}

// Set records err if no error was recorded before.
func (f *FirstError) Set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.failed.Store(true)
}

// Failed reports whether an error was recorded, without a lock.
func (f *FirstError) Failed() bool { return f.failed.Load() }

// Err returns the first error recorded, or nil.
func (f *FirstError) Err() error {
	if !f.failed.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// CollectPairs runs join, which calls its argument with batches of pairs
// from several goroutines at once, and returns every pair sorted by I, then
// J: the Collect of every pair workload.
func CollectPairs(join func(fn func([]sets.Pair) error) error) ([]sets.Pair, error) {
	var mu sync.Mutex
	var all []sets.Pair
	err := join(func(ps []sets.Pair) error {
		mu.Lock()
		all = append(all, ps...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sets.SortPairs(all)
	return all, nil
}
