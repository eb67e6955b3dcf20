package engine

import (
	"context"
	"errors"
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

// Send hands the batch buf to sink unless first holds an error already,
// records sink's error in first, and returns buf emptied for the next
// batch: how the writers of every workload's Output flush.
func Send[T any](sink func([]T) error, buf []T, first *FirstError) []T {
	if len(buf) > 0 && !first.Failed() {
		if err := sink(buf); err != nil {
			first.Set(err)
		}
	}
	return buf[:0]
}

// RunError is the error of a run whose engine returned err while its
// output recorded outErr (the first error of the caller's callbacks): the
// callback's error wins when the engine saw none, or only the
// cancellation that the callback's error caused.
func RunError(err, outErr error) error {
	if outErr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return outErr
	}
	return err
}

// FreeList keeps values for reuse between goroutines: an Output keeps the
// writers (and their buffers) that its engine's goroutines closed. The
// zero value is empty; it is safe for concurrent use.
type FreeList[T any] struct {
	mu   sync.Mutex
	free []T
}

// Get returns a value put before, if any.
func (l *FreeList[T]) Get() (x T, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		x, ok = l.free[n-1], true
		l.free = l.free[:n-1]
	}
	return x, ok
}

// Put keeps x for a later Get.
func (l *FreeList[T]) Put(x T) {
	l.mu.Lock()
	l.free = append(l.free, x)
	l.mu.Unlock()
}

// Collect runs join, which calls its argument with batches of results from
// several goroutines at once, and returns them all, sorted by sort: the
// Collect of every workload.
func Collect[T any](join func(fn func([]T) error) error, sort func([]T)) ([]T, error) {
	var mu sync.Mutex
	var all []T
	err := join(func(ps []T) error {
		mu.Lock()
		all = append(all, ps...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort(all)
	return all, nil
}

// CollectPairs is Collect for pairs of sets.Pair, sorted by I, then J.
func CollectPairs(join func(fn func([]sets.Pair) error) error) ([]sets.Pair, error) {
	return Collect(join, sets.SortPairs)
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
