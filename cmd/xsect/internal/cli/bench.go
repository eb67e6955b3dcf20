package cli

import (
	"flag"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/internal/flagalias"
	"github.com/xsect/xsect/intersect"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "time the pairwise intersection methods on generated pairs",
		usage:   "pairwise [flags]",
		help: `
Generates pairs of sets and times each pairwise intersection method on them.
For each size, ratio, selectivity and density, the larger set has size
elements and the smaller size/ratio; they share exactly selectivity times the
smaller set's size; both are drawn uniformly from a universe of size/density
values. The pairs depend only on the flags: the same seed gives the same pairs
on every machine.

Each method's answer is checked first; then it runs in a loop of at least
--min-time, --repeat times after a warm-up, and the median is reported: time
per operation, billions of input elements (both sets) per second, and time
relative to the fastest method on the same pair. Other programs running on the
machine make the figures noisy: compare methods within one run. --techniques
picks the methods (--methods is its old name).`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			sizes := fs.String("sizes", "1e6", "comma-separated sizes of the larger set (1e6, 1M and 1000000 are the same)")
			ratios := fs.String("ratios", "1,1000", "comma-separated size ratios larger:smaller")
			sel := fs.String("selectivity", "0.33", "comma-separated fractions of the smaller set that the larger also holds")
			density := fs.String("density", "0.01,0.33", "comma-separated fractions of the universe that the larger set covers")
			methods := fs.String("techniques", "all", "comma-separated pairwise methods (see 'xsect intersect --technique list'), or all")
			flagalias.Declare(fs, "techniques", "methods")
			op := fs.String("op", "count", "operation to time: count or intersect")
			repeat := fs.Int("repeat", 5, "timed loops per method; the median is reported")
			minTime := fs.Duration("min-time", 50*time.Millisecond, "shortest duration of one timed loop")
			seed := fs.Uint64("seed", 1, "random seed of the generated pairs")
			return func(env *Env, args []string) error {
				if len(args) != 1 || args[0] != "pairwise" {
					return usagef("want the benchmark name: pairwise")
				}
				var cfg bench.Config
				ns, err := bench.ParseCounts(*sizes)
				if err != nil {
					return usagef("--sizes: %v", err)
				}
				rs, err := bench.ParseCounts(*ratios)
				if err != nil {
					return usagef("--ratios: %v", err)
				}
				sels, err := bench.ParseFractions(*sel)
				if err != nil {
					return usagef("--selectivity: %v", err)
				}
				ds, err := bench.ParseFractions(*density)
				if err != nil {
					return usagef("--density: %v", err)
				}
				cfg.Shapes = bench.Grid(ns, rs, sels, ds)
				for _, s := range cfg.Shapes {
					if err := s.Validate(); err != nil {
						return usageError{err.Error()}
					}
				}
				if cfg.Methods, err = lookupMethods(*methods); err != nil {
					return usageError{err.Error()}
				}
				switch *op {
				case "count":
					cfg.Op = bench.Count
				case "intersect":
					cfg.Op = bench.Intersect
				default:
					return usagef("--op: unknown operation %q (count or intersect)", *op)
				}
				if *repeat < 1 {
					return usagef("--repeat: %d: must be at least 1", *repeat)
				}
				if *minTime <= 0 {
					return usagef("--min-time: %v: must be positive", *minTime)
				}
				cfg.Repeat, cfg.MinTime, cfg.Seed = *repeat, *minTime, *seed
				results, err := bench.Run(cfg)
				if err != nil {
					return err
				}
				out := output(env)
				if err := bench.WriteTable(out, results); err != nil {
					return err
				}
				return out.Flush()
			}
		},
	})
}

// lookupMethods resolves a comma-separated list of method names; "all" is
// the adaptive method followed by every method this CPU offers.
func lookupMethods(list string) ([]intersect.Method, error) {
	if list == "all" {
		auto, _ := intersect.Lookup("auto")
		return append([]intersect.Method{auto}, intersect.Methods()...), nil
	}
	var ms []intersect.Method
	for _, name := range strings.Split(list, ",") {
		m, err := intersect.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}
