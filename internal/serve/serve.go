// Package serve is xsect's search service: conjunctive queries over an
// inverted index answered over HTTP, with the queries of concurrent requests
// gathered into batches for the engine (dynamic batching).
//
// The API:
//
//	POST /v1/search        {"terms":[3,17],"limit":10} or {"q":"text","limit":10}
//	                       -> {"count":C,"ids":[...]}
//	POST /v1/search:batch  {"queries":[{...},...]} -> {"results":[{"count":C,"ids":[...]},...]}
//	GET  /healthz          200 {"status":"ok"} once the index is loaded, 503 before
//	GET  /metrics          Prometheus text format, series prefixed xsect_
//
// Errors are {"error":"..."} with 400 (bad request), 404, 405, 408 (body
// not received by the deadline), 413 (body over the limit), 429 (queue
// full, or too many bodies held), 503 (not loaded, or the deadline passed
// before the queries ran), 504 (the deadline passed while they ran) or
// 500. docs/SERVE.md describes the service.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/query"
)

// Query is one conjunctive query: a document matches when it holds every
// term. Duplicate terms are ignored; a term the index lacks matches nothing;
// an empty query matches nothing.
type Query = query.Query

// Result is the answer to one query: Count matching documents, IDs the first
// of them in increasing order.
type Result = query.Result

// Backend answers batches of queries; query.Searcher is one. It must be safe
// for concurrent use: up to Config.Concurrency batches run at once.
type Backend interface {
	// Search answers qs[i] into res[i] (len(res) == len(qs)): the count,
	// and unless countOnly, the first limit ids (limit >= 0 here).
	Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error
	// Device is where batches run: "cpu" or "gpu".
	Device() string
}

// Concurrent is implemented by a backend that runs a bounded number of
// searches at once and makes any more wait, such as query.Searcher on the
// GPU (two per GPU owner). Config.Concurrency then defaults to that
// number: every one of them is fed, and no batch waits inside the backend
// where the dispatcher could still add queries to it. A backend that
// returns 0 (query.Searcher on the CPU) has the device's default.
type Concurrent interface {
	Concurrency() int
}

// ShortestLister is implemented by a backend that runs a batch faster when
// its queries come in order of the length of their shortest posting list
// (a GPU engine whose threads then do alike work). The dispatcher then
// semi-sorts every batch into buckets of equal bit length of that size.
type ShortestLister interface {
	ShortestList(q Query) int
}

// Config holds the service's limits. The zero value of a field means its
// default; BatchSize, Concurrency and Queue default by the backend's device
// (DefaultsFor), resolved when SetBackend is called.
type Config struct {
	BatchSize   int           // most queries in one backend batch
	BatchWait   time.Duration // longest a batch waits to fill, from its oldest query (0: none, run when a slot is free)
	Deadline    time.Duration // per request, from its arrival, its body's receiving included (default 2s)
	MaxBody     int64         // request body bytes (default 1 MiB)
	MaxBodies   int64         // request body bytes held at once, all requests together (default max(64 MiB, 16 MaxBody))
	Concurrency int           // batches running at once
	Queue       int           // queries admitted and not yet answered
	MaxQueries  int           // queries in one batch request (default 1024, at most Queue)
	MaxLimit    int           // largest limit a query may ask (default 1000)
	Logger      *slog.Logger  // default: discard
}

// Defaults of Config.
const (
	DefaultDeadline   = 2 * time.Second
	DefaultMaxBody    = 1 << 20
	DefaultMaxQueries = 1024
	DefaultMaxLimit   = 1000
	DefaultLimit      = 10 // the limit of a query that gives none
)

// DefaultsFor returns the defaults of BatchSize, Concurrency and Queue for a
// backend on device ("cpu" or "gpu"). On the CPU: batches of up to 1024
// queries, one slot per core (a small batch runs on one goroutine: several
// keep the cores busy; a large one spreads over the engine's threads), a
// queue of 8192. On a GPU: batches of up to 65,536 queries (the query
// package's GPU engine takes that many at once and pipelines the parts of a
// large batch), two slots (one batch's host stages overlap the other's
// device work; measured on the H100 host, 20% more queries/s than one slot
// at 256 clients; a Concurrent backend has its own number instead: two per
// GPU owner), a queue of 131,072 (two full batches and room; for a
// Concurrent backend a full batch for each batch it runs at once). Greedy
// dispatch keeps small batches small when the load is light.
func DefaultsFor(device string) (batchSize, concurrency, queue int) {
	if device == "gpu" {
		return 1 << 16, 2, 1 << 17
	}
	return 1024, runtime.GOMAXPROCS(0), 8192
}

