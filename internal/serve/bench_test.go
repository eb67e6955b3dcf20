package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
