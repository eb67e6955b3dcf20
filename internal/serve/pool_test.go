package serve

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestPool checks that a pool runs concurrent batches on different
// backends, never two at once on one, and answers correctly.
func TestPool(t *testing.T) {
	docs := [][]uint32{{0, 1}, {1, 2}, {2, 3}}
	a, b := gated(docs), gated(docs)
	_, ts := newTestServer(t, Config{BatchSize: 64, Concurrency: 3}, Pool(a, b), nil)
	// Cleanups run last first: the gates open before the server closes, so
	// that a failure below does not leave a batch waiting forever.
	var release sync.Once
	open := func() { release.Do(func() { close(a.gate); close(b.gate) }) }
	t.Cleanup(open)
	// Each request is sent once the one before has its batch running, so
	// that the dispatcher cannot merge them into one batch.
	got := map[*refBackend]int{}
	enter := func(what string) {
		select {
		case <-a.entered:
			got[a]++
		case <-b.entered:
			got[b]++
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not start", what)
		}
	}
	r1 := goPost(t, ts.URL, "/v1/search", `{"terms":[1]}`)
	enter("the first batch")
	r2 := goPost(t, ts.URL, "/v1/search", `{"terms":[2]}`)
	enter("the second batch")
	if got[a] != 1 || got[b] != 1 {
		t.Fatalf("batches on the backends: %d and %d, want 1 and 1", got[a], got[b])
	}
	// The third request's batch waits for one of them, although the
	// dispatcher has a slot for it.
	r3 := goPost(t, ts.URL, "/v1/search", `{"terms":[3]}`)
	select {
	case <-a.entered:
		t.Fatal("a third batch ran on a busy backend")
	case <-b.entered:
		t.Fatal("a third batch ran on a busy backend")
	case <-time.After(50 * time.Millisecond):
	}
	a.gate <- struct{}{}
	b.gate <- struct{}{}
	open()
	for i, c := range []struct {
		ch   chan answer
		want string
	}{{r1, `{"count":2,"ids":[0,1]}`}, {r2, `{"count":2,"ids":[1,2]}`}, {r3, `{"count":1,"ids":[2]}`}} {
		if ans := <-c.ch; ans.code != 200 || ans.body != c.want+"\n" {
			t.Errorf("request %d: %+v, want %s", i+1, ans, c.want)
		}
	}
	if n := len(a.batchSizes()) + len(b.batchSizes()); n != 3 {
		t.Errorf("%d batches, want 3", n)
	}
	if Pool(a, b).Device() != "cpu" {
		t.Error("device")
	}
	// A batch waiting for a backend gives up with its context.
	g := gated(docs)
	defer close(g.gate)
	p := Pool(g)
	go p.Search(context.Background(), []Query{{}}, 0, true, make([]Result, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	waitFor(t, "the first search to hold the backend", func() bool { return len(p.(*pool).free) == 0 })
	if err := p.Search(ctx, []Query{{}}, 0, true, make([]Result, 1)); err != context.DeadlineExceeded {
		t.Errorf("waiting search: %v", err)
	}
}
