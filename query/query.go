// Package query answers conjunctive (AND) queries over an inverted index,
// in batches, on the CPU or the GPU.
//
// An Index maps each term to its posting list: the ids of the documents
// that hold it, increasing. Build makes one from documents given as sets
// of term ids, BuildText from raw text (one document per line, words
// lowercased runs of ASCII letters and digits, the vocabulary kept);
// WriteTo saves it in xsect's index file format and Open loads such a
// file, memory-mapped where the system allows, after verifying its
// checksums and invariants (docs/QUERY.md describes the format).
//
// A Searcher answers batches of queries. Each query's terms are sorted by
// the length of their lists, duplicates dropped, and the lists intersected
// shortest first, stopping as soon as nothing is left: on the CPU with
// package intersect's SIMD kernels (merge for lists of similar length,
// batched searches for skewed ones) and bitmaps for the densest lists, a
// batch spread over all cores; on the GPU as in Wu et al., "A Batched GPU
// Algorithm for Set Intersection": posting lists resident on the device,
// the queries of a batch grouped by the length of their shortest list, a
// group of threads (a warp to a block) per slice of that list looking each
// element up in the query's other lists, then a scan and a compaction.
package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/xsect/xsect/internal/engine"
	_ "github.com/xsect/xsect/internal/gpuquery" // registers the GPU engine
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
	"github.com/xsect/xsect/sets"
)

// Index is an inverted index: posting lists of document ids (sorted,
// distinct uint32), optionally a vocabulary. Its methods are safe for
// concurrent use, except Close.
type Index struct {
	ix *invindex.Index
}

// NoTerm is a term id that no index holds: ParseText gives it to unknown
// words. An index has at most NoTerm terms.
const NoTerm = invindex.NoTerm

// BuildOptions configure Build and BuildText.
type BuildOptions struct {
	// DenseRatio r gives a bitmap, beside its list, to every term held by
	// at least 1/r of the documents (0: 32, where the bitmap takes no
	// more memory than the list; negative: no bitmaps). Bitmaps make
	// queries with common terms faster; they change no answer.
	DenseRatio int
	// Memory, if positive, bounds the bytes a build may allocate: a
	// build that needs more fails with a *MemoryError, before it
	// allocates the index when that is known in advance (Build), or as
	// soon as the text read shows it (BuildText).
	Memory int64
}

// MemoryError is a build that needs more memory than BuildOptions.Memory.
type MemoryError struct {
	What  string // what needs it
	Need  int64  // bytes needed (or used when the limit was reached)
	Limit int64  // BuildOptions.Memory, bytes
}

// Error returns "What needs Need, more than the limit of Limit", the sizes
// in B, KiB, MiB or GiB.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s needs %s, more than the limit of %s", e.What, engine.Bytes(e.Need), engine.Bytes(e.Limit))
}

