package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/setio"
)

func init() {
	register(&command{
		name:    "index",
		summary: "build an inverted index for 'xsect query' (index build), or describe one (index info)",
		usage:   "build DOCS -o INDEX [--text] | info INDEX",
		help: `
index build reads DOCS, one document per line, its id its 0-based line number,
and writes the inverted index of the documents to INDEX: for every term the
increasing ids of the documents that hold it. By default a line is a set of
term ids (the sets format, text or binary, optionally gzip-compressed, as every
xsect command reads collections); with --text it is raw text, each maximal run
of ASCII letters and digits a word, lowercased, and the index keeps the
vocabulary (term ids are then the words' alphabetical ranks).

The index file has a format version and checksums; 'xsect query' maps it into
memory and verifies it before use (docs/QUERY.md); an INDEX of - is read from
standard input into memory. index info verifies an index and prints its size.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			out := fs.String("o", "", "write the index to `INDEX` (required for build)")
			text := fs.Bool("text", false, "DOCS is raw text, one document per line; keep the vocabulary")
			dense := fs.Int("dense-ratio", 0, "give a bitmap to every term held by at least 1/`R` of the documents (0: 32; -1: none)")
			memory := memoryFlag(fs)
			return func(env *Env, args []string) error {
				if len(args) == 0 {
					return usagef("want a subcommand: build or info")
				}
				switch args[0] {
				case "build":
					if len(args) != 2 {
						return usagef("index build: want one DOCS file, got %d arguments", len(args)-1)
					}
					if !given(fs, "o") {
						return usagef("index build: -o INDEX is required")
					}
					if *dense < -1 {
						return usagef("--dense-ratio %d: want a positive ratio, 0 for the default or -1 for none", *dense)
					}
					b, err := newBudget(*memory)
					if err != nil {
						return err
					}
					return buildIndex(env, args[1], *out, *text, query.BuildOptions{DenseRatio: *dense}, b)
				case "info":
					if len(args) != 2 {
						return usagef("index info: want one INDEX file, got %d arguments", len(args)-1)
					}
					return indexInfo(env, args[1])
				}
				return usagef("unknown subcommand %q: want build or info", args[0])
			}
		},
	})
	register(&command{
		name:    "query",
		summary: "answer conjunctive queries over an index from 'xsect index build'",
		usage:   "INDEX QUERIES [--count] [--limit N] [--device cpu|gpu|auto] [--gpus LIST] [--threads N] [--explain] [-o FILE]",
		help: `
Answers each line of QUERIES, a conjunctive (AND) query: the documents that
hold every one of its terms. A line holds term ids (decimal integers separated
by spaces or tabs) or, for an index built with --text, text (tokenised like the
documents). Duplicate terms are ignored; a term the index does not hold (an id
beyond its terms, an unknown word) matches nothing; an empty line matches
nothing. INDEX or QUERIES (not both) may be -, standard input.

Prints one line per query, in input order: the ids of the matching documents
in increasing order separated by single spaces (the first N with --limit N),
an empty line when none match; with --count the number of matching documents.

Terms are intersected shortest list first, stopping when nothing is left, on
every core (--threads) or on the GPU (--device gpu: the posting lists resident
on the device, a group of threads per slice of a query's shortest list), on
every GPU of --gpus: the queries are cut into a part per GPU where each part
holds at least 65,536 of them.
--device auto takes the GPU when one is present and the planner expects it to
finish sooner, starting it included; --explain prints the estimates on
standard error. --repeat runs the queries that many times (the output is
written once) and --timings prints the time of loading and of each pass, for
benchmarks.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			count := fs.Bool("count", false, "print the number of matching documents instead of their ids")
			limit := fs.Int("limit", -1, "print at most the first `N` ids of each query (-1: all)")
			device := fs.String("device", "auto", "where to run: cpu, gpu or auto")
			gpus := gpusFlag(fs)
			threads := fs.Int("threads", 0, "CPU threads, up to 4096 (0: one per core)")
			explain := fs.Bool("explain", false, "print the index, every engine's estimate and the choice on standard error")
			repeat := fs.Int("repeat", 1, "answer the queries `N` times (benchmarks; the output is written once)")
			timings := fs.Bool("timings", false, "print the time of loading, planning and each pass on standard error")
			out := fs.String("o", "-", "output `file` (- for standard output)")
			return func(env *Env, args []string) error {
				if len(args) != 2 {
					return usagef("want INDEX and QUERIES, got %d arguments", len(args))
				}
				if *limit < -1 {
					return usagef("--limit %d: want N >= 0, or -1 for all", *limit)
				}
				switch *device {
				case "cpu", "gpu", "auto":
				default:
					return usagef("--device %q: want cpu, gpu or auto", *device)
				}
				if err := checkThreads(*threads); err != nil {
					return err
				}
				gpuList, err := parseGPUs(*gpus, *device)
				if err != nil {
					return err
				}
				if *repeat < 1 || *repeat > 1<<20 {
					return usagef("--repeat %d: want 1 to 2^20", *repeat)
				}
				w, err := openOutput(env, *out)
				if err != nil {
					return err
				}
				defer w.abort()
				q := &queryRun{env: env, count: *count, limit: *limit, device: *device, gpus: gpuList, threads: *threads,
					explain: *explain, repeat: *repeat, timings: *timings}
				if err := q.run(args[0], args[1], w); err != nil {
					return err
				}
				return w.commit()
			}
		},
	})
}

