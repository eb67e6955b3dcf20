package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/flagalias"
	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
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
up. Lines come in no particular order, and are written as they are found,
unless --sort, which sorts any number of them within the memory budget
(--memory), in temporary files under $TMPDIR if need be.

--technique picks the miner: batmap (one BATMAP per frequent item, all pairs
compared entry by entry, on the CPU or the GPU), bitmap (tidlists as bitmaps,
all pairs by AND and popcount), apriori (pair counters, row by row), eclat
(tidlist intersections with SIMD kernels), fpgrowth (FP-tree, restricted to
pairs), or auto, which predicts every technique's time from the data's shape
and takes the fastest; --explain shows the prediction on standard error.
--engine is the old name of --technique.

Instead of FILE, --gen-items N generates the instance of the BATMAP paper: each
of N items in each transaction with probability --gen-p, transactions added
until --gen-occurrences items in all. With --gen-out FILE it is written there
(the FIMI format) and nothing is mined.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			support := fs.String("min-support", "", "minimum support `S`: a count, or a fraction of the transactions below 1")
			technique := fs.String("technique", "auto", "technique `NAME`: auto, "+joinNames(pairs.Techniques()))
			flagalias.Declare(fs, "technique", "engine")
			device := fs.String("device", "auto", "device: cpu, gpu or auto")
			gpusValue := gpusFlag(fs)
			explain := fs.Bool("explain", false, "print the plan (data shape, every technique's estimate, the choice) on standard error")
			sorted := fs.Bool("sort", false, "print the pairs sorted by a, then b")
			count := fs.Bool("count", false, "print only the number of frequent pairs")
			threads := fs.Int("threads", 0, "CPU threads, up to 4096 (0: one per core)")
			out := fs.String("o", "-", "output `file` (- for standard output)")
			genItems := fs.Int("gen-items", 0, "generate the BATMAP paper's instance with `N` items instead of reading FILE")
			genP := fs.Float64("gen-p", 0.05, "generated instance: probability of each item in each transaction")
			genOcc := fs.Float64("gen-occurrences", 1e7, "generated instance: item occurrences in all")
			genSeed := fs.Uint64("gen-seed", 1, "generated instance: random seed")
			genOut := fs.String("gen-out", "", "write the generated instance to `FILE` and stop")
			cpuProfile := cpuProfileFlag(fs)
			timings := fs.Bool("timings", false, "print the time of each stage of the run on standard error")
			memory := memoryFlag(fs)
			return func(env *Env, args []string) (err error) {
				start := time.Now()
				// What needs no input is checked before anything is
				// opened or read.
				switch {
				case *genItems != 0 && len(args) != 0:
					return usagef("FILE and --gen-items are exclusive")
				case *genItems == 0 && len(args) != 1:
					return usagef("want one FILE of transactions, got %d arguments", len(args))
				case *genOut != "" && *genItems == 0:
					return usagef("--gen-out needs --gen-items")
				case *genOut == "" && *support == "":
					return usagef("--min-support is required")
				case *genOut != "" && given(fs, "o"):
					return usagef("-o and --gen-out are exclusive: --gen-out writes the instance and mines nothing")
				}
				if err := checkThreads(*threads); err != nil {
					return err
				}
				gpus, err := parseGPUList(*gpusValue)
				if err != nil {
					return err
				}
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				outPath := *out
				if *genOut != "" {
					outPath = *genOut
				}
				if err := checkProfileOutput(*cpuProfile, outPath); err != nil {
					return err
				}
				size := inputSize(args...)
				if *genItems != 0 {
					// A generated instance: as large as its occurrences
					// would be in a file of 32-bit items.
					size = int64(*genOcc) * 4
				}
				if *genOut == "" && (*technique == "auto" || *technique == "batmap") && worthPrewarmSize(*device, size) {
					// Open the GPU (driver, context, kernels) while the
					// input is read or generated.
					prewarmGPUs(gpus, size)
				}
				w, err := openOutput(env, outPath)
				if err != nil {
					return err
				}
				defer w.abort()
				finish, perr := startCPUProfile(env, *cpuProfile)
				if perr != nil {
					return perr
				}
				defer finish(&err)
				tx, err := pairsInput(env, args, *genItems, *genP, *genOcc, *genSeed, b)
				if err != nil {
					return err
				}
				env.mark("read", 0)
				// Checked beside the preparation, the driver having
				// loaded beside the reading.
				checked := checkGPUsBeside(*gpusValue, *device, gpus)
				if *genOut != "" {
					if err := checked(); err != nil {
						return err
					}
					if err := setio.WriteText(w, tx); err != nil {
						return err
					}
					return w.commit()
				}
				s, err := pairs.ParseSupport(*support, tx.Len())
				if err != nil {
					return usageError{err.Error()}
				}
				prog := &stageBars{}
				if *timings {
					prog.times = []stageTime{{"read", start}, {"plan", time.Now()}}
					defer func() {
						fmt.Fprintln(env.Stderr, prog.timings())
					}()
				}
				defer prog.done()
				// The plan gets what the transactions leave, less what the
				// output keeps: a sort's least buffers, or the queue of
				// formatted pairs.
				left := b.left(memoryOf(tx))
				planBudget, queue := outputBudget(left, *count, *sorted, *threads)
				plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: s, Technique: *technique, Device: *device, Threads: *threads,
					Memory: planBudget.Bytes, Progress: prog.update, CountOnly: *count, GPUs: gpus})
				env.mark("preparation", 0)
				if err := checked(); err != nil {
					return err
				}
				if plan != nil && *explain {
					prog.done()
					if err := plan.Explain(env.Stderr); err != nil {
						return err
					}
					if err == nil {
						total, parts := peakMemory("the transactions", memoryOf(tx), plan.Memory(), queue)
						fmt.Fprintf(env.Stderr, "predicted memory: %s at the peak (%s), of a budget of %s\n", total, parts, b)
					}
				}
				if err != nil {
					return planError(err, *technique, *device, planBudget)
				}
				err = runPairs(plan, w, *sorted, *count, prog, queue, left.left(plan.Memory()).Bytes)
				estimate, _ := plan.Estimate()
				env.mark("run", estimate)
				if *explain {
					defer explainProcess(env)
				}
				if *timings || *explain {
					// What the engine said: with a GPU, the GPUs used
					// and each one's share.
					defer io.WriteString(env.Stderr, plan.Notes())
				}
				return err
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