// Build returns the index of docs: document i is docs.Set(i), a strictly
// increasing set of term ids (as package setio loads them). The index has
// one term for every id up to the largest present; the id 2^32-1 is
// refused (NoTerm).
func Build(docs *sets.Collection, opt BuildOptions) (*Index, error) {
	if err := docs.Validate(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	bo := invindex.BuildOptions{DenseRatio: opt.DenseRatio}
	terms := invindex.MaxTerm(docs) + 1
	if terms > invindex.NoTerm {
		return nil, fmt.Errorf("term id %d: an index holds term ids up to %d", terms-1, uint32(NoTerm-1))
	}
	if opt.Memory > 0 {
		if need := invindex.BuildMemory(docs.Len(), int(terms), int64(len(docs.Elements)), bo); need > opt.Memory {
			return nil, &MemoryError{fmt.Sprintf("the index (%d documents, %d terms, %d postings)", docs.Len(), terms, len(docs.Elements)), need, opt.Memory}
		}
	}
	ix, err := invindex.FromDocs(docs, bo)
	if err != nil {
		return nil, err
	}
	return &Index{ix}, nil
}

// BuildText returns the index of the text r, one document per line (a
// last line without a newline included), optionally gzip-compressed:
// each document's words are the runs of ASCII letters and digits in its
// line, lowercased. Term ids are the words' ranks in alphabetical order.
// name is used in errors.
func BuildText(r io.Reader, name string, opt BuildOptions) (*Index, error) {
	ix, err := invindex.FromText(r, name, invindex.BuildOptions{DenseRatio: opt.DenseRatio}, opt.Memory)
	var le *invindex.TextLimitError
	if errors.As(err, &le) {
		return nil, &MemoryError{fmt.Sprintf("%s: the index of the text up to line %d", le.File, le.Line), le.Need, le.Limit}
	}
	if err != nil {
		return nil, err
	}
	return &Index{ix}, nil
}

// Open loads and verifies a saved index (memory-mapped where the system
// allows). A file that is not an index, or is damaged or truncated, is an
// error naming it, which matches setio.ErrBadInput.
//
// The file must not change while it is open: to replace an index, write
// the new one elsewhere and rename it over the old path (the mapping
// keeps the old file). A file changed in place (cp over it, truncated)
// makes the searches on it fail with an error matching ErrChanged,
// rather than crash the process or answer from the new bytes.
func Open(path string) (*Index, error) {
	ix, err := invindex.Open(path)
	if err != nil {
		return nil, err
	}
	return &Index{ix}, nil
}

// Read loads and verifies an index from r, read whole into memory: for
// an index that is not a file, such as standard input. name is used in
// errors; size is the bytes r holds if known, or -1.
func Read(r io.Reader, name string, size int64) (*Index, error) {
	ix, err := invindex.Read(r, name, size)
	if err != nil {
		return nil, err
	}
	return &Index{ix}, nil
}

// WriteTo writes the index in xsect's index file format.
func (ix *Index) WriteTo(w io.Writer) (int64, error) { return ix.ix.WriteTo(w) }

// Close releases the index's file mapping. Searchers on it must be closed
// first.
func (ix *Index) Close() error { return ix.ix.Close() }

// Docs returns the number of documents; their ids run from 0 to Docs()-1.
func (ix *Index) Docs() int { return ix.ix.NumDocs }

// Terms returns the number of terms (posting lists).
func (ix *Index) Terms() int { return ix.ix.Terms() }

// Postings returns the total length of the posting lists.
func (ix *Index) Postings() int { return len(ix.ix.Postings) }

// HasVocabulary reports whether the index was built from text.
func (ix *Index) HasVocabulary() bool { return ix.ix.HasVocabulary() }

// List returns term t's posting list (nil for a term the index does not
// hold). It must not be modified.
func (ix *Index) List(t uint32) []uint32 {
	if int(t) >= ix.Terms() {
		return nil
	}
	return ix.ix.List(t)
}

// Word returns term t's word in an index with a vocabulary, "" otherwise.
func (ix *Index) Word(t uint32) string { return string(ix.ix.Word(t)) }

// String describes the index in one line.
func (ix *Index) String() string { return ix.ix.String() }

// Query is one conjunctive query: a document matches when it holds every
// term. Duplicate terms are ignored. A term id >= Terms() matches nothing.
// An empty query matches nothing.
type Query = query.Query

// ParseText tokenises text as lowercase [a-z0-9]+ runs (ASCII letters are
// lowercased, every other byte separates words) and maps words to term
// ids; an unknown word, or any word on an index without a vocabulary,
// becomes NoTerm, which matches nothing.
func (ix *Index) ParseText(s string) Query {
	return ix.AppendText(Query{}, []byte(s))
}

// AppendText is ParseText for a byte slice, appending the terms to q's
// (q.Terms[:0] reuses its memory).
func (ix *Index) AppendText(q Query, s []byte) Query {
	// The vocabulary may be mapped: a file that changes under it must
	// not crash the caller. The query is then empty, and the search on it
	// says what happened.
	var changed error
	defer ix.ix.Guard(&changed)()
	var buf [64]byte
	invindex.Tokenize(s, buf[:0], func(w []byte) {
		q.Terms = append(q.Terms, ix.ix.Lookup(w))
	})
	return q
}

// SyntaxError is a query line that is not a list of term ids.
type SyntaxError struct {
	Col int    // 1-based byte column of the offending token
	Msg string // what is wrong, quoting the token
}

// Error returns the message, prefixed with the column and a colon.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%d: %s", e.Col, e.Msg) }

// ParseIDs reads a query given as term ids: decimal integers separated by
// spaces or tabs (a trailing '\r' is ignored), appended to q's terms. An
// id too large for a term (2^32-1 and beyond) becomes NoTerm, which
// matches nothing; anything but digits and separators is a *SyntaxError.
func ParseIDs(q Query, line []byte) (Query, error) {
	for i := 0; i < len(line); {
		c := line[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			i++
			continue
		}
		j := i
		var v uint64
		for j < len(line) && line[j]-'0' < 10 {
			if v <= NoTerm {
				v = v*10 + uint64(line[j]-'0')
			}
			j++
		}
		end := j
		for end < len(line) && !isSep(line[end]) {
			end++
		}
		if j == i || end != j {
			tok := line[i:end]
			if len(tok) > 24 {
				tok = append(tok[:20:20], "..."...)
			}
			return q, &SyntaxError{Col: i + 1, Msg: fmt.Sprintf("%s is not a term id (a non-negative decimal integer)", strconv.Quote(string(tok)))}
		}
		q.Terms = append(q.Terms, uint32(min(v, NoTerm)))
		i = j
	}
	return q, nil
}

func isSep(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// Result of one query: Count is the number of matching documents; IDs the
// first Limit of them, increasing (nil when counting only).
type Result = query.Result

// Options configure a Searcher.
type Options struct {
	// Device is where batches run: "cpu", "gpu" or "auto" ("" means
	// auto: the GPU when one is present, the index fits on it and, when
	// Expected is given, it would answer those queries sooner than the
	// CPU, starting it included).
	Device string
	// Threads is the number of CPU goroutines a batch uses; 0 means
	// GOMAXPROCS.
	Threads int
	// GPUs are the GPUs, by ordinal, that the GPU engine spreads its
	// searches over; an ordinal listed twice gets two owners on that GPU,
	// which gains nothing but runs the splitting on one GPU. gpu.ParseGPUs
	// reads the forms of xsect's --gpus flag. The default value, nil,
	// means every GPU of the host where that pays: with Expected given,
	// the planner weighs the first GPU alone against every GPU (another
	// GPU's start costs about 0.13 s) and takes the faster (Explain says
	// which); without, every GPU, as a server's unbounded stream wants.
	//
	// On the GPU, each owner keeps the index resident and runs two
	// searches at once (see Searcher.Concurrency); a search of at least
	// 131,072 queries is cut into contiguous parts answered in parallel
	// on different owners, a smaller one runs on the owner with the
	// fewest queries in flight.
	GPUs []int
	// Expected is, optionally, the queries the searcher will answer (or a
	// sample of them, with ExpectedTotal the whole count), for the
	// planner's choice of device.
	Expected []Query
	// ExpectedTotal is the number of queries that Expected samples; a
	// value below len(Expected), 0 included, means len(Expected). Without
	// Expected it is not used.
	ExpectedTotal int
}

// ErrChanged is matched (errors.Is) by the error of a search on an index
// whose file changed while it was open.
var ErrChanged = invindex.ErrChanged

// ErrCannotRun is wrapped by NewSearcher's error when no engine can run
// on the device asked for (no GPU, an index larger than its memory).
var ErrCannotRun = engine.ErrCannotRun

// ErrUnavailable is wrapped, beside ErrCannotRun, by NewSearcher's error
// when the device asked for is one this machine lacks (Device "gpu"
// without a GPU or its driver): nothing about the index stops it.
var ErrUnavailable = engine.ErrUnavailable

// Searcher answers batches of queries on the engine its options choose;
// safe for concurrent use.
type Searcher struct {
	ix       *Index
	runner   query.Runner
	device   string
	workload *query.Workload
	cands    []query.Candidate
	chosen   query.Candidate // the engine that opened, or why none did
}

// NewSearcher prepares a searcher on ix: it picks the engine (Explain
// says why) and readies it (the GPU engine uploads the posting lists).
//
// A searcher that cannot run is still returned, beside the error, as the
// workloads' plans are, so that its Explain can say why each engine
// cannot; its Device is then "" and Search returns an error. A nil
// searcher never comes back.
func NewSearcher(ix *Index, opt Options) (*Searcher, error) {
	w := &query.Workload{Index: ix.ix, Threads: query.Threads(opt.Threads), GPUs: opt.GPUs, Sample: opt.Expected,
		Queries: max(opt.ExpectedTotal, len(opt.Expected))}
	cs, chosen, err := query.Plan(w, engine.Choice{Device: opt.Device})
	s := &Searcher{ix: ix, workload: w, cands: cs, chosen: chosen}
	if err != nil {
		return s, err
	}
	// The first engine that opens: with auto, a GPU that fails to open
	// (a broken driver) leaves the CPU.
	var errs []error
	for _, c := range cs {
		if c.Err != nil {
			continue
		}
		r, err := c.Engine.Open(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s on %s: %w", c.Engine.Name(), c.Engine.Kind(), err))
			continue
		}
		s.runner, s.device, s.chosen = r, c.Engine.Kind().String(), c
		return s, nil
	}
	s.chosen.Err = errors.Join(errs...)
	return s, s.chosen.Err
}

// Device returns "cpu" or "gpu": where batches run ("" for a searcher
// that cannot run).
func (s *Searcher) Device() string { return s.device }

// Concurrency returns how many searches run at once before another waits
// for one to end: on the GPU two per GPU owner (Options.GPUs), so that one
// search's work on the host overlaps another's on the device; 0 on the
// CPU, where no search waits for another (each spreads over Threads
// goroutines), and for a searcher that cannot run. A server feeds the
// searcher that many batches at once.
func (s *Searcher) Concurrency() int {
	if s.runner == nil {
		return 0
	}
	return s.runner.Concurrency()
}

// Explain writes the index's shape, every engine's estimate (or why it
// cannot run) and the choice.
func (s *Searcher) Explain(w io.Writer) error { return query.Explain(w, s.workload, s.cands, s.chosen) }

// Notes describes how the batches so far ran (on the GPU: the time in
// kernels and transfers), or "".
func (s *Searcher) Notes() string {
	if s.runner == nil {
		return ""
	}
	return s.runner.Notes()
}

// Search answers qs[i] into res[i] (len(res) == len(qs)). limit < 0 means
// all ids; countOnly skips ids (IDs nil). It reuses the memory of
// res[i].IDs, so a caller that keeps a result past the next Search on the
// same res must copy its IDs. It returns ctx.Err() soon after ctx is
// done, leaving res partly filled. On an index whose file changed since
// it was opened (see Open), it returns an error matching ErrChanged: the
// answers may have been read from the new bytes.
func (s *Searcher) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) (err error) {
	if s.runner == nil {
		return fmt.Errorf("query: Search on a searcher that could not be created")
	}
	defer s.ix.ix.Guard(&err)()
	if err = s.runner.Search(ctx, qs, limit, countOnly, res); err != nil {
		return err
	}
	// Once, after the batch: a change before it or during it shows
	// here, and costs one fstat a batch.
	return s.ix.ix.Changed()
}

// Close releases the searcher's resources (the GPU engine's device
// memory).
func (s *Searcher) Close() error {
	if s.runner == nil {
		return nil
	}
	err := s.runner.Close()
	s.runner = nil
	return err
}
