package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// httpError is an error answered with its status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code, fmt.Sprintf(format, args...)}
}

// endpoints, for the metrics.
const (
	epSearch = iota
	epBatch
	epOther
	numEndpoints
)

var endpointNames = [numEndpoints]string{"search", "batch", "other"}

// bufPool holds the buffers of bodies and responses.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// putBuf returns buf to the pool through bp unless it grew large: a burst of
// big responses should not stay allocated.
func putBuf(bp *[]byte, buf []byte) {
	if cap(buf) <= 1<<20 {
		*bp = buf[:0]
		bufPool.Put(bp)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ep := epOther
	var code, queries int
	switch r.URL.Path {
	case "/v1/search":
		ep = epSearch
		code, queries = s.search(w, r, false, start)
	case "/v1/search:batch":
		ep = epBatch
		code, queries = s.search(w, r, true, start)
	case "/healthz":
		code = s.healthz(w, r)
	case "/metrics":
		code = s.metrics(w, r)
	default:
		code = s.writeError(w, errorf(http.StatusNotFound, "no such path %q (the paths are /v1/search, /v1/search:batch, /healthz, /metrics)", r.URL.Path))
	}
	elapsed := time.Since(start)
	s.m.request(ep, code, elapsed)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", code), slog.Int("queries", queries),
			slog.Duration("elapsed", elapsed), slog.String("remote", r.RemoteAddr))
	}
}