// pairsInput loads FILE, or generates the instance the --gen flags ask for,
// within the budget b.
func pairsInput(env *Env, args []string, n int, p, occ float64, seed uint64, b budget) (*sets.Collection, error) {
	if n != 0 {
		if occ < 0 || occ > 1<<36 || occ != float64(int64(occ)) {
			return nil, usagef("--gen-occurrences %v: want an integer in [0, 2^36]", occ)
		}
		// The items, and the offsets of the transactions (grown by
		// doubling: twice their number).
		if n > 0 && p > 0 && p <= 1 {
			items := occ + float64(n)*p + 64
			need := 4*items + 16*(items/(float64(n)*p)+2)
			if err := b.check(fmt.Sprintf("an instance of %.0f item occurrences", occ), int64(min(need, 1<<62))); err != nil {
				return nil, err
			}
		}
		tx, err := synth.GenerateBernoulli(n, p, int64(occ), seed)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return tx, nil
	}
	tx, _, err := loadCollection(env, args[0], b)
	return tx, err
}

// runPairs mines the pairs and writes them to w, which it commits.
// Unsorted pairs are formatted by the workers that find them and written
// while they come, through a queue of queue chunks; sorted ones go
// through a pairsort.Sorter of sortBudget bytes. A file is written under a
// temporary name renamed at the end, so a failed run leaves no file.
func runPairs(plan *pairs.Plan, w *outputFile, sorted, count bool, prog *stageBars, queue int, sortBudget int64) error {
	ctx := context.Background()
	var err error
	switch {
	case count:
		var n int64
		n, err = plan.Count(ctx)
		prog.done()
		prog.mark("write")
		err = writeCount(w, n, err)
	case sorted:
		join := func(add func([]sets.Pair) error) error { return plan.Join(ctx, add) }
		_, err = sortJoin(w, sortBudget, join, func() { prog.done(); prog.mark("write") }, pairs.AppendLines)
	default:
		out := newStreamOut(w, queue, pairs.AppendLines)
		err = plan.Join(ctx, out.add)
		prog.done()
		prog.mark("write")
		err = out.finish(err)
		prog.mark("end")
		return err
	}
	if err == nil {
		err = w.commit()
	}
	prog.mark("end")
	return err
}

// stageBars shows one progress bar per stage of a run.
// Reports may come from several goroutines out of order; the bar follows
// the largest.
type stageBars struct {
	unit  string // of the counts shown
	mu    sync.Mutex
	stage string
	shown int64
	bar   *progress.Bar
	times []stageTime // with --timings: when each stage began
}

// stageTime is the moment a stage of the run began.
type stageTime struct {
	stage string
	at    time.Time
}

// mark notes that a stage begins (for --timings).
func (s *stageBars) mark(stage string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.times != nil {
		s.times = append(s.times, stageTime{stage, time.Now()})
	}
}

// timings describes the stages' durations in one line.
func (s *stageBars) timings() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString("timings:")
	for i := 1; i < len(s.times); i++ {
		fmt.Fprintf(&b, " %s %.3f s,", s.times[i-1].stage, s.times[i].at.Sub(s.times[i-1].at).Seconds())
	}
	fmt.Fprintf(&b, " total %.3f s", time.Since(s.times[0].at).Seconds())
	return b.String()
}

func (s *stageBars) update(stage string, done, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stage != s.stage && s.times != nil {
		s.times = append(s.times, stageTime{stage, time.Now()})
	}
	if stage != s.stage {
		s.bar.Done()
		s.stage, s.shown = stage, 0
		s.bar = progress.Start(stage, s.unit, total)
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
