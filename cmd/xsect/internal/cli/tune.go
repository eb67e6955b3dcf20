package cli

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/intersect/tune"
)

// useSavedProfile installs the saved profile of the pairwise dispatch
// (tune.UseSaved) and returns what serves. A file named by tune.Env that
// cannot be used is bad input; a broken one at the default path leaves the
// built-in dispatch, with a warning on env.Stderr.
func useSavedProfile(env *Env) (string, error) {
	source, err := tune.UseSaved()
	switch {
	case err == nil:
		return source, nil
	case os.Getenv(tune.Env) != "":
		return "", fmt.Errorf("%w (%w)", err, errBadInput)
	}
	fmt.Fprintf(env.Stderr, "xsect: ignoring the pairwise profile: %v (remove it, or run `xsect tune` again)\n", err)
	return source, nil
}

func init() {
	register(&command{
		name:    "tune",
		summary: "measure the pairwise methods on this CPU and save the dispatch that fits it",
		usage:   "[flags]",
		help: `
Measures the pairwise intersection methods on this CPU and fits the dispatch
that picks among them by the sizes of the two sets: which method serves which
size ratio, at several sizes of the larger set around the core's L2 cache.
The built-in dispatch was measured on the kinds of CPU the authors had; on
another (another cache, another core, VP2INTERSECT) the crossovers move.

Each method's Count is timed on generated pairs (selectivity 1%), on one
goroutine, --rounds times in turn, and the medians are fitted. The fitted
dispatch and the built-in one are then judged on pairs the fit did not see
(sizes between the fitted ones, selectivity 30%, other values): how close
Count comes to the fastest method under each. The measured dispatch is saved
(to --out, or where every later xsect process on this machine loads it) only
if it is at least as good as the built-in one there, or with --force.

Run it on an otherwise idle machine: other work makes the timings noisy. It
takes a few minutes (--quick: one round, shorter, noisier). XSECT_PROFILE names
another file to load, or "off" for the built-in dispatch; --show prints the
dispatch in use.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			out := fs.String("out", "", "file to save the profile to (default: the user's cache, where every command loads it)")
			quick := fs.Bool("quick", false, "one round and shorter timings: faster, noisier")
			rounds := fs.Int("rounds", 3, "timings of each method on each pair; the median is fitted")
			minTime := fs.Duration("min-time", 3*time.Millisecond, "shortest timed loop of one timing")
			raw := fs.String("raw", "", "file to write every timing to, a line each: phase, larger set, smaller set, method, seconds")
			sizes := fs.String("sizes", "", "comma-separated sizes of the larger set to fit tiers at (default: 1/2 to 16 times the L2 cache)")
			seed := fs.Uint64("seed", 1, "random seed of the generated pairs")
			force := fs.Bool("force", false, "save the measured profile even if the built-in one did better on the check")
			show := fs.Bool("show", false, "print the dispatch in use and where it comes from, and measure nothing")
			return func(env *Env, args []string) error {
				if len(args) != 0 {
					return usagef("unexpected arguments: %s", strings.Join(args, " "))
				}
				if *show {
					w := output(env)
					fmt.Fprintf(w, "# pairwise dispatch: %s\n", env.profile)
					writeProfile(w, intersect.ActiveProfile())
					return w.Flush()
				}
				var err error
				o := tune.Options{Rounds: *rounds, MinTime: *minTime, Seed: *seed}
				if *quick {
					o.Rounds, o.MinTime = 1, time.Millisecond
				}
				if o.Rounds < 1 || o.MinTime <= 0 {
					return usagef("--rounds and --min-time must be positive")
				}
				if *sizes != "" {
					if o.Sizes, err = bench.ParseCounts(*sizes); err != nil {
						return usagef("--sizes: %v", err)
					}
					for i, s := range o.Sizes {
						if s < 128 || i > 0 && s <= o.Sizes[i-1] {
							return usagef("--sizes: want increasing sizes of at least 128, got %s", *sizes)
						}
					}
				}
				path := *out
				if path == "" {
					if path, err = tune.DefaultPath(); err != nil {
						return err
					}
				}
				timings, err := tune.Measure(withBar(o, "measuring"))
				if err != nil {
					return err
				}
				p := tune.Fit(timings)
				if err := intersect.CheckProfile(p); err != nil {
					return fmt.Errorf("the fitted profile: %w", err)
				}
				co := o
				co.Sizes = tune.CheckSizes(tune.Sizes(p))
				checked, js, err := tune.Check(withBar(co, "checking"), []string{"measured", "built-in"}, []intersect.Profile{p, tune.BuiltIn()})
				if err != nil {
					return err
				}
				if *raw != "" {
					if err := writeTimings(*raw, timings, checked); err != nil {
						return err
					}
				}
				w := output(env)
				fmt.Fprintf(w, "# pairwise dispatch measured on %s\n", p.CPU)
				writeProfile(w, p)
				fmt.Fprintf(w, "\n# checked at %s values, selectivity 30%%: Count's time over the fastest method's\n", joinInts(co.Sizes))
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "dispatch\tpairs\twithin 5%\twithin 10%\tgeometric mean\tmax\tat")
				for _, j := range js {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.2f\t%d x %d\n", j.Label, j.Pairs, j.Within5, j.Within10, j.GeoMean, j.Max, j.Worst.Small, j.Worst.Large)
				}
				tw.Flush()
				if js[0].GeoMean > js[1].GeoMean*1.01 && !*force {
					fmt.Fprintf(w, "\nnot saved: the built-in dispatch did better on the check (--force saves it anyway)\n")
					return w.Flush()
				}
				if err := tune.Save(path, p); err != nil {
					return err
				}
				fmt.Fprintf(w, "\nsaved to %s\n", path)
				return w.Flush()
			}
		},
	})
}

// writeTimings writes the fit's and the check's timings to path.
func writeTimings(path string, fit, check []tune.Timing) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# xsect tune on %s: phase, larger set, smaller set, method, seconds\n", intersect.CPU())
	for _, t := range fit {
		fmt.Fprintf(w, "fit\t%d\t%d\t%s\t%.4g\n", t.Large, t.Small, t.Method, t.Seconds)
	}
	for _, t := range check {
		fmt.Fprintf(w, "check\t%d\t%d\t%s\t%.4g\n", t.Large, t.Small, t.Method, t.Seconds)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// withBar returns o reporting its progress on a bar labelled label.
func withBar(o tune.Options, label string) tune.Options {
	var bar *progress.Bar
	o.Progress = func(done, total int) {
		if bar == nil {
			bar = progress.Start(label, "timings", int64(total))
		}
		bar.Add(1)
		if done == total {
			bar.Done()
		}
	}
	return o
}

// writeProfile writes p's tiers, a line each.
func writeProfile(w io.Writer, p intersect.Profile) {
	for _, t := range p.Tiers {
		var steps []string
		for _, s := range t.Steps {
			if s.UpTo == 0 {
				steps = append(steps, s.Method+" beyond")
			} else {
				steps = append(steps, fmt.Sprintf("%s to 1:%d", s.Method, s.UpTo))
			}
		}
		line := fmt.Sprintf("larger set %s: %s", bench.FormatCount(t.Values), strings.Join(steps, ", "))
		if t.SearchPasses > 0 {
			line += fmt.Sprintf("; search-simd for %.2f passes", t.SearchPasses)
		}
		if t.GallopUpTo > 0 {
			line += fmt.Sprintf("; gallop up to %d values", t.GallopUpTo)
		}
		fmt.Fprintln(w, line)
	}
}

func joinInts(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = bench.FormatCount(v)
	}
	return strings.Join(s, ", ")
}
