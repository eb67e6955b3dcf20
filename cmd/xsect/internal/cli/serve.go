package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xsect/xsect/internal/serve"
	"github.com/xsect/xsect/query"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "serve conjunctive queries over an index from 'xsect index build' over HTTP",
		usage:   "INDEX [--addr HOST:PORT] [--device cpu|gpu|auto] [--gpus LIST] [--threads N] [flags]",
		help: `
Answers conjunctive (AND) queries over INDEX over HTTP (docs/SERVE.md):

  POST /v1/search        {"terms":[3,17],"limit":10}, or {"q":"some text"} on
                         an index built with --text; answers
                         {"count":C,"ids":[...]}: the number of matching
                         documents and the first limit of their ids,
                         increasing (limit: 0 to --max-limit, default 10)
  POST /v1/search:batch  {"queries":[{...},...]} (at most --max-queries);
                         answers {"results":[{"count":C,"ids":[...]},...]}
  GET  /healthz          200 once the index is loaded, 503 before
  GET  /metrics          Prometheus text format, series prefixed xsect_

Errors are {"error":"..."}: 400 for a malformed request (bad JSON, a term that
is not an integer in [0, 2^32-1], an unknown field, "q" on an index without
vocabulary), 408 for a body not received within --deadline, 413 for a body
over --max-body, 429 when --queue queries are already in flight (or
--max-bodies bytes of bodies received), 503 when a request's --deadline
passes before its queries ran, 504 when it passes while they run.

The queries of concurrent requests are gathered into batches of up to
--batch-size queries: a batch runs as soon as one of --concurrency slots is
free, gathering more while none is (with --batch-wait, it first waits that
long from its oldest query to fill). The engine is xsect query's: the CPU
engine (--threads per batch) or the GPU engine (--device gpu) on the GPUs of
--gpus, each with the index resident: a batch runs on the GPU with the fewest
queries in flight, two batches at once on each (the default --concurrency).

Logs go to standard error (--log-format, --log-level). SIGINT, SIGTERM or
SIGHUP stops accepting connections, finishes the requests in flight and exits
0; a second signal ends the process at once. INDEX is mapped: to replace it,
rename a new file over it and restart; one overwritten in place fails the
batches that meet it (500) and stops the server (exit 1).`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			addr := fs.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0: any free port, logged)")
			device := fs.String("device", "auto", "where batches run: cpu, gpu or auto")
			gpus := gpusFlag(fs)
			threads := fs.Int("threads", 0, "CPU threads per batch, up to 4096 (0: one per core)")
			batchSize := fs.Int("batch-size", 0, "most queries in one batch (0: 1024 on the CPU, 65536 on a GPU)")
			batchWait := fs.Duration("batch-wait", 0, "longest a batch waits to fill, from its oldest query (0: run when a slot is free)")
			deadline := fs.Duration("deadline", serve.DefaultDeadline, "time a request may take from its arrival, receiving its body and queueing included")
			maxBody := fs.Int64("max-body", serve.DefaultMaxBody, "largest request body in `bytes`")
			maxBodies := fs.Int64("max-bodies", 0, "request body `bytes` held at once, all requests together; beyond, 429 (0: the larger of 64 MiB and 16 --max-body)")
			concurrency := fs.Int("concurrency", 0, "batches running at once (0: one per core on the CPU, two per GPU of --gpus on the GPU)")
			queue := fs.Int("queue", 0, "most queries admitted and not yet answered (waiting, running, being written); beyond, 429 (0: 8192 on the CPU, 131072 on a GPU or 65536 per batch running at once where more)")
			maxQueries := fs.Int("max-queries", serve.DefaultMaxQueries, "most queries in one batch request (at most --queue, to which it is lowered when not given)")
			maxLimit := fs.Int("max-limit", serve.DefaultMaxLimit, "largest limit a query may ask (a limit of 0 counts only)")
			logFormat := fs.String("log-format", "text", "log format: text or json")
			logLevel := fs.String("log-level", "info", "least level logged: debug (every request), info, warn or error")
			cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the serving, from ready to shutdown, to `FILE` (for go tool pprof)")
			return func(env *Env, args []string) error {
				if len(args) != 1 {
					return usagef("want one INDEX, got %d arguments", len(args))
				}
				switch *device {
				case "cpu", "gpu", "auto":
				default:
					return usagef("--device %q: want cpu, gpu or auto", *device)
				}
				if err := checkThreads(*threads); err != nil {
					return err
				}
				// Zero means "default" to serve.Config: these flags have
				// their default written out, so 0 is a mistake.
				for _, f := range []struct {
					name string
					v    int64
				}{{"max-body", *maxBody}, {"max-queries", int64(*maxQueries)}, {"max-limit", int64(*maxLimit)}} {
					if f.v < 1 {
						return usagef("--%s %d: want at least 1", f.name, f.v)
					}
				}
				if *batchSize < 0 || *queue < 0 || *concurrency < 0 {
					return usagef("--batch-size, --queue and --concurrency: want at least 1, or 0 for the device's default")
				}
				if *maxBodies < 0 {
					return usagef("--max-bodies %d: want at least --max-body, or 0 for the default", *maxBodies)
				}
				if *deadline <= 0 {
					return usagef("--deadline %v: want more than 0", *deadline)
				}
				if !given(fs, "max-queries") && *queue > 0 {
					*maxQueries = min(*maxQueries, *queue)
				}
				if *queue > 0 && *maxQueries > *queue {
					return usagef("--max-queries %d: want at most --queue (%d)", *maxQueries, *queue)
				}
				gpuList, err := parseGPUs(*gpus, *device)
				if err != nil {
					return err
				}
				log, err := newLogger(env.Stderr, *logFormat, *logLevel)
				if err != nil {
					return err
				}
				cfg := serve.Config{
					BatchSize: *batchSize, BatchWait: *batchWait, Deadline: *deadline, MaxBody: *maxBody, MaxBodies: *maxBodies,
					Concurrency: *concurrency, Queue: *queue, MaxQueries: *maxQueries, MaxLimit: *maxLimit, Logger: log,
				}
				if *cpuProfile == "-" {
					return usagef("--cpuprofile -: want a file (standard output is not written by serve)")
				}
				return runServe(env, args[0], *addr, query.Options{Device: *device, Threads: *threads, GPUs: gpuList}, cfg, log, *cpuProfile)
			}
		},
	})
}

