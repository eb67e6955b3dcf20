// Package query is the conjunctive query workload: batches of queries, each
// the intersection of its terms' posting lists in an inverted index
// (package invindex), answered by the engine a planner picks among those
// registered (the CPU engine here, the GPU engine of internal/gpuquery).
// The public package query (github.com/xsect/xsect/query) is its API.
//
// Unlike the one-shot workloads, a query engine serves many batches on
// one index: the planner picks an engine once, Engine.Open prepares it
// for the index (the GPU engine uploads the posting lists), and the
// returned Runner answers batches until it is closed.
package query

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/invindex"
)

// Query is one conjunctive query: a document matches when it holds every
// term. Duplicate terms are ignored; a term the index does not hold
// (NoTerm, or any id >= the index's terms) matches nothing; an empty
// query matches nothing.
type Query struct {
	Terms []uint32
}

// Result is the answer to one query: Count is the number of matching
// documents, IDs the first of them in increasing order, at most the
// search's limit (nil when counting only).
type Result struct {
	Count int
	IDs   []uint32
}

// Runner answers batches of queries on one index. Search answers qs[i]
// into res[i] (len(res) == len(qs)); limit < 0 means every id; countOnly
// leaves IDs nil. Search reuses the capacity of res[i].IDs. It returns
// ctx.Err() soon after ctx is done (res is then partly filled). A Runner
// is safe for concurrent use.
type Runner interface {
	Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error
	// Notes describes how the batches ran (device, time in kernels and
	// transfers), "" if the engine says nothing.
	Notes() string
	// Concurrency returns how many searches run at once before another
	// waits for one to end, or 0 where none waits (the CPU engine: each
	// search spreads over its own goroutines).
	Concurrency() int
	Close() error
}

// Workload is what the planner knows of the work ahead, and what an
// engine opens on: the index, the CPU threads allowed, the GPUs a GPU
// engine may spread over (by ordinal, as gpurt.ParseGPUs reads them; nil:
// every GPU of the host), and a sample of the queries (nil: unknown, as a
// server's unbounded stream) that stands for Queries queries in all.
// Engines memoise their decisions about it (Memo).
type Workload struct {
	Index   *invindex.Index
	Threads int
	GPUs    []int
	Sample  []Query
	Queries int

	memos engine.Memos
}

// Memo returns the value build returns for key, built once per workload
// (the GPU engine's choice of GPUs, made by its estimate, taken by Open).
func (w *Workload) Memo(key string, build func() any) any { return w.memos.Get(key, build) }

// Engine is one way of answering queries on one kind of device.
type Engine interface {
	// Name is the technique, "svs" for both built-in engines: shortest
	// list first, each next list intersected with the running result.
	Name() string
	Kind() engine.Kind
	// Device returns the device, or why it is unavailable (wrapping
	// engine.ErrCannotRun); it must not open a GPU.
	Device() (engine.Device, error)
	// Estimate predicts the seconds to open the engine and answer the
	// workload, and the device memory it needs.
	Estimate(w *Workload) (engine.Estimate, error)
	// Open prepares the engine to answer batches on w.Index with up to
	// w.Threads CPU goroutines a search (and, on the GPU, on w.GPUs).
	Open(w *Workload) (Runner, error)
}

// Candidate is one engine's answer to the planner.
type Candidate = engine.Candidate[Engine]

var registered = engine.NewRegistry[Engine]("query")

// Register adds an engine; the GPU engine's package calls it from init.
func Register(e Engine) { registered.Register(e) }

// Engines returns the registered engines, the CPU engine first.
func Engines() []Engine { return registered.Engines() }

// Plan asks every engine that choice allows for an estimate of w and
// ranks them (engine.Choose). It returns the ranked candidates and the
// chosen one, or an error wrapping engine.ErrCannotRun that says why none
// can run (the candidates are returned all the same, for Explain).
func Plan(w *Workload, choice engine.Choice) ([]Candidate, Candidate, error) {
	choice, err := choice.Normalize("query", registered.Names())
	if err != nil {
		return nil, Candidate{Err: err}, err
	}
	return engine.Choose(engine.Planning[*Workload, Engine]{Workload: "query", Choice: choice, Problem: w,
		Engines: registered.Engines(), Threads: Threads(w.Threads)})
}

// Explain writes the workload's shape, the candidates' table and the
// choice (engine.WriteChoice).
func Explain(out io.Writer, w *Workload, cs []Candidate, chosen Candidate) error {
	fmt.Fprintf(out, "index: %s\n", w.Index)
	if w.Sample != nil {
		fmt.Fprintf(out, "queries: %d (sample of %d)\n", w.Queries, len(w.Sample))
	} else {
		fmt.Fprintf(out, "queries: unknown in advance\n")
	}
	return engine.WriteChoice(out, cs, chosen)
}

// Threads resolves a thread count: 0 means GOMAXPROCS.
func Threads(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}
