package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing after a generous 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// answer is one request's outcome, sent back from a goroutine.
type answer struct {
	code int
	body string
}

func postT(t *testing.T, url, path, body string) answer {
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return answer{0, err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{0, err.Error()}
	}
	return answer{resp.StatusCode, string(b)}
}

func goPost(t *testing.T, url, path, body string) chan answer {
	ch := make(chan answer, 1)
	go func() { ch <- postT(t, url, path, body) }()
	return ch
}

// gated returns a backend whose batches announce themselves on entered and
// wait for gate.
func gated(docs [][]uint32) *refBackend {
	b := newRefBackend(docs)
	b.entered = make(chan []Query, 1000)
	b.gate = make(chan struct{})
	return b
}

func TestConcurrentClients(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	docs := testDocs(r, 300, 25)
	b := newRefBackend(docs)
	_, ts := newTestServer(t, Config{BatchSize: 16, Concurrency: 2, MaxQueries: 40}, b, nil)
	sent := hammer(t, ts.URL, docs, 25, 32, 25)
	total := 0
	for _, n := range b.batchSizes() {
		if n < 1 || n > 16 {
			t.Errorf("a batch of %d queries: want 1 to 16", n)
		}
		total += n
	}
	if total != sent {
		t.Errorf("the backend ran %d queries, the clients sent %d", total, sent)
	}
}

// hammer runs clients goroutines sending rounds requests each, of one
// query or a batch of up to 40, random queries over a vocabulary of v
// terms, and checks every answer against brute. It returns the number of
// queries sent.
func hammer(t *testing.T, url string, docs [][]uint32, v, clients, rounds int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 99))
			for range rounds {
				n := 1
				if r.IntN(3) == 0 {
					n = 1 + r.IntN(40)
				}
				var req, want strings.Builder
				for i := range n {
					q := randomQuery(r, v)
					limit := r.IntN(12)
					terms, _ := json.Marshal(q.Terms)
					if q.Terms == nil {
						terms = []byte("[]")
					}
					if i > 0 {
						req.WriteByte(',')
						want.WriteByte(',')
					}
					fmt.Fprintf(&req, `{"terms":%s,"limit":%d}`, terms, limit)
					ids := brute(docs, q)
					want.WriteString(wantResult(len(ids), ids[:min(limit, len(ids))]))
				}
				path, body, exp := "/v1/search", req.String(), want.String()+"\n"
				if n > 1 || r.IntN(2) == 0 {
					path, body, exp = "/v1/search:batch", `{"queries":[`+body+`]}`, `{"results":[`+want.String()+"]}\n"
				}
				a := postT(t, url, path, body)
				if a.code != 200 || a.body != exp {
					t.Errorf("client %d: %s %s: %d\ngot  %s\nwant %s", c, path, body, a.code, a.body, exp)
					return
				}
				mu.Lock()
				sent += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sent
}

// TestBatchesMerge holds the backend's one slot busy while 20 requests of
// one query each arrive: they must run as one batch of 20.
func TestBatchesMerge(t *testing.T) {
	docs := [][]uint32{{0, 1}, {1, 2}, {2, 3}}
	b := gated(docs)
	s, ts := newTestServer(t, Config{BatchSize: 64, Concurrency: 1}, b, nil)
	first := goPost(t, ts.URL, "/v1/search", `{"terms":[1]}`)
	<-b.entered
	const n = 20
	var answers []chan answer
	for i := range n {
		answers = append(answers, goPost(t, ts.URL, "/v1/search", fmt.Sprintf(`{"terms":[%d]}`, i%4)))
	}
	waitFor(t, "20 queries gathered", func() bool { return s.d.pooled.Load() == n })
	close(b.gate)
	if a := <-first; a.code != 200 || a.body != `{"count":2,"ids":[0,1]}`+"\n" {
		t.Errorf("first: %+v", a)
	}
	for i, ch := range answers {
		want := [...]string{`{"count":1,"ids":[0]}`, `{"count":2,"ids":[0,1]}`, `{"count":2,"ids":[1,2]}`, `{"count":1,"ids":[2]}`}[i%4]
		if a := <-ch; a.code != 200 || a.body != want+"\n" {
			t.Errorf("request %d: %+v, want %s", i, a, want)
		}
	}
	if got := b.batchSizes(); !slices.Equal(got, []int{1, n}) {
		t.Errorf("batch sizes %v, want [1 %d]", got, n)
	}
}

