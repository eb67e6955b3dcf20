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

// Memos computes a value once per key: the engines of a workload share
// their analysis of one problem this way (an engine's Estimate and its Run,
// or two engines that need the same index). The zero value is ready; it is
// safe for concurrent use.
type Memos struct {
	mu sync.Mutex
	m  map[string]*memo
}

type memo struct {
	once sync.Once
	v    any
}

// Get returns the value that build returns for key, calling build once.
// Engines of other packages prefix their keys with their package's name.
func (ms *Memos) Get(key string, build func() any) any {
	ms.mu.Lock()
	if ms.m == nil {
		ms.m = map[string]*memo{}
	}
	m := ms.m[key]
	if m == nil {
		m = &memo{}
		ms.m[key] = m
	}
	ms.mu.Unlock()
	m.once.Do(func() { m.v = build() })
	return m.v
}
