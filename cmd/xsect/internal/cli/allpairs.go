package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

func init() {
	register(&command{
		name:    "allpairs",
		summary: "report the pairs of sets that share at least N elements",
		usage:   "[flags] FILE [--with FILE2]",
		help: `
Computes |Si ∩ Sj| for every pair of sets of the collection FILE (i < j), or
with --with for every pair of a set i of FILE and a set j of FILE2, and prints
one line "i<TAB>j<TAB>overlap" for each pair with overlap >= --min-overlap
(default 1; 0 prints every pair). Set ids are 0-based positions in their
files. --count-only prints only the number of such pairs. Lines come in no
particular order, and are written as they are found, unless --sort, which
sorts any number of them within the memory budget (--memory): in runs kept
in memory while they fit, otherwise in temporary files under $TMPDIR.

A planner measures the collections (sizes, universe, density, the work of
every technique) and picks the technique and device with the lowest estimated
time; --explain prints its statistics, estimates and choice on standard
error, and the time the run took. --technique and --device force a choice.
Techniques: ` + strings.Join(allpairs.Techniques(), ", ") + `.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			jf := joinFlags(fs)
			minOverlap := fs.Int("min-overlap", 1, "report pairs sharing at least `N` elements")
			return func(env *Env, args []string) error {
				if *minOverlap < 0 {
					return usagef("--min-overlap %d is negative", *minOverlap)
				}
				return jf.run(env, args, allpairs.Query{MinOverlap: *minOverlap}, false)
			}
		},
	})
}

// joinOptions are the flags that allpairs and containment share.
type joinOptions struct {
	with      *string
	countOnly *bool
	sorted    *bool
	largest   *int
	device    *string
	gpus      *string
	technique *string
	explain   *bool
	threads   *int
	memory    *int64
	out       *string
	profile   *string
}

func joinFlags(fs *flag.FlagSet) *joinOptions {
	return &joinOptions{
		with:      fs.String("with", "", "join FILE with the collection `FILE2` (i indexes FILE, j FILE2) instead of with itself"),
		countOnly: fs.Bool("count-only", false, "print only the number of pairs"),
		sorted:    fs.Bool("sort", false, "print the pairs sorted by i, then j"),
		largest:   fs.Int("largest", 0, "keep only the `K` largest sets of each collection (ids stay the original ones)"),
		device:    fs.String("device", "auto", "device: cpu, gpu or auto"),
		gpus:      gpusFlag(fs),
		technique: fs.String("technique", "auto", "technique `NAME`, or auto: "+strings.Join(allpairs.Techniques(), ", ")),
		explain:   fs.Bool("explain", false, "print the statistics, every technique's estimate and the choice on standard error"),
		threads:   fs.Int("threads", 0, "CPU threads, up to 4096 (0: one per core)"),
		memory:    memoryFlag(fs),
		out:       fs.String("o", "-", "output `file` (- for standard output)"),
		profile:   cpuProfileFlag(fs),
	}
}

// run loads the collections, plans the join and writes its result. degree
// selects containment output: the degree of containment in the third
// column.
func (jo *joinOptions) run(env *Env, args []string, q allpairs.Query, degree bool) (err error) {
	if len(args) != 1 {
		return usagef("want one FILE, got %d arguments", len(args))
	}
	if *jo.largest < 0 {
		return usagef("--largest %d is negative", *jo.largest)
	}
	if err := checkThreads(*jo.threads); err != nil {
		return err
	}
	gpus, err := parseGPUList(*jo.gpus)
	if err != nil {
		return err
	}
	if prewarm(*jo.device, gpus, args[0], *jo.with) && (*jo.technique == "auto" || strings.HasPrefix(*jo.technique, "mm")) {
		// cuBLAS, which the matrix products need, loads while the
		// contexts are made: after the driver's start, which it slows
		// when both load at once.
		go func() {
			if gpurt.Available() == nil {
				gpurt.BLASLibrary()
			}
		}()
	}
	b, err := newBudget(*jo.memory)
	if err != nil {
		return err
	}
	if err := checkProfileOutput(*jo.profile, *jo.out); err != nil {
		return err
	}
	w, err := openOutput(env, *jo.out)
	if err != nil {
		return err
	}
	defer w.abort()
	finish, perr := startCPUProfile(env, *jo.profile)
	if perr != nil {
		return perr
	}
	defer finish(&err)
	r, err := loadReadOnly(env, args[0], b)
	if err != nil {
		return err
	}
	var s *sets.Collection
	if *jo.with != "" {
		if s, err = loadReadOnly(env, *jo.with, b.left(memoryOf(r))); err != nil {
			return err
		}
	}
	env.mark("read", 0)
	// The GPUs' ordinals are checked beside the preparation: the driver
	// has been loading beside the reading.
	checked := checkGPUsBeside(*jo.gpus, *jo.device, gpus)
	// The plan gets what the collections leave, less what the output
	// keeps: a sort's least buffers (a sort then takes what the plan does
	// not need), or the queue of formatted pairs.
	left := b.left(memoryOf(r) + memoryOf(s))
	planBudget, queue := outputBudget(left, *jo.countOnly, *jo.sorted, *jo.threads)
	bar := newJoinBar()
	opt := allpairs.Options{
		Device:    *jo.device,
		Technique: *jo.technique,
		Threads:   *jo.threads,
		Largest:   *jo.largest,
		Memory:    planBudget.Bytes,
		Progress:  bar.update,
		GPUs:      gpus,
		CountOnly: *jo.countOnly,
	}
	plan, err := allpairs.NewPlan(r, s, q, opt)
	env.mark("preparation", 0)
	if err := checked(); err != nil {
		return err
	}
	if plan != nil && *jo.explain {
		if err := plan.Explain(env.Stderr); err != nil {
			return err
		}
		if err == nil {
			total, parts := peakMemory("the collections", memoryOf(r)+memoryOf(s), plan.Memory(), queue)
			fmt.Fprintf(env.Stderr, "memory       %s predicted at the peak (%s), of a budget of %s\n", total, parts, b)
		}
	}
	if err != nil {
		return planError(err, *jo.technique, *jo.device, planBudget)
	}
	start := time.Now()
	var n int64
	switch {
	case *jo.countOnly:
		n, err = plan.Count(context.Background())
		err = writeCount(w, n, err)
	case *jo.sorted:
		join := func(add func([]allpairs.Pair) error) error { return plan.Join(context.Background(), add) }
		n, err = sortJoin(w, left.left(plan.Memory()).Bytes, join, bar.done, func(b []byte, ps []allpairs.Pair) []byte {
			return allpairs.AppendLines(b, ps, r, s, degree)
		})
	default:
		// Formatted by the workers that find them, written while they
		// come.
		out := newStreamOut(w, queue, func(b []byte, ps []allpairs.Pair) []byte {
			return allpairs.AppendLines(b, ps, r, s, degree)
		})
		err = plan.Join(context.Background(), out.add)
		err = out.close(err)
		n = out.pairs.Load()
	}
	bar.done()
	return finishJoin(env, w, plan, *jo.explain, start, n, err)
}

// ranPlan is what finishJoin says of a plan that ran.
type ranPlan interface {
	Technique() string
	Device() string
	Prepared() time.Duration
	Estimate() (time.Duration, int64)
	Notes() string
}

// finishJoin ends a join that ran from start and wrote n pairs to w (err:
// how the run and the writing went): it commits the output and, with
// --explain, says on standard error what ran, for how long, and the
// engine's notes.
func finishJoin(env *Env, w *outputFile, plan ranPlan, explain bool, start time.Time, n int64, err error) error {
	if err != nil {
		return err
	}
	estimate, _ := plan.Estimate()
	env.mark("run", estimate)
	if err := w.commit(); err != nil {
		return err
	}
	env.mark("output", 0)
	if explain {
		fmt.Fprintf(env.Stderr, "ran          %s on %s in %s (%d pairs), after %s of preparation\n",
			plan.Technique(), plan.Device(), time.Since(start).Round(time.Millisecond), n, plan.Prepared().Round(time.Millisecond))
		io.WriteString(env.Stderr, plan.Notes())
		explainProcess(env)
	}
	return nil
}

// writeCount writes the number of pairs n of a run that ended with err,
// unless err is not nil.
func writeCount(w io.Writer, n int64, err error) error {
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, strconv.FormatInt(n, 10)+"\n")
	return err
}

// joinBar shows a join's progress on a terminal: one stage, in pairs.
type joinBar struct{ stageBars }

func newJoinBar() *joinBar { return &joinBar{stageBars{unit: "pairs"}} }

func (b *joinBar) update(done, total int64) { b.stageBars.update("pairs", done, total) }