// allow answers 405 unless r's method is one of methods.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, methods ...string) (int, bool) {
	for _, m := range methods {
		if r.Method == m {
			return 0, true
		}
	}
	allowed := methods[0]
	for _, m := range methods[1:] {
		allowed += ", " + m
	}
	w.Header().Set("Allow", allowed)
	return s.writeError(w, errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allowed)), false
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) int {
	if code, ok := s.allow(w, r, http.MethodGet, http.MethodHead); !ok {
		return code
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	rd := s.ready.Load()
	if rd == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"loading"}`+"\n")
		return http.StatusServiceUnavailable
	}
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, `{"status":"ok","device":"`+rd.b.Device()+`"}`+"\n")
	return http.StatusOK
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) int {
	if code, ok := s.allow(w, r, http.MethodGet, http.MethodHead); !ok {
		return code
	}
	device, inFlight, queueCap := "", 0, 0
	if rd := s.ready.Load(); rd != nil {
		device, inFlight, queueCap = rd.b.Device(), len(s.d.slots), rd.cfg.Queue
	}
	bp := bufPool.Get().(*[]byte)
	buf := s.m.write((*bp)[:0], s.d, device, inFlight, queueCap, time.Since(s.started))
	defer putBuf(bp, buf)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(buf)
	}
	return http.StatusOK
}

// writeError answers e (a *httpError, or any error as 500) and returns the
// status.
func (s *Server) writeError(w http.ResponseWriter, err error) int {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{http.StatusInternalServerError, err.Error()}
	}
	switch he.code {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	if he.code >= 500 {
		s.log.Warn("request failed", "status", he.code, "error", he.msg)
	}
	buf := encodeError(nil, he.msg)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(he.code)
	w.Write(buf)
	return he.code
}

// search answers POST /v1/search (batch false) and /v1/search:batch, for
// a request that arrived (its headers read) at arrival. It returns the
// status and the number of queries.
func (s *Server) search(w http.ResponseWriter, r *http.Request, batch bool, arrival time.Time) (code, queries int) {
	if code, ok := s.allow(w, r, http.MethodPost); !ok {
		return code, 0
	}
	rd := s.ready.Load()
	if rd == nil {
		return s.writeError(w, errorf(http.StatusServiceUnavailable, "the index is still loading")), 0
	}
	if r.ContentLength > s.cfg.MaxBody {
		return s.writeError(w, errorf(http.StatusRequestEntityTooLarge, "body of %d bytes: the limit is %d", r.ContentLength, s.cfg.MaxBody)), 0
	}
	// The deadline runs from the request's arrival: receiving its body
	// counts, so that a client that stalls mid-body holds a handler no
	// longer than one whose queries wait.
	deadline := arrival.Add(s.cfg.Deadline)
	var held int64 // body bytes counted in s.bodies
	defer func() { s.bodies.Add(-held) }()
	bp := bufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() { putBuf(bp, buf) }()
	buf, err := s.readBody(w, r, buf, deadline, &held)
	if err != nil {
		return s.writeError(w, err), 0
	}
	j, err := s.parse(rd, buf, batch)
	if err != nil {
		return s.writeError(w, err), 0
	}
	if len(j.qs) > 0 {
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		defer cancel()
		err := s.d.do(ctx, j)
		if j.admitted {
			defer j.unref() // once the answer is written
		}
		if err != nil {
			return s.writeError(w, err), len(j.qs)
		}
	}
	// The queries hold copies of the terms: the body's buffer is free.
	buf = buf[:0]
	if batch {
		buf = append(buf, `{"results":[`...)
		for i, res := range j.res {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = encodeResult(buf, res)
		}
		buf = append(buf, "]}"...)
	} else {
		buf = encodeResult(buf, j.res[0])
	}
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
	return http.StatusOK, len(j.qs)
}

// readBody reads r's body into buf, at most MaxBody bytes (413 beyond),
// by deadline (408 after), adding the bytes to s.bodies and *held as they
// arrive (429 when the bodies held by all requests would pass MaxBodies).
// The bytes received are counted, not those announced: a client that
// announces a megabyte and sends nothing holds nothing of the budget.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf []byte, deadline time.Time, held *int64) ([]byte, error) {
	// Without a deadline of its own, a stalled body would hold the
	// handler for the server's ReadTimeout (a minute). It is lifted once
	// the body is in: the connection's next read (net/http's watch for
	// the client closing, the next request) has deadlines of its own.
	// Errors are ignored: a ResponseWriter without a connection (a test
	// recorder) cannot stall.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline)
	defer rc.SetReadDeadline(time.Time{})
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		*held += int64(n)
		if s.bodies.Add(int64(n)) > s.cfg.MaxBodies {
			return buf, errorf(http.StatusTooManyRequests, "too many request bodies in flight (%d bytes at most); retry later", s.cfg.MaxBodies)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return buf, errorf(http.StatusRequestEntityTooLarge, "body over the limit of %d bytes", s.cfg.MaxBody)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return buf, errorf(http.StatusRequestTimeout, "the body did not arrive within the deadline of %v (%d bytes received)", s.cfg.Deadline, len(buf))
			}
			// A body cut short (the connection closed before its
			// Content-Length or its last chunk arrived) or a connection
			// reset is a client that went away, not a bad request: a load
			// generator that stops mid-request must not count as a 400.
			var ne net.Error
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || r.Context().Err() != nil {
				return buf, errorf(statusClientClosed, "the client went away while sending the body: %v", err)
			}
			return buf, errorf(http.StatusBadRequest, "reading the body: %v", err)
		}
	}
}

// reqsPool holds the decoded queries of batch requests, read only while
// the job is made.
var reqsPool = sync.Pool{New: func() any { return new([]searchRequest) }}

// parse decodes a request body into a job.
func (s *Server) parse(rd *ready, body []byte, batch bool) (*job, error) {
	j := &job{}
	if !batch {
		var req searchRequest
		if !parseSearch(body, &req) {
			if err := decodeStrict(body, &req); err != nil {
				return nil, &httpError{http.StatusBadRequest, err.Error()}
			}
		}
		q, limit, err := s.query(rd, &req)
		if err != nil {
			return nil, &httpError{http.StatusBadRequest, err.Error()}
		}
		j.qs = []Query{q}
		j.limits = []int{limit}
	} else {
		// One pass over the body; only a bad one is read again, query by
		// query, for a message naming the query at fault.
		var req struct {
			Queries []searchRequest `json:"queries"`
		}
		rp := reqsPool.Get().(*[]searchRequest)
		defer func() {
			if cap(*rp) <= 1<<14 {
				clear(*rp) // what was used; the rest is clear already
				reqsPool.Put(rp)
			}
		}()
		var ok bool
		if req.Queries, ok = parseBatch(body, *rp); ok {
			*rp = req.Queries
		} else if err := decodeStrict(body, &req); err != nil {
			return nil, &httpError{http.StatusBadRequest, batchError(body, err).Error()}
		}
		if req.Queries == nil {
			return nil, errorf(http.StatusBadRequest, `want {"queries":[...]}`)
		}
		if len(req.Queries) > s.cfg.MaxQueries {
			return nil, errorf(http.StatusBadRequest, "%d queries in one request: the limit is %d", len(req.Queries), s.cfg.MaxQueries)
		}
		j.qs = make([]Query, len(req.Queries))
		j.limits = make([]int, len(req.Queries))
		for i := range req.Queries {
			var err error
			if j.qs[i], j.limits[i], err = s.query(rd, &req.Queries[i]); err != nil {
				return nil, errorf(http.StatusBadRequest, "queries[%d]: %v", i, err)
			}
		}
	}
	j.res = make([]Result, len(j.qs))
	if rd.key != nil {
		j.keys = make([]int, len(j.qs))
		for i, q := range j.qs {
			j.keys[i] = rd.key(q)
		}
	}
	return j, nil
}

// batchError returns the error of the batch request body, which failed to
// decode with err, naming the query at fault.
func batchError(body []byte, err error) error {
	var req batchRequest
	if rerr := decodeStrict(body, &req); rerr != nil {
		return rerr
	}
	for i, raw := range req.Queries {
		var qr searchRequest
		if qerr := decodeStrict(raw, &qr); qerr != nil {
			return fmt.Errorf("queries[%d]: %v", i, qerr)
		}
	}
	return err
}

// query checks one decoded query and returns it with its limit.
func (s *Server) query(rd *ready, req *searchRequest) (Query, int, error) {
	limit := min(DefaultLimit, s.cfg.MaxLimit)
	if req.Limit != nil {
		limit = *req.Limit
	}
	if limit < 0 || limit > s.cfg.MaxLimit {
		return Query{}, 0, fmt.Errorf("limit %d: want 0 (count only) to %d", limit, s.cfg.MaxLimit)
	}
	switch {
	case req.Terms != nil && req.Q != nil:
		return Query{}, 0, errors.New(`give either "terms" or "q", not both`)
	case req.Q != nil:
		if rd.parse == nil {
			return Query{}, 0, errors.New(`"q": this index has no vocabulary (built without --text); give "terms"`)
		}
		return rd.parse(*req.Q), limit, nil
	case req.Terms != nil:
		return Query{Terms: req.Terms}, limit, nil
	}
	return Query{}, 0, errors.New(`want "terms" (an array of term ids) or "q" (text)`)
}
