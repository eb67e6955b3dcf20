package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newTestServer starts s with backend b (nil: not loaded) behind an
// httptest server.
func newTestServer(t *testing.T, cfg Config, b Backend, parse func(string) Query) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b != nil {
		s.SetBackend(b, parse)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// call sends one request and returns the status, the headers and the body.
func call(t testing.TB, ts *httptest.Server, method, path, body string) (int, http.Header, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// wantResult is the exact answer body for ids.
func wantResult(count int, ids []uint32) string {
	return string(encodeResult(nil, Result{Count: count, IDs: ids}))
}

// checkError checks that an error answer is {"error":"..."} as JSON.
func checkError(t *testing.T, what string, hdr http.Header, body string) string {
	t.Helper()
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: error body %q is not JSON: %v", what, body, err)
	}
	msg, ok := m["error"].(string)
	if len(m) != 1 || !ok || msg == "" {
		t.Fatalf("%s: error body %q: want {\"error\":\"...\"}", what, body)
	}
	return msg
}

func TestSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	docs := testDocs(r, 200, 30)
	_, ts := newTestServer(t, Config{}, newRefBackend(docs), nil)
	for i := range 300 {
		q := randomQuery(r, 30)
		want := brute(docs, q)
		terms, _ := json.Marshal(q.Terms)
		if q.Terms == nil {
			terms = []byte("[]")
		}
		limit, body := 10, `{"terms":`+string(terms)+`}`
		if i%3 != 0 {
			limit = r.IntN(len(want) + 2)
			body = fmt.Sprintf(`{"limit":%d, "terms":%s}`, limit, terms)
		}
		code, hdr, got := call(t, ts, "POST", "/v1/search", body)
		if code != 200 || hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, %q", body, code, got)
		}
		if exp := wantResult(len(want), want[:min(limit, len(want))]) + "\n"; got != exp {
			t.Fatalf("%s: got %q, want %q", body, got, exp)
		}
	}
}

func TestSearchEdges(t *testing.T) {
	docs := [][]uint32{{0, 1}, {}, {1, 5}, {0, 1, 2}}
	_, ts := newTestServer(t, Config{MaxLimit: 3}, newRefBackend(docs), nil)
	for _, c := range []struct{ body, want string }{
		{`{"terms":[]}`, `{"count":0,"ids":[]}`},
		{`{"terms":[0]}`, `{"count":2,"ids":[0,3]}`},
		{`{"terms":[1,0,1,0]}`, `{"count":2,"ids":[0,3]}`},
		{`{"terms":[1],"limit":0}`, `{"count":3,"ids":[]}`},
		{`{"terms":[1],"limit":3}`, `{"count":3,"ids":[0,2,3]}`},
		{`{"terms":[1],"limit":2}`, `{"count":3,"ids":[0,2]}`},
		{`{"terms":[1],"limit":null}`, `{"count":3,"ids":[0,2,3]}`},
		{`{"terms":[4294967295]}`, `{"count":0,"ids":[]}`},
		{`{"terms":[1, 4294967295]}`, `{"count":0,"ids":[]}`},
		{`{"terms":[3]}`, `{"count":0,"ids":[]}`},
		{`{"terms":[5,1]}`, `{"count":1,"ids":[2]}`},
		{" \n{ \"terms\" : [ 0 , 1 ] }\n ", `{"count":2,"ids":[0,3]}`},
	} {
		code, _, got := call(t, ts, "POST", "/v1/search", c.body)
		if code != 200 || got != c.want+"\n" {
			t.Errorf("%s: got %d %q, want %q", c.body, code, got, c.want)
		}
	}
}