// TestBatchFull: with a batch wait longer than the test, a batch still runs
// as soon as it is full.
func TestBatchFull(t *testing.T) {
	b := newRefBackend([][]uint32{{0}})
	_, ts := newTestServer(t, Config{BatchSize: 5, BatchWait: time.Hour, Deadline: time.Hour}, b, nil)
	var answers []chan answer
	for range 5 {
		answers = append(answers, goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`))
	}
	for _, ch := range answers {
		if a := <-ch; a.code != 200 || a.body != `{"count":1,"ids":[0]}`+"\n" {
			t.Errorf("%+v", a)
		}
	}
	if got := b.batchSizes(); !slices.Equal(got, []int{5}) {
		t.Errorf("batch sizes %v, want [5]", got)
	}
}

func TestQueueFull(t *testing.T) {
	b := gated([][]uint32{{0}})
	// Room for 5 queries: 1 running, 4 waiting.
	s, ts := newTestServer(t, Config{BatchSize: 64, Concurrency: 1, Queue: 5, Deadline: time.Hour}, b, nil)
	first := goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`)
	<-b.entered
	waiting := []chan answer{
		goPost(t, ts.URL, "/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[0]}]}`),
		goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`),
	}
	waitFor(t, "3 queries queued", func() bool { return s.d.queued.Load() == 3 && s.d.admitted.Load() == 4 })
	// One more query fits; two do not.
	a := postT(t, ts.URL, "/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[0]}]}`)
	if a.code != 429 {
		t.Errorf("2 queries into a queue with room for 1: %+v", a)
	}
	waiting = append(waiting, goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`))
	waitFor(t, "4 queries gathered", func() bool { return s.d.pooled.Load() == 4 })
	resp, err := http.Post(ts.URL+"/v1/search", "application/json", strings.NewReader(`{"terms":[0]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a query into a full queue: %d %s", resp.StatusCode, body)
	}
	checkError(t, "429", resp.Header, string(body))
	close(b.gate)
	for _, ch := range append(waiting, first) {
		if a := <-ch; a.code != 200 {
			t.Errorf("%+v", a)
		}
	}
	if got := b.batchSizes(); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("batch sizes %v, want [1 4]", got)
	}
	if n := s.d.queued.Load(); n != 0 {
		t.Errorf("%d queries still counted as queued", n)
	}
	waitFor(t, "every query released", func() bool { return s.d.admitted.Load() == 0 })
	if a := postT(t, ts.URL, "/v1/search:batch", `{"queries":[`+strings.Repeat(`{"terms":[0]},`, 4)+`{"terms":[0]}]}`); a.code != 200 {
		t.Errorf("after the queue emptied: %+v", a)
	}
	waitFor(t, "every query released", func() bool { return s.d.admitted.Load() == 0 })
}

// TestQueueHoldsAnswers: queries whose request timed out stay counted while
// their batch runs (their results take memory), and are released after.
func TestQueueHoldsAnswers(t *testing.T) {
	b := gated([][]uint32{{0}})
	s, ts := newTestServer(t, Config{Concurrency: 1, Queue: 3, Deadline: time.Second}, b, nil)
	if a := postT(t, ts.URL, "/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[0]}]}`); a.code != 504 {
		t.Fatalf("%+v, want 504", a)
	}
	if got := s.d.admitted.Load(); got != 2 {
		t.Errorf("admitted %d while the batch runs, want 2", got)
	}
	if a := postT(t, ts.URL, "/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[0]}]}`); a.code != 429 {
		t.Errorf("%+v, want 429", a)
	}
	close(b.gate)
	waitFor(t, "the queries released", func() bool { return s.d.admitted.Load() == 0 })
}

// TestBodyBudget: the bodies held at once are bounded; a request whose
// bytes take them beyond is turned away with 429.
func TestBodyBudget(t *testing.T) {
	b := gated([][]uint32{{0}})
	_, ts := newTestServer(t, Config{MaxBody: 100, MaxBodies: 250, Concurrency: 4, Deadline: time.Hour}, b, nil)
	body := `{"terms":[0]}` + strings.Repeat(" ", 87) // 100 bytes
	held := []chan answer{goPost(t, ts.URL, "/v1/search", body)}
	<-b.entered
	held = append(held, goPost(t, ts.URL, "/v1/search", body))
	<-b.entered
	if a := postT(t, ts.URL, "/v1/search", body); a.code != 429 || !strings.Contains(a.body, "bodies in flight") {
		t.Errorf("a third body of 100 bytes in a budget of 250: %+v", a)
	}
	// 13 bytes fit: it runs.
	held = append(held, goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`))
	<-b.entered
	close(b.gate)
	for _, ch := range held {
		if a := <-ch; a.code != 200 {
			t.Errorf("%+v", a)
		}
	}
}

func TestDeadline(t *testing.T) {
	b := gated([][]uint32{{0}})
	s, ts := newTestServer(t, Config{Concurrency: 1, Deadline: time.Second}, b, nil)
	running := goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`)
	select {
	case <-b.entered:
	case a := <-running:
		t.Fatalf("answered %+v before reaching the backend: is the machine that slow?", a)
	}
	queued := goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`)
	a := <-running
	if a.code != 504 {
		t.Errorf("a query past its deadline in the backend: %+v, want 504", a)
	}
	if a = <-queued; a.code != 503 {
		t.Errorf("a query past its deadline in the queue: %+v, want 503", a)
	}
	close(b.gate)
	// The query that timed out in the queue is dropped, not run.
	waitFor(t, "the queue to empty", func() bool { return s.d.queued.Load() == 0 && len(s.d.slots) == 0 })
	if a := postT(t, ts.URL, "/v1/search", `{"terms":[0]}`); a.code != 200 {
		t.Errorf("after: %+v", a)
	}
	if got := b.batchSizes(); !slices.Equal(got, []int{1, 1}) {
		t.Errorf("batch sizes %v, want [1 1]", got)
	}
	// A batch that never fills waits for its batch wait, here longer than
	// the deadline: 503.
	_, ts2 := newTestServer(t, Config{BatchSize: 5, BatchWait: time.Hour, Deadline: 200 * time.Millisecond}, newRefBackend(nil), nil)
	if a := postT(t, ts2.URL, "/v1/search", `{"terms":[0]}`); a.code != 503 {
		t.Errorf("a lone query under an hour's batch wait: %+v, want 503", a)
	}
}

func TestShutdown(t *testing.T) {
	docs := [][]uint32{{0, 1}, {1}}
	b := gated(docs)
	s, err := New(Config{Concurrency: 4, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.SetBackend(b, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Minute) }()
	var answers []chan answer
	for _, q := range []string{"[0]", "[1]", "[0,1]"} {
		answers = append(answers, goPost(t, url, "/v1/search", `{"terms":`+q+`}`))
	}
	for range 3 {
		<-b.entered
	}
	cancel()
	// Once the listener is closed, the server is shutting down.
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with 3 requests in flight", err)
	default:
	}
	close(b.gate)
	for i, ch := range answers {
		want := [...]string{`{"count":1,"ids":[0]}`, `{"count":2,"ids":[0,1]}`, `{"count":1,"ids":[0]}`}[i]
		if a := <-ch; a.code != 200 || a.body != want+"\n" {
			t.Errorf("in-flight request %d: %+v", i, a)
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestSemiSort(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		keys := make([]int, r.IntN(50))
		for i := range keys {
			keys[i] = r.IntN(1 << r.IntN(20))
		}
		order := semiSort(keys)
		want := make([]int32, len(keys))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return bucket(keys[a]) - bucket(keys[b]) })
		if !slices.Equal(order, want) {
			t.Fatalf("keys %v: order %v, want %v", keys, order, want)
		}
	}
}

// TestSortedBatches: a backend that asks for it gets its batches semi-sorted
// by shortest list, and every request still gets its own answers.
func TestSortedBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	docs := testDocs(r, 400, 60)
	ref := gated(docs)
	b := &sortedBackend{refBackend: ref}
	s, ts := newTestServer(t, Config{BatchSize: 256, Concurrency: 1}, b, nil)
	first := goPost(t, ts.URL, "/v1/search", `{"terms":[0]}`)
	<-ref.entered
	type sent struct {
		ch   chan answer
		want string
	}
	var all []sent
	for range 40 {
		q := randomQuery(r, 60)
		terms, _ := json.Marshal(q.Terms)
		if q.Terms == nil {
			terms = []byte("[]")
		}
		ids := brute(docs, q)
		all = append(all, sent{goPost(t, ts.URL, "/v1/search", `{"terms":`+string(terms)+`}`), wantResult(len(ids), ids[:min(10, len(ids))]) + "\n"})
	}
	waitFor(t, "40 queries gathered", func() bool { return s.d.pooled.Load() == 40 })
	close(ref.gate)
	<-first
	for i, x := range all {
		if a := <-x.ch; a.code != 200 || a.body != x.want {
			t.Errorf("request %d: %+v, want %s", i, a, x.want)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.keys) != 2 || len(b.keys[1]) != 40 {
		t.Fatalf("batches %v, want one of 1 and one of 40", b.keys)
	}
	if !slices.IsSortedFunc(b.keys[1], func(a, c int) int { return bucket(a) - bucket(c) }) {
		t.Errorf("batch keys %v: not semi-sorted", b.keys[1])
	}
}
