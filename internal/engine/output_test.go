package engine

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/sets"
)

func TestFirstError(t *testing.T) {
	var f FirstError
	if f.Failed() || f.Err() != nil {
		t.Fatal("the zero value holds an error")
	}
	first := errors.New("first")
	var wg sync.WaitGroup
	f.Set(first)
	for range 8 {
		wg.Go(func() { f.Set(errors.New("later")) })
	}
	wg.Wait()
	if !f.Failed() || f.Err() != first {
		t.Fatalf("Err = %v, want the first error", f.Err())
	}
}

func TestCollectPairs(t *testing.T) {
	batches := [][]sets.Pair{{{I: 2, J: 3, Count: 1}, {I: 0, J: 5, Count: 2}}, {{I: 0, J: 1, Count: 3}}}
	got, err := CollectPairs(func(fn func([]sets.Pair) error) error {
		var wg sync.WaitGroup
		for _, b := range batches {
			wg.Go(func() { fn(b) })
		}
		wg.Wait()
		return nil
	})
	want := []sets.Pair{{I: 0, J: 1, Count: 3}, {I: 0, J: 5, Count: 2}, {I: 2, J: 3, Count: 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("CollectPairs = %v, %v; want %v", got, err, want)
	}
	boom := errors.New("boom")
	if got, err := CollectPairs(func(func([]sets.Pair) error) error { return boom }); got != nil || err != boom {
		t.Fatalf("a failing join gave %v, %v", got, err)
	}
}

func TestMemos(t *testing.T) {
	var ms Memos
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if v := ms.Get("k", func() any { calls.Add(1); return 42 }); v != 42 {
				t.Errorf("Get = %v", v)
			}
		})
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("build ran %d times, want once", calls.Load())
	}
	if v := ms.Get("other", func() any { return "x" }); v != "x" {
		t.Fatalf("another key: %v", v)
	}
}
