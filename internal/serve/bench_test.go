package serve

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSearch measures the service's cost per request over loopback
// HTTP, client included, with a backend that answers at once: what the
// server adds to the engine's time.
func BenchmarkSearch(b *testing.B) {
	for _, bc := range []struct {
		name, path, body string
	}{
		{"one", "/v1/search", `{"terms":[0,1],"limit":10}`},
		{"batch16", "/v1/search:batch", `{"queries":[` + string(bytes.Repeat([]byte(`{"terms":[0,1],"limit":10},`), 15)) + `{"terms":[0,1],"limit":10}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			docs := make([][]uint32, 100)
			for i := range docs {
				docs[i] = []uint32{0, 1}
			}
			s, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			s.SetBackend(newRefBackend(docs), nil)
			ts := httptest.NewServer(s)
			defer ts.Close()
			defer s.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			body := []byte(bc.body)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(ts.URL+bc.path, "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDispatch measures the dispatcher alone: a request of one query
// admitted, batched, run on a backend that answers at once, and handed
// back, from 4 goroutines per core; no HTTP.
func BenchmarkDispatch(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.SetBackend(newRefBackend([][]uint32{{0, 1}}), nil)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			j := &job{qs: []Query{{Terms: []uint32{0, 1}}}, limits: []int{10}, res: make([]Result, 1)}
			err := s.d.do(ctx, j)
			if j.admitted {
				j.unref()
			}
			if err != nil || j.res[0].Count != 1 {
				b.Errorf("%v %+v", err, j.res[0])
				return
			}
		}
	})
}

// fixedBackend answers every query with the same result at once: the
// handler's and dispatcher's cost without an engine.
type fixedBackend struct{ r Result }

func (b fixedBackend) Device() string { return "cpu" }

func (b fixedBackend) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error {
	for i := range res {
		res[i].Count = b.r.Count
		res[i].IDs = append(res[i].IDs[:0], b.r.IDs[:min(limit, len(b.r.IDs))]...)
	}
	return nil
}

// batchBody is a batch request of n queries of 2 to 4 terms below 300,000,
// as xsect loadgen sends them.
func batchBody(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := []byte(`{"queries":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"terms":[`...)
		for k := range 2 + r.IntN(3) {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(r.IntN(300000)), 10)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// BenchmarkHandler measures the handler alone (no connection): a batch
// request of 256 queries decoded, admitted, batched, answered by a backend
// that answers at once (empty answers, or 10 ids each) and encoded.
func BenchmarkHandler(b *testing.B) {
	for _, bc := range []struct {
		name string
		r    Result
	}{
		{"batch256/empty", Result{}},
		{"batch256/ids10", Result{Count: 1234, IDs: []uint32{5, 17, 1003, 20001, 20002, 99999, 100000, 150000, 200000, 203640}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.SetBackend(fixedBackend{bc.r}, nil)
			body := batchBody(256)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &discardWriter{h: http.Header{}}
				for pb.Next() {
					req := httptest.NewRequest("POST", "/v1/search:batch", bytes.NewReader(body))
					w.code = 0
					s.ServeHTTP(w, req)
					if w.code != 200 {
						b.Errorf("status %d", w.code)
						return
					}
				}
			})
		})
	}
}

// discardWriter is an http.ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkLoad runs xsect loadgen's closed loop in process against the
// server over loopback HTTP, with a backend that answers at once (empty
// answers): 64 clients of 256-query batches for a second per op. It
// reports queries/s and the p99 latency; a profile of it shows the HTTP
// layer's costs on both sides.
func BenchmarkLoad(b *testing.B) {
	// The GPU's limits: one batch at a time, of up to 65,536 queries.
	s, err := New(Config{BatchSize: 1 << 16, Concurrency: 1, Queue: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.SetBackend(fixedBackend{}, nil)
	ts := httptest.NewServer(s)
	defer ts.Close()
	r := rand.New(rand.NewPCG(1, 2))
	qs := make([]LoadQuery, 31432)
	for i := range qs {
		for range 2 + r.IntN(3) {
			qs[i].Terms = append(qs[i].Terms, uint32(r.IntN(300000)))
		}
	}
	var queries int64
	var p99 time.Duration
	for b.Loop() {
		rep, err := Load(context.Background(), LoadConfig{URL: ts.URL, Queries: qs, Clients: 64, Duration: time.Second, Batch: 256, Limit: -1})
		if err != nil || rep.ErrorCount() > 0 {
			b.Fatal(err, rep)
		}
		queries += rep.Queries
		p99 = max(p99, rep.Latency(0.99))
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
	b.ReportMetric(p99.Seconds()*1e3, "p99-ms")
}
