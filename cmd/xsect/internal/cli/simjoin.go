package cli

import (
	"context"
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/flagalias"
	isimjoin "github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

func init() {
	register(&command{
		name:    "simjoin",
		summary: "exact set similarity join: pairs whose Jaccard, Cosine, Dice or overlap reaches T",
		usage:   "--threshold T [flags] FILE [--with FILE2]",
		help: `
Finds every pair of similar sets of the collection FILE (i < j), or with --with
every similar pair of a set i of FILE and a set j of FILE2, and prints one line
"i<TAB>j<TAB>similarity" for each. Set ids are 0-based positions in their
files. For sets r and s sharing c elements, --measure jaccard is c / |r ∪ s|,
cosine c / sqrt(|r|·|s|), dice 2c / (|r| + |s|), all compared with a
--threshold T in (0, 1]; overlap is c, with T a positive integer. The
similarity is printed with at least 6 significant digits (the overlap as an
integer). --count-only prints only the number of pairs. Lines come in no
particular order, and are written as they are found, unless --sort, which
sorts any number of them within the memory budget (--memory), as allpairs
does: in runs kept in memory while they fit, otherwise in temporary files
under $TMPDIR.

T is exact: "0.9" is 9/10 (a fraction such as "2/3" works too), and every
comparison with it is made in integer arithmetic: a pair exactly at the
threshold is in the result. Empty sets are similar to nothing. Every pair of
sets is reported, equal sets included; --distinct counts equal sets once, as
the smallest of their ids (the preprocessing of Mann et al., whose published
counts assume it).

The algorithms are those of Mann et al.'s comparison of set similarity joins:
allpairs (prefix and length filters), ppjoin (with the positional filter) and
groupjoin (PPJoin over groups of sets with equal prefixes), and pairjoin
(PPJoin that indexes small sets by pairs of their prefix elements, the k = 2
case of Wang et al.'s k-wise prefix filter), filtering on every core. A planner samples each on the data and picks the fastest; --explain
prints its statistics, estimates and choice on standard error, and the time
the run took. --technique (or its old name --algorithm) and --device force a
choice.

With --device gpu (or auto, where the planner expects it to pay) the
candidates that the filters find are verified on the GPU, in chunks, while
the filters go on: by one of the three kernels of Bellas and Gounaris, a
thread per probing set, a block per probing set, or threads sharing each
pair by Intersect Path, which the planner picks from the sets' sizes and
--gpu-kernel forces. --explain then also prints where the run's time went.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			with := fs.String("with", "", "join FILE with the collection `FILE2` (i indexes FILE, j FILE2) instead of with itself")
			measure := fs.String("measure", "jaccard", "similarity `measure`: jaccard, cosine, dice or overlap")
			threshold := fs.String("threshold", "", "report pairs whose similarity is at least `T` (required)")
			distinct := fs.Bool("distinct", false, "count equal sets once, as the smallest of their ids")
			technique := fs.String("technique", "auto", "technique `NAME` (an algorithm), or auto: "+strings.Join(simjoin.Techniques(), ", "))
			flagalias.Declare(fs, "technique", "algorithm")
			device := fs.String("device", "auto", "device: cpu, gpu or auto")
			gpuKernel := fs.String("gpu-kernel", "auto", "the GPU's verification `kernel`, or auto: "+strings.Join(simjoin.GPUKernels, ", "))
			gpusValue := gpusFlag(fs)
			threads := fs.Int("threads", 0, "CPU threads, up to 4096 (0: one per core)")
			memory := memoryFlag(fs)
			countOnly := fs.Bool("count-only", false, "print only the number of pairs")
			sorted := fs.Bool("sort", false, "print the pairs sorted by i, then j")
			explain := fs.Bool("explain", false, "print the statistics, every technique's estimate and the choice on standard error")
			out := fs.String("o", "-", "output `file` (- for standard output)")
			return func(env *Env, args []string) error {
				if len(args) != 1 {
					return usagef("want one FILE, got %d arguments", len(args))
				}
				if *threshold == "" {
					return usagef("--threshold is required")
				}
				m, err := simjoin.ParseMeasure(*measure)
				if err != nil {
					return usagef("--measure: %v", err)
				}
				th, err := simjoin.ParseThreshold(m, *threshold)
				if err != nil {
					return usagef("--threshold: %v", err)
				}
				if err := checkThreads(*threads); err != nil {
					return err
				}
				if *gpuKernel != "auto" && !slices.Contains(simjoin.GPUKernels, *gpuKernel) {
					return usagef("--gpu-kernel %q: want auto, %s", *gpuKernel, strings.Join(simjoin.GPUKernels, ", "))
				}
				gpus, err := parseGPUList(*gpusValue)
				if err != nil {
					return err
				}
				prewarm(*device, gpus, append([]string{*with}, args...)...)
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				w, err := openOutput(env, *out)
				if err != nil {
					return err
				}
				defer w.abort()
				r, _, err := loadCollection(env, args[0], b)
				if err != nil {
					return err
				}
				var s *sets.Collection
				if *with != "" {
					if s, _, err = loadCollection(env, *with, b.left(memoryOf(r))); err != nil {
						return err
					}
				}
				env.mark("read", 0)
				// Checked beside the preparation, the driver having
				// loaded beside the reading.
				checked := checkGPUsBeside(*gpusValue, *device, gpus)
				bar := newJoinBar()
				// As in allpairs: the plan gets what the collections
				// leave, less what the output keeps.
				left := b.left(memoryOf(r) + memoryOf(s))
				planBudget, queue := outputBudget(left, *countOnly, *sorted, *threads)
				opt := simjoin.Options{
					Threshold: th,
					Technique: *technique,
					Device:    *device,
					Threads:   *threads,
					Distinct:  *distinct,
					Memory:    planBudget.Bytes,
					Progress:  bar.update,
					GPUKernel: *gpuKernel,
					GPUs:      gpus,
				}
				plan, err := simjoin.NewPlan(r, s, opt)
				env.mark("preparation", 0)
				if err := checked(); err != nil {
					return err
				}
				if plan != nil && *explain {
					if err := plan.Explain(env.Stderr); err != nil {
						return err
					}
				}
				if err != nil {
					return planError(err, *technique, *device, planBudget)
				}
				start := time.Now()
				var n int64
				switch {
				case *countOnly:
					n, err = plan.Count(context.Background())
					err = writeCount(w, n, err)
				case *sorted:
					_, planMemory := plan.Estimate()
					n, err = sortJoin(w, left.left(planMemory).Bytes, func(add func([]sets.Pair) error) error {
						return plan.Join(context.Background(), isimjoin.Overlaps(add))
					}, bar.done, func(b []byte, ps []sets.Pair) []byte {
						return appendSimLines(b, ps, r, s, m)
					})
				default:
					out := newStreamOut(w, queue, func(b []byte, ps []simjoin.Pair) []byte { return simjoin.AppendLines(b, ps, m) })
					err = plan.Join(context.Background(), out.add)
					err = out.close(err)
					n = out.pairs.Load()
				}
				bar.done()
				return finishJoin(env, w, plan, *explain, start, n, err)
			}
		},
	})
}

// appendSimLines formats the pairs of isimjoin.Overlaps as simjoin's lines,
// their similarity computed again (isimjoin.FromOverlap).
func appendSimLines(b []byte, ps []sets.Pair, r, s *sets.Collection, m simjoin.Measure) []byte {
	for _, p := range ps {
		one := [1]simjoin.Pair{isimjoin.FromOverlap(p, r, s, m)}
		b = simjoin.AppendLines(b, one[:], m)
	}
	return b
}