// newLogger returns the slog logger of --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opt := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opt)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opt)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}

// runServe verifies the index, listens, readies the searcher (healthz
// answers 503 meanwhile) and serves until SIGINT, SIGTERM or SIGHUP.
func runServe(env *Env, path, addr string, opt query.Options, cfg serve.Config, log *slog.Logger, cpuProfile string) (err error) {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		// The heap is small and bounded (the bodies and answers in
		// flight), its garbage plentiful: collecting at 5 times the live
		// heap instead of twice took 15% more queries/s on the H100 host
		// (docs/SERVE.md). GOGC, when set, has the last word.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	ix, err := openIndex(env, path)
	if err != nil {
		return err
	}
	defer ix.Close()
	s, err := serve.New(cfg)
	if err != nil {
		return usageError{err.Error()}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	// From here SIGINT, SIGTERM and SIGHUP shut the server down
	// gracefully, so that a closed terminal or a supervisor's hangup
	// neither resets the requests in flight nor leaves --cpuprofile's
	// temporary file; a second one ends the process (the default action,
	// restored). A signal ignored when xsect started (nohup) stays
	// ignored.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 1)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	defer signal.Stop(sigs)
	if env.uncatch != nil {
		env.uncatch()
	}
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			log.Info("signal received", "signal", sig.String())
			stop()
		case <-ctx.Done():
		}
	}()
	c := s.Config()
	log.Info("listening", "addr", ln.Addr().String(), "index", path)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, c.Deadline+5*time.Second) }()
	// abandon shuts down the server, which answers 503 until it is ready,
	// when it cannot become ready.
	abandon := func() { stop(); <-served }

	searcher, err := query.NewSearcher(ix, opt)
	if err != nil {
		log.Error("cannot serve the index", "error", err)
		abandon()
		if errors.Is(err, query.ErrCannotRun) {
			return err
		}
		return usageError{err.Error()}
	}
	defer searcher.Close()
	// An index file changed under the server (cp over it) fails the
	// batches that see it (500) and stops the server, which can no
	// longer answer from the index it verified: exit 1, so that a
	// supervisor restarts it on the new file.
	var changed atomic.Pointer[error]
	backend := stopOnChange{searcher, func(err error) {
		if changed.CompareAndSwap(nil, &err) {
			log.Error("the index file changed while served: stopping; restart the server to serve the new file", "error", err)
			stop()
		}
	}}
	var parse func(string) serve.Query
	if ix.HasVocabulary() {
		parse = ix.ParseText
	}
	if cpuProfile != "" {
		// The profile is an output like the others: it appears only if
		// the server stops cleanly.
		finish, perr := startCPUProfile(env, cpuProfile)
		if perr != nil {
			abandon()
			return perr
		}
		defer finish(&err)
	}
	s.SetBackend(backend, parse)
	rc := s.Config()
	log.Info("ready", "device", searcher.Device(), "docs", ix.Docs(), "terms", ix.Terms(), "text", ix.HasVocabulary(),
		"load_seconds", time.Since(start).Seconds(), "batch_size", rc.BatchSize, "batch_wait", rc.BatchWait,
		"concurrency", rc.Concurrency, "queue", rc.Queue, "deadline", rc.Deadline, "max_body", rc.MaxBody)
	err = <-served
	if err != nil {
		log.Error("shutdown", "error", err)
		return err
	}
	log.Info("stopped")
	if cerr := changed.Load(); cerr != nil {
		return *cerr
	}
	return nil
}

// stopOnChange is a backend that calls changed with the error of a batch
// that failed because the index file changed (query.ErrChanged).
type stopOnChange struct {
	*query.Searcher
	changed func(error)
}

func (b stopOnChange) Search(ctx context.Context, qs []serve.Query, limit int, countOnly bool, res []serve.Result) error {
	err := b.Searcher.Search(ctx, qs, limit, countOnly, res)
	if errors.Is(err, query.ErrChanged) {
		b.changed(err)
	}
	return err
}
