package serve

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	docs := testDocs(r, 100, 20)
	b := newRefBackend(docs)
	_, ts := newTestServer(t, Config{}, b, parseText)
	queries := []LoadQuery{{Terms: []uint32{0, 1}}, {Terms: nil}, {Text: "alpha beta", IsText: true}, {Terms: []uint32{4294967295}}}
	for _, batch := range []int{1, 3} {
		var progressed atomic.Int64
		rep, err := Load(context.Background(), LoadConfig{
			URL: ts.URL + "/", Queries: queries, Clients: 4, Duration: 300 * time.Millisecond, Batch: batch, Limit: 5,
			Progress: func(n int64) { progressed.Store(n) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Requests == 0 || rep.Queries != rep.Requests*int64(batch) || len(rep.Errors) != 0 {
			t.Fatalf("batch %d: %+v", batch, rep)
		}
		if p50, p99, max := rep.Latency(0.5), rep.Latency(0.99), rep.Latency(1); p50 <= 0 || p50 > p99 || p99 > max {
			t.Errorf("latencies p50 %v p99 %v max %v", p50, p99, max)
		}
		if progressed.Load() > rep.Requests {
			t.Errorf("progress %d beyond the %d requests", progressed.Load(), rep.Requests)
		}
		out := rep.String()
		for _, want := range []string{"clients 4", "requests ", "p99.9", "errors 0"} {
			if !strings.Contains(out, want) {
				t.Errorf("report %q lacks %q", out, want)
			}
		}
	}
	// The server saw at least the queries answered (a request cut off by the
	// end of the run may have been answered too).
	total := 0
	for _, n := range b.batchSizes() {
		total += n
	}
	if total == 0 {
		t.Errorf("the backend ran nothing")
	}
}

func TestLoadErrors(t *testing.T) {
	// Text on an index without vocabulary: every request is a 400.
	_, ts := newTestServer(t, Config{}, newRefBackend([][]uint32{{0}}), nil)
	rep, err := Load(context.Background(), LoadConfig{
		URL: ts.URL, Queries: []LoadQuery{{Text: "x", IsText: true}}, Clients: 2, Duration: 100 * time.Millisecond, Batch: 1, Limit: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 0 || rep.Errors[400] == 0 || len(rep.Errors) != 1 || !strings.Contains(rep.FirstError, "no vocabulary") {
		t.Errorf("%+v", rep)
	}
	if !strings.Contains(rep.String(), "errors by status: 400:") {
		t.Errorf("report %q", rep.String())
	}
	// Nothing listening: transport errors, counted as status 0.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	rep, err = Load(context.Background(), LoadConfig{URL: url, Queries: []LoadQuery{{}}, Clients: 1, Duration: 50 * time.Millisecond, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 0 || rep.Errors[0] == 0 {
		t.Errorf("%+v", rep)
	}
	for _, cfg := range []LoadConfig{
		{URL: "localhost:80", Queries: []LoadQuery{{}}, Clients: 1, Duration: time.Second, Batch: 1},
		{URL: "ftp://x", Queries: []LoadQuery{{}}, Clients: 1, Duration: time.Second, Batch: 1},
		{URL: ts.URL, Clients: 1, Duration: time.Second, Batch: 1},
		{URL: ts.URL, Queries: []LoadQuery{{}}, Clients: 0, Duration: time.Second, Batch: 1},
		{URL: ts.URL, Queries: []LoadQuery{{}}, Clients: 1, Duration: 0, Batch: 1},
		{URL: ts.URL, Queries: []LoadQuery{{}}, Clients: 1, Duration: time.Second, Batch: 0},
	} {
		if _, err := Load(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestLatencies(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var l latencies
	var vals []int64
	for range 20000 {
		v := int64(r.ExpFloat64() * float64(r.IntN(3)*1e6+100))
		if r.IntN(100) == 0 {
			v = r.Int64N(1 << 40)
		}
		vals = append(vals, v)
	}
	// Split in two to check merging.
	var l2 latencies
	for i, v := range vals {
		if i%2 == 0 {
			l.add(v)
		} else {
			l2.add(v)
		}
	}
	l.merge(&l2)
	slices.Sort(vals)
	for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		want := vals[min(int(p*float64(len(vals))), len(vals)-1)]
		got := int64(l.quantile(p))
		if diff := got - want; diff < -want/64-1 || diff > want/64+1 {
			t.Errorf("p%v: %d, want %d within 1/64", p, got, want)
		}
	}
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 40, 1<<62 + 12345} {
		b := latBucket(v)
		if mid := latValue(b); mid < v-v/64-1 || mid > v+v/64+1 {
			t.Errorf("value %d: bucket %d middle %d", v, b, mid)
		}
		if b >= len(l.counts) {
			t.Errorf("value %d: bucket %d out of range", v, b)
		}
	}
}