// buildIndex reads the documents and writes their index through the safe
// output path.
func buildIndex(env *Env, docsPath, outPath string, text bool, opt query.BuildOptions, b budget) error {
	w, err := openOutput(env, outPath)
	if err != nil {
		return err
	}
	defer w.abort()
	var ix *query.Index
	if text {
		in, err := openInput(env, docsPath)
		if err != nil {
			return err
		}
		defer in.Close()
		bar := progress.Start("reading "+in.name, "B", max(in.size, 0))
		opt.Memory = b.Bytes
		ix, err = query.BuildText(bar.Reader(in), in.name, opt)
		bar.Done()
		if err != nil {
			return buildError(err, b)
		}
	} else {
		docs, _, err := loadCollection(env, docsPath, b)
		if err != nil {
			return err
		}
		opt.Memory = b.left(memoryOf(docs)).Bytes
		if ix, err = query.Build(docs, opt); err != nil {
			var me *query.MemoryError
			if errors.As(err, &me) {
				return buildError(fmt.Errorf("%s: %w", docsPath, err), b.left(memoryOf(docs)))
			}
			return inputError{fmt.Errorf("%s: %w", docsPath, err)}
		}
	}
	if _, err := ix.WriteTo(w); err != nil {
		return err
	}
	return w.commit()
}

// buildError turns an index over the budget into a memoryError.
func buildError(err error, b budget) error {
	var me *query.MemoryError
	if errors.As(err, &me) {
		return memoryError{me.What, me.Need, b}
	}
	return err
}

// indexInfo verifies an index and describes it.
func indexInfo(env *Env, path string) error {
	ix, err := openIndex(env, path)
	if err != nil {
		return err
	}
	defer ix.Close()
	out := output(env)
	name := path
	if path == "-" {
		name = stdinName
	}
	fmt.Fprintf(out, "%s: %s\n", name, ix)
	return out.Flush()
}

// openIndex opens an index; a file that cannot be opened is bad input.
// "-" is standard input, read into memory as every command reads "-":
// only a file can be mapped.
func openIndex(env *Env, path string) (*query.Index, error) {
	if path == "-" {
		in, err := openInput(env, path)
		if err != nil {
			return nil, err
		}
		defer in.Close()
		ix, err := query.Read(in, in.name, in.size)
		if err != nil && !errors.Is(err, setio.ErrBadInput) {
			return nil, inputError{err} // named already
		}
		return ix, err
	}
	ix, err := query.Open(path)
	if err != nil {
		if errors.Is(err, setio.ErrBadInput) {
			return nil, err
		}
		return nil, badInputFile(path, err)
	}
	return ix, nil
}

// queryRun is one run of the query command.
type queryRun struct {
	env             *Env
	count           bool
	limit           int
	device          string
	gpus            []int
	threads         int
	explain         bool
	repeat          int
	timings         bool
	terms           []uint32 // every query's terms, in order
	starts          []int    // query i is terms[starts[i]:starts[i+1]]
	qs              []query.Query
	loaded, planned time.Duration
}

// maxBatch bounds the queries answered at once; maxBatchIDs the ids a
// batch may return (the sum of its queries' shortest lists bounds them),
// so that the output's memory stays bounded whatever the queries. A
// batch of 2^20 queries (32 MiB of results, less than the queries take)
// lets the GPU engine overlap its device batches of 64Ki queries.
const (
	maxBatch    = 1 << 20
	maxBatchIDs = 1 << 24
)

