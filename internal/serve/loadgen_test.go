package serve

import (
	"context"
	"io"
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

// checkAnswer takes the answers xsect serve writes, and any other well-formed
// JSON answer, and nothing else: an error page, an answer cut short, the
// wrong number of results, counts and ids that no query has.
func TestCheckAnswer(t *testing.T) {
	for _, c := range []struct {
		body  string
		batch int
		want  string // "" for a good answer, else a part of the error
	}{
		{`{"count":3,"ids":[1,5]}` + "\n", 1, ""},
		{`{"count":0,"ids":[]}`, 1, ""},
		{` { "count" : 2 , "ids" : [ 0 , 4294967295 ] } `, 1, ""},
		{`{"ids":[1,5],"count":3}`, 1, ""},          // another order: encoding/json decides
		{`{"count":3,"ids":[1,5],"took":1}`, 1, ""}, // a field more
		{`{"count":1e1,"ids":[1,5]}`, 1, "cannot unmarshal number 1e1"},
		{`{"results":[{"count":1,"ids":[2]},{"count":0,"ids":[]}]}` + "\n", 2, ""},
		{`{"results":[{"ids":[2],"count":1},{"count":0,"ids":[]}]}`, 2, ""},
		{`<html><body>OK</body></html>`, 1, `invalid character '<'`},
		{`{"count":3,"ids":[1,5`, 1, "unexpected end of JSON input"},
		{`{"count":3,"ids":[1,5]`, 1, "unexpected end of JSON input"},
		{``, 1, "unexpected end of JSON input"},
		{`{"count":3,"ids":[1,5,]}`, 1, "invalid character ']'"},
		{`{"count":3,"ids":[1,5]}{}`, 1, "invalid character '{' after top-level value"},
		{`{"count":3}`, 1, `want "count" and "ids"`},
		{`{}`, 1, `want "count" and "ids"`},
		{`{"count":1,"ids":[1,5]}`, 1, "a count of 1 with 2 ids"},
		{`{"count":11,"ids":[0,1,2,3,4,5,6,7,8,9,10]}`, 1, "11 ids, over the limit of 10"},
		{`{"count":3,"ids":[5,1]}`, 1, "ids not increasing"},
		{`{"count":3,"ids":[5,5]}`, 1, "ids not increasing"},
		{`{"count":3,"ids":[-1]}`, 1, "cannot unmarshal number -1"},
		{`{"results":[{"count":1,"ids":[2]}]}`, 2, "1 results for 2 queries"},
		{`{"results":[{"count":1,"ids":[2]},{"count":1,"ids":[2]},{"count":1,"ids":[2]}]}`, 2, "3 results for 2 queries"},
		{`{"results":[{"count":1,"ids":[2]},{"count":0,"ids":[2]}]}`, 2, "results[1]: a count of 0 with 1 ids"},
		{`{"results":[{"ids":[2],"count":1},{"count":0,"ids":[2]}]}`, 2, "results[1]: a count of 0 with 1 ids"},
		{`{"results":[{"count":1,"ids":[2]},]}`, 2, "invalid character ']'"},
		{`{"count":1,"ids":[2]}`, 2, `no "results"`},
		{`{"results":[{"count":1,"ids":[2]},{"count":1,"ids":[2]}`, 2, "unexpected end of JSON input"},
	} {
		err := checkAnswer([]byte(c.body), c.batch, DefaultLimit)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (batch of %d): %v; want %q", c.body, c.batch, err, c.want)
		}
	}
	// The server's answers are checked without decoding them.
	var batch []byte
	batch = append(batch, `{"results":[`...)
	for i := range 256 {
		if i > 0 {
			batch = append(batch, ',')
		}
		batch = encodeResult(batch, Result{Count: 100, IDs: []uint32{1, 7, 9, 20, 1000, 4294967295}})
	}
	batch = append(batch, "]}\n"...)
	if allocs := testing.AllocsPerRun(10, func() {
		if err := checkAnswer(batch, 256, DefaultLimit); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("checking a batch answer as the server writes it: %v allocations, want 0", allocs)
	}
}

// A server that answers 200 with an error page or with JSON cut short
// answers nothing: every such request is an error (they counted as
// answered).
func TestLoadMalformedAnswers(t *testing.T) {
	for _, answer := range []string{"<html>Service Unavailable</html>", `{"count":1,"ids":[`} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, answer)
		}))
		defer ts.Close()
		rep, err := Load(context.Background(), LoadConfig{URL: ts.URL, Queries: []LoadQuery{{Terms: []uint32{1}}}, Clients: 2, Duration: 100 * time.Millisecond, Batch: 1, Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Requests != 0 || rep.Errors[200] == 0 || len(rep.Errors) != 1 || !strings.HasPrefix(rep.FirstError, "malformed answer: ") ||
			!strings.Contains(rep.String(), "errors by status: 200 malformed: ") {
			t.Errorf("answers %q: %+v\n%s", answer, rep, rep.String())
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