func TestBadRequests(t *testing.T) {
	docs := [][]uint32{{0, 1}, {1, 2}}
	_, ids := newTestServer(t, Config{MaxLimit: 5, MaxQueries: 3}, newRefBackend(docs), nil)
	_, text := newTestServer(t, Config{MaxLimit: 5, MaxQueries: 3}, newRefBackend(docs), parseText)
	for _, c := range []struct {
		path, body, want string // want: a part of the message
	}{
		{"/v1/search", ``, "empty body"},
		{"/v1/search", `{`, "unexpected end"},
		{"/v1/search", `{"terms":[1,]}`, "malformed JSON"},
		{"/v1/search", `{"terms":[1]} {}`, "after the top-level value"},
		{"/v1/search", `{"terms":[1]}x`, "malformed JSON"},
		{"/v1/search", `[1,2]`, "want a JSON object"},
		{"/v1/search", `"x"`, "want a JSON object"},
		{"/v1/search", `null`, `want "terms"`},
		{"/v1/search", `{}`, `want "terms"`},
		{"/v1/search", `{"terms":null}`, `want "terms"`},
		{"/v1/search", `{"limit":3}`, `want "terms"`},
		{"/v1/search", `{"terms":[-1]}`, "terms[0]: want an integer in [0, 4294967295], got -1"},
		{"/v1/search", `{"terms":[1,1.5]}`, "terms[1]: want an integer in [0, 4294967295], got 1.5"},
		{"/v1/search", `{"terms":[1e3]}`, "terms[0]"},
		{"/v1/search", `{"terms":[1E3]}`, "terms[0]"},
		{"/v1/search", `{"terms":[2.0]}`, "terms[0]"},
		{"/v1/search", `{"terms":["3"]}`, `terms[0]: want an integer in [0, 4294967295], got "3"`},
		{"/v1/search", `{"terms":["a,b\",c"]}`, `terms[0]: want an integer in [0, 4294967295], got "a,b\",c"`},
		{"/v1/search", `{"terms":[1,2,null]}`, "terms[2]: want an integer in [0, 4294967295], got null"},
		{"/v1/search", `{"terms":[true]}`, "terms[0]: want an integer in [0, 4294967295], got true"},
		{"/v1/search", `{"terms":[[1]]}`, "terms[0]: want an integer in [0, 4294967295], got an array"},
		{"/v1/search", `{"terms":[[1,2],3]}`, "terms[0]: want an integer in [0, 4294967295], got an array"},
		{"/v1/search", `{"terms":[3, {"a":1,"b":2}]}`, "terms[1]: want an integer in [0, 4294967295], got an object"},
		{"/v1/search:batch", `{"queries":[{"terms":[[1,2],3]}]}`, "queries[0]: terms[0]: want an integer in [0, 4294967295], got an array"},
		{"/v1/search", `{"terms":[4294967296]}`, "got 4294967296"},
		{"/v1/search", `{"terms":[99999999999999999999999]}`, "terms[0]"},
		{"/v1/search", `{"terms":{}}`, "terms: want an array of term ids, got an object"},
		{"/v1/search", `{"terms":3}`, "terms: want an array"},
		{"/v1/search", `{"terms":"1 2"}`, "terms: want an array"},
		{"/v1/search", `{"terms":[1],"limit":-1}`, "limit -1: want 0 (count only) to 5"},
		{"/v1/search", `{"terms":[1],"limit":6}`, "limit 6"},
		{"/v1/search", `{"terms":[1],"limit":1.5}`, "limit: want an integer, got number 1.5"},
		{"/v1/search", `{"terms":[1],"limit":"3"}`, "limit: want an integer, got string"},
		{"/v1/search", `{"terms":[1],"limit":99999999999999999999}`, "limit: want an integer"},
		{"/v1/search", `{"terms":[1],"extra":1}`, `unknown field "extra"`},
		{"/v1/search", `{"q":"alpha"}`, "no vocabulary"},
		{"/v1/search", `{"q":3}`, "q: want a string"},
		{"/v1/search:batch", `{}`, `want {"queries":[...]}`},
		{"/v1/search:batch", `{"queries":null}`, `want {"queries":[...]}`},
		{"/v1/search:batch", `{"queries":{}}`, "queries: want an array of queries, got object"},
		{"/v1/search:batch", `{"queries":[{"terms":[1]},{"terms":[1]},{"terms":[1]},{"terms":[1]}]}`, "4 queries in one request: the limit is 3"},
		{"/v1/search:batch", `{"queries":[{"terms":[1]},{"terms":[-1]}]}`, "queries[1]: terms[0]"},
		{"/v1/search:batch", `{"queries":[{"terms":[1]},3]}`, "queries[1]: body: want a JSON object"},
		{"/v1/search:batch", `{"queries":[{"terms":[1]},{"limit":9,"terms":[1]}]}`, "queries[1]: limit 9"},
		{"/v1/search:batch", `{"queries":[{"terms":[1],"x":0}]}`, `queries[0]: unknown field "x"`},
		{"/v1/search:batch", `{"terms":[1]}`, `unknown field "terms"`},
		{"/v1/search:batch", `{"queries":[]`, "unexpected end"},
	} {
		code, hdr, body := call(t, ids, "POST", c.path, c.body)
		if code != 400 {
			t.Errorf("%s %s: status %d (%s), want 400", c.path, c.body, code, body)
			continue
		}
		if msg := checkError(t, c.body, hdr, body); !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: error %q, want it to contain %q", c.path, c.body, msg, c.want)
		}
	}
	// On a text index, q works and terms too; both at once do not.
	for _, c := range []struct{ body, want string }{
		{`{"q":"Alpha, beta!"}`, `{"count":1,"ids":[0]}`},
		{`{"q":"beta"}`, `{"count":2,"ids":[0,1]}`},
		{`{"q":"beta beta BETA"}`, `{"count":2,"ids":[0,1]}`},
		{`{"q":"beta unknownword"}`, `{"count":0,"ids":[]}`},
		{`{"q":""}`, `{"count":0,"ids":[]}`},
		{`{"q":"  ,; "}`, `{"count":0,"ids":[]}`},
		{`{"terms":[1,2]}`, `{"count":1,"ids":[1]}`},
	} {
		code, _, got := call(t, text, "POST", "/v1/search", c.body)
		if code != 200 || got != c.want+"\n" {
			t.Errorf("text index %s: got %d %q, want %q", c.body, code, got, c.want)
		}
	}
	code, hdr, body := call(t, text, "POST", "/v1/search", `{"q":"alpha","terms":[0]}`)
	if code != 400 || !strings.Contains(checkError(t, "both", hdr, body), "not both") {
		t.Errorf("q and terms: %d %s", code, body)
	}
	// Keys differing only in case: encoding/json matches them
	// case-insensitively; a second "terms" replaces the first.
	code, _, body = call(t, ids, "POST", "/v1/search", `{"Terms":[0]}`)
	if code != 200 || body != `{"count":1,"ids":[0]}`+"\n" {
		t.Errorf(`{"Terms":[0]}: %d %s`, code, body)
	}
}

