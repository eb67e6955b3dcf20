package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"

	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

func init() {
	register(&command{
		name:    "pairs",
		summary: "mine frequent pairs of items (BATMAP, Apriori, Eclat, FP-growth)",
		usage:   "--min-support S [flags] FILE | --gen-items N [flags]",
		help: `
FILE holds transactions, one a line (the FIMI format): the integers of a line
are its items. Prints one line "a<TAB>b<TAB>support" for every pair of items
a < b that occur together in at least S transactions. S is an absolute count,
or a fraction of the transactions when below 1 ("0.001", or "0.1%"), rounded
up. Lines come in no particular order unless --sort.

--engine picks the miner: batmap (one BATMAP per frequent item, all pairs
compared entry by entry), apriori (pair counters, row by row), eclat (tidlist
intersections with SIMD kernels), fpgrowth (FP-tree, restricted to pairs), or
auto, which predicts every engine's time from the data's shape and takes the
fastest; --explain shows the prediction on standard error.

Instead of FILE, --gen-items N generates the instance of the BATMAP paper: each
of N items in each transaction with probability --gen-p, transactions added
until --gen-occurrences items in all. With --gen-out FILE it is written there
(the FIMI format) and nothing is mined.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			support := fs.String("min-support", "", "minimum support `S`: a count, or a fraction of the transactions below 1")
			engine := fs.String("engine", "auto", "engine `NAME`: auto, "+joinNames(pairs.EngineNames()))
			device := fs.String("device", "auto", "device: cpu, gpu or auto")
			explain := fs.Bool("explain", false, "print the plan (data shape, every engine's estimate, the choice) on standard error")
			sorted := fs.Bool("sort", false, "print the pairs sorted by a, then b")
			count := fs.Bool("count", false, "print only the number of frequent pairs")
			threads := fs.Int("threads", 0, "CPU threads (0: all)")
			out := fs.String("o", "-", "output `file` (- for standard output)")
			genItems := fs.Int("gen-items", 0, "generate the BATMAP paper's instance with `N` items instead of reading FILE")
			genP := fs.Float64("gen-p", 0.05, "generated instance: probability of each item in each transaction")
			genOcc := fs.Float64("gen-occurrences", 1e7, "generated instance: item occurrences in all")
			genSeed := fs.Uint64("gen-seed", 1, "generated instance: random seed")
			genOut := fs.String("gen-out", "", "write the generated instance to `FILE` and stop")
			cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
			return func(env *Env, args []string) error {
				if *cpuProfile != "" {
					f, err := os.Create(*cpuProfile)
					if err != nil {
						return err
					}
					defer f.Close()
					if err := pprof.StartCPUProfile(f); err != nil {
						return err
					}
					defer pprof.StopCPUProfile()
				}
				tx, err := pairsInput(args, *genItems, *genP, *genOcc, *genSeed)
				if err != nil {
					return err
				}
				if *genOut != "" {
					if *genItems == 0 {
						return usagef("--gen-out needs --gen-items")
					}
					w, commit, abort, err := createOutput(env, *genOut)
					if err != nil {
						return err
					}
					if err := setio.WriteText(w, tx); err != nil {
						abort()
						return fmt.Errorf("writing %s: %w", *genOut, err)
					}
					return commit()
				}
				if *support == "" {
					return usagef("--min-support is required")
				}
				s, err := pairs.ParseSupport(*support, tx.Len())
				if err != nil {
					return usageError{err.Error()}
				}
				prog := &stageBars{}
				defer prog.done()
				plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: s, Engine: *engine, Device: *device, Threads: *threads, Progress: prog.update})
				if err != nil {
					if errors.Is(err, pairs.ErrCannotRun) {
						return err
					}
					return usageError{err.Error()}
				}
				if *explain {
					prog.done()
					fmt.Fprint(env.Stderr, plan.Explain())
				}
				return runPairs(env, plan, *out, *sorted, *count, prog)
			}
		},
	})
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// pairsInput loads FILE, or generates the instance the --gen flags ask for.
func pairsInput(args []string, n int, p, occ float64, seed uint64) (*sets.Collection, error) {
	if n != 0 {
		if len(args) != 0 {
			return nil, usagef("FILE and --gen-items are exclusive")
		}
		if occ < 0 || occ > 1<<36 || occ != float64(int64(occ)) {
			return nil, usagef("--gen-occurrences %v: want an integer in [0, 2^36]", occ)
		}
		tx, err := pairs.GenerateBernoulli(n, p, int64(occ), seed)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return tx, nil
	}
	if len(args) != 1 {
		return nil, usagef("want one FILE of transactions, got %d arguments", len(args))
	}
	tx, _, err := loadCollection(args[0])
	return tx, err
}

// runPairs mines the pairs and writes them. Workers format their own
// batches into chunks; nothing is written before the run has succeeded.
func runPairs(env *Env, plan *pairs.Plan, path string, sorted, count bool, prog *stageBars) error {
	ctx := context.Background()
	var mu sync.Mutex
	var chunks [][]byte
	var all []pairs.Pair
	n, err := plan.Run(ctx, func(ps []pairs.Pair) error {
		switch {
		case count:
		case sorted:
			mu.Lock()
			all = append(all, ps...)
			mu.Unlock()
		default:
			b := formatPairs(make([]byte, 0, 20*len(ps)), ps)
			mu.Lock()
			chunks = append(chunks, b)
			mu.Unlock()
		}
		return nil
	})
	prog.done()
	if err != nil {
		return err
	}
	if sorted && !count {
		pairs.SortPairs(all)
		chunks = formatParallel(all)
	}
	w, commit, abort, err := createOutput(env, path)
	if err != nil {
		return err
	}
	if count {
		_, err = io.WriteString(w, strconv.FormatInt(n, 10)+"\n")
	}
	for _, c := range chunks {
		if err != nil {
			break
		}
		_, err = w.Write(c)
	}
	if err != nil {
		abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return commit()
}

func formatPairs(b []byte, ps []pairs.Pair) []byte {
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.A), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.B), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.Support), 10)
		b = append(b, '\n')
	}
	return b
}

// formatParallel formats sorted pairs in order, in pieces on all cores.
func formatParallel(ps []pairs.Pair) [][]byte {
	const piece = 1 << 16
	chunks := make([][]byte, (len(ps)+piece-1)/piece)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range chunks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			part := ps[i*piece : min((i+1)*piece, len(ps))]
			chunks[i] = formatPairs(make([]byte, 0, 20*len(part)), part)
			<-sem
		}()
	}
	wg.Wait()
	return chunks
}

// stageBars shows one progress bar per stage of a run.
// Reports may come from several goroutines out of order; the bar follows
// the largest.
type stageBars struct {
	mu    sync.Mutex
	stage string
	shown int64
	bar   *progress.Bar
}

func (s *stageBars) update(stage string, done, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stage != s.stage {
		s.bar.Done()
		s.stage, s.shown = stage, 0
		s.bar = progress.Start(stage, "", total)
	}
	if done > s.shown {
		s.bar.Add(done - s.shown)
		s.shown = done
	}
}

func (s *stageBars) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bar.Done()
	s.bar, s.stage, s.shown = nil, "", 0
}