// withDefaults fills the zero fields that do not depend on the device and
// checks the others.
func (c Config) withDefaults() (Config, error) {
	if c.Deadline == 0 {
		c.Deadline = DefaultDeadline
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxBodies == 0 {
		c.MaxBodies = max(64<<20, 16*c.MaxBody)
	}
	if c.MaxQueries == 0 {
		c.MaxQueries = DefaultMaxQueries
		if c.Queue > 0 {
			c.MaxQueries = min(c.MaxQueries, c.Queue)
		}
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = DefaultMaxLimit
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case c.BatchSize < 0:
		return c, fmt.Errorf("batch size %d: want at least 1, or 0 for the default", c.BatchSize)
	case c.BatchWait < 0:
		return c, fmt.Errorf("batch wait %v: want 0 or more", c.BatchWait)
	case c.Deadline < 0:
		return c, fmt.Errorf("deadline %v: want more than 0", c.Deadline)
	case c.MaxBody < 64:
		return c, fmt.Errorf("body limit %d: want at least 64 bytes", c.MaxBody)
	case c.MaxBodies < c.MaxBody:
		return c, fmt.Errorf("body budget %d: want at least the body limit %d", c.MaxBodies, c.MaxBody)
	case c.Concurrency < 0:
		return c, fmt.Errorf("concurrency %d: want at least 1, or 0 for the default", c.Concurrency)
	case c.Queue < 0:
		return c, fmt.Errorf("queue %d: want at least 1, or 0 for the default", c.Queue)
	case c.MaxQueries < 1 || (c.Queue > 0 && c.MaxQueries > c.Queue):
		return c, fmt.Errorf("queries per batch request %d: want 1 to the queue length %d", c.MaxQueries, c.Queue)
	case c.MaxLimit < 0:
		return c, fmt.Errorf("limit bound %d: want 0 or more", c.MaxLimit)
	}
	return c, nil
}

// forBackend fills BatchSize, Concurrency and Queue by b's device, and
// Concurrency by b's own where it is Concurrent; a queue left to its
// default holds at least a full batch request, and for a Concurrent
// backend a full batch for each of the batches running at once (on
// several GPUs, the device's default would starve all but two).
func (c Config) forBackend(b Backend) Config {
	batch, conc, queue := DefaultsFor(b.Device())
	concurrent := false
	if cb, ok := b.(Concurrent); ok && cb.Concurrency() > 0 {
		conc, concurrent = cb.Concurrency(), true
	}
	if c.BatchSize == 0 {
		c.BatchSize = batch
	}
	if c.Concurrency == 0 {
		c.Concurrency = conc
	}
	if c.Queue == 0 {
		c.Queue = max(queue, c.MaxQueries)
		if concurrent {
			c.Queue = max(c.Queue, c.Concurrency*c.BatchSize)
		}
	}
	return c
}

// Server is the HTTP service. It answers 503 until SetBackend is called.
type Server struct {
	cfg     Config
	log     *slog.Logger
	m       *metrics
	d       *dispatcher
	ready   atomic.Pointer[ready]
	bodies  atomic.Int64 // body bytes reserved by requests in flight
	started time.Time
}

// ready is what SetBackend installs.
type ready struct {
	b     Backend
	parse func(string) Query // nil: no vocabulary
	key   func(Query) int    // nil: batches are not sorted
	cfg   Config             // with the device's defaults
}

// New returns a server with the configuration cfg and starts its dispatcher.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, m: newMetrics(), started: time.Now()}
	s.d = newDispatcher(s)
	return s, nil
}

// SetBackend makes the server answer queries with b; parseText maps the
// text of a "q" to a query, and is nil when the index has no vocabulary.
// The limits that default by device take the defaults of b's
// (DefaultsFor), and the concurrency b's own where it is Concurrent. From then on /healthz answers 200. It may be called once.
func (s *Server) SetBackend(b Backend, parseText func(string) Query) {
	r := &ready{b: b, parse: parseText}
	if sl, ok := b.(ShortestLister); ok {
		r.key = sl.ShortestList
	}
	r.cfg = s.cfg.forBackend(b)
	s.d.start(r.cfg)
	if !s.ready.CompareAndSwap(nil, r) {
		panic("serve: SetBackend called twice")
	}
}

// Config returns the configuration in force, defaults filled in: those that
// depend on the device once SetBackend has been called, 0 before.
func (s *Server) Config() Config {
	if rd := s.ready.Load(); rd != nil {
		return rd.cfg
	}
	return s.cfg
}

// Close stops the dispatcher once the batches running have finished. Call it
// after the HTTP server has stopped handing requests to s.
func (s *Server) Close() { s.d.close() }

// Serve answers HTTP requests on ln until ctx is done, then shuts down
// gracefully: it stops accepting, lets the requests in flight finish (their
// deadline bounds how long that takes), stops the dispatcher and returns
// nil. It returns an error if ln fails or the requests did not finish
// within grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing the requests in flight", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		hs.Close()
		err = fmt.Errorf("requests still running after %v: %w", grace, err)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.Close()
	return err
}