func (q *queryRun) run(indexPath, queriesPath string, w io.Writer) error {
	start := time.Now()
	ix, err := openIndex(q.env, indexPath)
	if err != nil {
		return err
	}
	defer ix.Close()
	if err := q.readQueries(ix, queriesPath); err != nil {
		return err
	}
	q.loaded = time.Since(start)
	start = time.Now()
	opt := query.Options{Device: q.device, Threads: q.threads, GPUs: q.gpus, ExpectedTotal: len(q.qs) * q.repeat}
	opt.Expected = querySample(q.qs, 4096)
	s, err := query.NewSearcher(ix, opt)
	if s != nil && q.explain {
		if err := s.Explain(q.env.Stderr); err != nil {
			return err
		}
	}
	if err != nil {
		if errors.Is(err, query.ErrCannotRun) {
			return err
		}
		return usageError{err.Error()}
	}
	defer s.Close()
	q.planned = time.Since(start)
	passes := make([]time.Duration, q.repeat)
	res := make([]query.Result, min(len(q.qs), maxBatch))
	var line []byte
	ctx := context.Background()
	for pass := range q.repeat {
		last := pass == q.repeat-1
		for lo := 0; lo < len(q.qs); {
			hi := q.batchEnd(ix, lo)
			t := time.Now()
			if err := s.Search(ctx, q.qs[lo:hi], q.limit, q.count, res[:hi-lo]); err != nil {
				return err
			}
			passes[pass] += time.Since(t)
			if last {
				for _, r := range res[:hi-lo] {
					line = formatQueryResult(line[:0], r, q.count)
					if _, err := w.Write(line); err != nil {
						return err
					}
				}
			}
			lo = hi
		}
	}
	if q.timings {
		q.printTimings(s, passes)
	}
	if q.explain {
		fmt.Fprintf(q.env.Stderr, "ran on %s: %d queries, %d passes\n", s.Device(), len(q.qs), q.repeat)
		io.WriteString(q.env.Stderr, s.Notes())
		explainProcess(q.env)
	}
	return nil
}

// batchEnd returns the end of the batch starting at lo.
func (q *queryRun) batchEnd(ix *query.Index, lo int) int {
	hi := min(lo+maxBatch, len(q.qs))
	if q.count {
		return hi
	}
	ids := 0
	for i := lo; i < hi; i++ {
		shortest := -1
		for _, t := range q.qs[i].Terms {
			if n := len(ix.List(t)); shortest < 0 || n < shortest {
				shortest = n
			}
		}
		if q.limit >= 0 {
			shortest = min(shortest, q.limit)
		}
		ids += max(shortest, 0)
		if ids > maxBatchIDs && i > lo {
			return i
		}
	}
	return hi
}

func formatQueryResult(b []byte, r query.Result, count bool) []byte {
	if count {
		b = strconv.AppendInt(b, int64(r.Count), 10)
		return append(b, '\n')
	}
	for i, id := range r.IDs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return append(b, '\n')
}

// querySample returns up to n queries spread evenly over qs.
func querySample(qs []query.Query, n int) []query.Query {
	if len(qs) <= n {
		return qs
	}
	out := make([]query.Query, n)
	for i := range out {
		out[i] = qs[i*len(qs)/n]
	}
	return out
}

// readQueries parses the query file: term ids, or text on an index with
// a vocabulary. A bad line is an error naming the file, line and column.
func (q *queryRun) readQueries(ix *query.Index, path string) error {
	q.starts = append(q.starts[:0], 0)
	text := ix.HasVocabulary()
	err := readQueryLines(q.env, path, func(name string, lineNo int, line []byte) error {
		qq := query.Query{Terms: q.terms[len(q.terms):len(q.terms)]}
		if text {
			qq = ix.AppendText(qq, line)
		} else {
			var err error
			if qq, err = parseQueryIDs(qq, line, name, lineNo); err != nil {
				return err
			}
		}
		q.terms = append(q.terms, qq.Terms...)
		q.starts = append(q.starts, len(q.terms))
		return nil
	})
	if err != nil {
		return err
	}
	q.qs = make([]query.Query, len(q.starts)-1)
	// Each query's slice keeps the array's capacity: the GPU engine then
	// sees the terms of consecutive queries as one run and uploads them
	// in one copy. Nothing appends to them.
	for i := range q.qs {
		q.qs[i].Terms = q.terms[q.starts[i]:q.starts[i+1]]
	}
	return nil
}

// printTimings writes the load and plan times and each pass's, with the
// median, minimum and maximum rate.
func (q *queryRun) printTimings(s *query.Searcher, passes []time.Duration) {
	sorted := slices.Clone(passes)
	slices.Sort(sorted)
	var total time.Duration
	for _, p := range passes {
		total += p
	}
	n := float64(len(q.qs))
	qps := func(d time.Duration) float64 { return n / max(d.Seconds(), 1e-9) }
	fmt.Fprintf(q.env.Stderr, "timings: load %.1f ms, plan %.1f ms, %d queries on %s, %d passes: total %.1f ms, %.0f queries/s; pass median %.0f, min %.0f, max %.0f queries/s\n",
		queryMillis(q.loaded), queryMillis(q.planned), len(q.qs), s.Device(), len(passes), queryMillis(total), n*float64(len(passes))/max(total.Seconds(), 1e-9),
		qps(sorted[len(sorted)/2]), qps(sorted[len(sorted)-1]), qps(sorted[0]))
}

func queryMillis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