func TestBatchEndpoint(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	docs := testDocs(r, 150, 20)
	_, ts := newTestServer(t, Config{BatchSize: 7, MaxQueries: 100}, newRefBackend(docs), nil)
	code, _, body := call(t, ts, "POST", "/v1/search:batch", `{"queries":[]}`)
	if code != 200 || body != `{"results":[]}`+"\n" {
		t.Fatalf("empty batch: %d %q", code, body)
	}
	for range 30 {
		n := 1 + r.IntN(100) // often more than a backend batch: split
		var req, want strings.Builder
		req.WriteString(`{"queries":[`)
		want.WriteString(`{"results":[`)
		for i := range n {
			q := randomQuery(r, 20)
			limit := r.IntN(6)
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
		req.WriteString("]}")
		want.WriteString("]}\n")
		code, _, got := call(t, ts, "POST", "/v1/search:batch", req.String())
		if code != 200 || got != want.String() {
			t.Fatalf("batch of %d: %d\ngot  %s\nwant %s", n, code, got, want.String())
		}
	}
}

func TestMethodsAndPaths(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newRefBackend(nil), nil)
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/v1/search", 405, "POST"},
		{"PUT", "/v1/search:batch", 405, "POST"},
		{"DELETE", "/v1/search", 405, "POST"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"POST", "/metrics", 405, "GET, HEAD"},
		{"GET", "/", 404, ""},
		{"POST", "/v1/search/", 404, ""},
		{"POST", "/v1/searchx", 404, ""},
		{"GET", "/v2/search", 404, ""},
	} {
		code, hdr, body := call(t, ts, c.method, c.path, "")
		if code != c.code || hdr.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, %q", c.method, c.path, code, hdr.Get("Allow"), c.code, c.allow)
		}
		checkError(t, c.method+" "+c.path, hdr, body)
	}
	if code, _, body := call(t, ts, "HEAD", "/healthz", ""); code != 200 || body != "" {
		t.Errorf("HEAD /healthz: %d %q", code, body)
	}
}

