package engine

import (
	"context"
	"errors"
	"fmt"
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

func TestSend(t *testing.T) {
	var first FirstError
	var got [][]int
	boom := errors.New("boom")
	sink := func(b []int) error {
		got = append(got, slices.Clone(b))
		if len(got) == 2 {
			return boom
		}
		return nil
	}
	buf := make([]int, 0, 4)
	buf = Send(sink, append(buf, 1, 2), &first)
	if len(buf) != 0 || cap(buf) != 4 || len(got) != 1 || first.Err() != nil {
		t.Fatalf("first batch: buf %v, sent %v, error %v", buf, got, first.Err())
	}
	buf = Send(sink, buf, &first) // an empty batch is not sent
	buf = Send(sink, append(buf, 3), &first)
	buf = Send(sink, append(buf, 4), &first) // after the error: dropped
	if len(buf) != 0 || len(got) != 2 || got[1][0] != 3 || first.Err() != boom {
		t.Fatalf("after the error: buf %v, sent %v, error %v", buf, got, first.Err())
	}
}

func TestRunError(t *testing.T) {
	run, out := errors.New("run"), errors.New("callback")
	for _, tc := range []struct{ err, outErr, want error }{
		{nil, nil, nil},
		{run, nil, run},
		{nil, out, out},
		{context.Canceled, out, out},
		{fmt.Errorf("stopped: %w", context.Canceled), out, out},
		{run, out, run},
		{context.Canceled, nil, context.Canceled},
	} {
		if got := RunError(tc.err, tc.outErr); got != tc.want {
			t.Errorf("RunError(%v, %v) = %v, want %v", tc.err, tc.outErr, got, tc.want)
		}
	}
}

func TestFreeList(t *testing.T) {
	var l FreeList[*int]
	if x, ok := l.Get(); ok || x != nil {
		t.Fatalf("empty list gave %v, %v", x, ok)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { l.Put(&i) })
	}
	wg.Wait()
	seen := map[int]bool{}
	for {
		x, ok := l.Get()
		if !ok {
			break
		}
		seen[*x] = true
	}
	if len(seen) != 16 {
		t.Fatalf("got back %d values, want 16", len(seen))
	}
}

func TestCollect(t *testing.T) {
	got, err := Collect(func(fn func([]string) error) error {
		var wg sync.WaitGroup
		for _, b := range [][]string{{"c", "a"}, {"b"}} {
			wg.Go(func() { fn(b) })
		}
		wg.Wait()
		return nil
	}, slices.Sort)
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Collect = %v, %v", got, err)
	}
}