func TestHealthz(t *testing.T) {
	s, ts := newTestServer(t, Config{}, nil, nil)
	code, _, body := call(t, ts, "GET", "/healthz", "")
	if code != 503 || !strings.Contains(body, "loading") {
		t.Errorf("healthz before loading: %d %q", code, body)
	}
	code, hdr, body := call(t, ts, "POST", "/v1/search", `{"terms":[1]}`)
	if code != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("search before loading: %d %q", code, body)
	}
	checkError(t, "search before loading", hdr, body)
	s.SetBackend(newRefBackend([][]uint32{{1}}), nil)
	code, _, body = call(t, ts, "GET", "/healthz", "")
	if code != 200 || body != `{"status":"ok","device":"cpu"}`+"\n" {
		t.Errorf("healthz after loading: %d %q", code, body)
	}
	if code, _, body := call(t, ts, "POST", "/v1/search", `{"terms":[1]}`); code != 200 || body != `{"count":1,"ids":[0]}`+"\n" {
		t.Errorf("search after loading: %d %q", code, body)
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 100
	_, ts := newTestServer(t, Config{MaxBody: limit}, newRefBackend([][]uint32{{1}}), nil)
	body := func(n int) string { // a valid request of exactly n bytes
		s := `{"terms":[1]}`
		return s + strings.Repeat(" ", n-len(s))
	}
	if code, _, got := call(t, ts, "POST", "/v1/search", body(limit)); code != 200 {
		t.Errorf("body at the limit: %d %s", code, got)
	}
	code, hdr, got := call(t, ts, "POST", "/v1/search", body(limit+1))
	if code != 413 {
		t.Errorf("body over the limit: %d %s", code, got)
	}
	checkError(t, "413", hdr, got)
	// Without a Content-Length (chunked), the limit holds while reading.
	for _, n := range []int{limit, limit + 1, 10 * limit} {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/search", io.MultiReader(strings.NewReader(body(n))))
		req.ContentLength = -1
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 200
		if n > limit {
			want = 413
		}
		if resp.StatusCode != want {
			t.Errorf("chunked body of %d bytes: %d %s, want %d", n, resp.StatusCode, b, want)
		}
	}
}

func TestBackendError(t *testing.T) {
	b := newRefBackend([][]uint32{{1}})
	b.fail = errors.New("device lost")
	_, ts := newTestServer(t, Config{}, b, nil)
	code, hdr, body := call(t, ts, "POST", "/v1/search", `{"terms":[1]}`)
	if code != 500 || !strings.Contains(checkError(t, "500", hdr, body), "device lost") {
		t.Errorf("failing backend: %d %s", code, body)
	}
}

func TestTermListFuzzSeeds(t *testing.T) {
	for _, s := range []string{"[]", "[0]", " [ 1 , 2 ] ", "[4294967295]", "[4294967296]", "[-0]", "[0.0]", "[01]", `["1"]`, "[1,[2]]", "null", "{}"} {
		checkTermList(t, []byte(s))
	}
}

// checkTermList compares termList's decoding of a JSON value with one made
// from encoding/json's numbers.
func checkTermList(t *testing.T, b []byte) {
	var got termList
	gotErr := decodeStrict([]byte(`{"terms":`+string(b)+`}`), &struct {
		Terms *termList `json:"terms"`
	}{&got})
	var raw any
	d := json.NewDecoder(strings.NewReader(`{"terms":` + string(b) + `}`))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil || d.More() {
		if gotErr == nil {
			t.Fatalf("%q: accepted, but encoding/json rejects it: %v", b, err)
		}
		return
	}
	if _, err := d.Token(); err != io.EOF {
		if gotErr == nil {
			t.Fatalf("%q: accepted with data after it", b)
		}
		return
	}
	v := raw.(map[string]any)["terms"]
	if v == nil {
		if gotErr != nil || got != nil {
			t.Fatalf("%q: null gives %v, %v", b, got, gotErr)
		}
		return
	}
	arr, ok := v.([]any)
	var want []uint32
	for _, e := range arr {
		n, isNum := e.(json.Number)
		if !isNum {
			ok = false
			break
		}
		x, err := strconv.ParseUint(string(n), 10, 32)
		if err != nil {
			ok = false
			break
		}
		want = append(want, uint32(x))
	}
	if !ok {
		if gotErr == nil {
			t.Fatalf("%q: accepted as %v", b, got)
		}
		return
	}
	if gotErr != nil || !slices.Equal(got, want) || got == nil {
		t.Fatalf("%q: got %v, %v; want %v", b, got, gotErr, want)
	}
}

func FuzzTermList(f *testing.F) {
	for _, s := range []string{"[]", "[0]", " [ 1 , 2 ] ", "[4294967295]", "[4294967296]", "[-0]", "[1e2]", `["1"]`, "[1,[2,3]]", "[1,{\"a\":[1,2]}]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkTermList(t, b) })
}

func TestConfig(t *testing.T) {
	for _, bad := range []Config{
		{BatchSize: -1}, {BatchWait: -1}, {Deadline: -1}, {MaxBody: 10}, {Concurrency: -1}, {Queue: -1},
		{Queue: 10, MaxQueries: 11}, {MaxQueries: -1}, {MaxLimit: -1}, {MaxBody: 1000, MaxBodies: 999},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v): no error", bad)
		}
	}
	s, err := New(Config{Queue: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.Config(); c.MaxQueries != 10 || c.BatchSize != 0 || c.Concurrency != 0 || c.MaxLimit != DefaultMaxLimit {
		t.Errorf("defaults before the backend: %+v", c)
	}
	gpu := newRefBackend(nil)
	gpu.device = "gpu"
	s.SetBackend(gpu, nil)
	if c := s.Config(); c.Concurrency != 2 || c.BatchSize != 1<<16 || c.Queue != 10 {
		t.Errorf("defaults on a GPU with a queue of 10: %+v", c)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("a second SetBackend did not panic")
			}
		}()
		s.SetBackend(gpu, nil)
	}()
	s2, _ := New(Config{MaxQueries: 9000})
	defer s2.Close()
	s2.SetBackend(newRefBackend(nil), nil)
	if c := s2.Config(); c.Concurrency != runtime.GOMAXPROCS(0) || c.BatchSize != 1024 || c.Queue != 9000 {
		t.Errorf("defaults on the CPU with 9000 queries a request: %+v", c)
	}
}

// TestStalledBody: clients that announce a body of the largest size and
// stall after a few bytes hold none of the bodies' budget beyond what they
// sent (others are answered, not turned away with 429 as when the
// announced length was reserved), and are answered 408 once the deadline
// passes (they held the handler for the minute of ReadTimeout).
func TestStalledBody(t *testing.T) {
	const deadline = 300 * time.Millisecond
	_, ts := newTestServer(t, Config{MaxBody: 1 << 20, MaxBodies: 1 << 20, Deadline: deadline}, newRefBackend([][]uint32{{1}}), nil)
	type reply struct {
		code    int
		body    string
		elapsed time.Duration
	}
	replies := make(chan reply, 4)
	for range cap(replies) {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second)) // a server that never answers fails, not hangs
		start := time.Now()
		fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{\"terms\":", 1<<20)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				replies <- reply{body: err.Error(), elapsed: time.Since(start)}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			replies <- reply{resp.StatusCode, string(b), time.Since(start)}
		}()
	}
	time.Sleep(deadline / 3) // the stalled bodies' headers are read
	if code, _, body := call(t, ts, "POST", "/v1/search", `{"terms":[1]}`); code != 200 {
		t.Errorf("while bodies stall: %d %s, want 200", code, body)
	}
	for range cap(replies) {
		r := <-replies
		if r.code != 408 || !strings.Contains(r.body, "did not arrive within the deadline") || r.elapsed > 10*deadline {
			t.Errorf("a stalled body: %d %q after %v, want 408 after the deadline of %v", r.code, r.body, r.elapsed, deadline)
		}
	}
	_, _, text := call(t, ts, "GET", "/metrics", "")
	samples, _, err := parseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if n := value(t, samples, "xsect_errors_total", "code", "408"); n != float64(cap(replies)) {
		t.Errorf("%v requests counted as 408, want %d", n, cap(replies))
	}
}

// TestClientGoneMidBody checks that a client that closes its connection
// before sending the whole body (as xsect loadgen does when its duration
// ends in the middle of a request) is counted as 499, the client went
// away, and not as a malformed request (400): the body is short, not bad.
func TestClientGoneMidBody(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newRefBackend([][]uint32{{1}}), nil)
	for i, c := range []struct{ path, head, body string }{
		{"/v1/search:batch", "Content-Length: 1000\r\n", `{"queries":[{"terms":[1]},`},
		{"/v1/search", "Content-Length: 100\r\n", `{"terms":[1`},
		{"/v1/search", "Content-Length: 100\r\n", ``},
		{"/v1/search", "Transfer-Encoding: chunked\r\n", "10\r\n{\"terms\":[1"},
		{"/v1/search", "Transfer-Encoding: chunked\r\n", "5\r\n{\"ter\r\n"},
	} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%s\r\n%s", c.path, c.head, c.body)
		conn.Close()
		waitFor(t, "the request to be counted", func() bool {
			_, _, text := call(t, ts, "GET", "/metrics", "")
			samples, _, err := parseMetrics(text)
			if err != nil {
				t.Fatal(err)
			}
			if n := value(t, samples, "xsect_errors_total", "code", "400"); n != 0 {
				t.Fatalf("case %d (%s): %v requests counted as 400, want 0", i, c.body, n)
			}
			return value(t, samples, "xsect_errors_total", "code", "499") == float64(i+1)
		})
	}
	// A malformed chunked body is still the client's mistake: 400.
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second)) // a server that never answers fails, not hangs
	fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("malformed chunked body: %d, want 400", resp.StatusCode)
	}
}
