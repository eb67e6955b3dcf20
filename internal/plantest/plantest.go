// Package plantest validates planners against the clock: for a problem, it
// times the planner's choice and every engine forced, several times in
// turns, and prints each engine's estimate next to its measured time (wall
// and process CPU) and the ratio of the choice's time to the fastest
// engine's. The validations of allpairs and pairs (and of later
// workloads) share it, so that their tables read alike.
package plantest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// The flags of every workload's TestValidate: a test binary that imports
// this package has them.
var (
	validate = flag.Bool("validate", false, "run TestValidate: time the planner's choice against every CPU engine forced, on problems its cost model was not fitted on")
	reps     = flag.Int("validate-reps", 3, "TestValidate: runs of each engine per problem (the table gives the median, min and max)")
	shapes   = flag.String("validate-shapes", "", "TestValidate: comma-separated problem names, or \"fit\" for the problems the costs were fitted on (default: every validation problem)")
)

// Select returns the problems a validation runs, and skips t without
// -validate: those that -validate-shapes names, among validation and fit;
// fit for "fit"; validation by default. name returns a problem's name.
func Select[S any](t testing.TB, validation, fit []S, name func(S) string) []S {
	t.Helper()
	if !*validate {
		t.Skip("needs -validate")
	}
	return choose(*shapes, validation, fit, name)
}

// choose is Select for -validate-shapes spec.
func choose[S any](spec string, validation, fit []S, name func(S) string) []S {
	switch spec {
	case "":
		return validation
	case "fit":
		return fit
	}
	var out []S
	for _, sh := range slices.Concat(validation, fit) {
		if strings.Contains(","+spec+",", ","+name(sh)+",") {
			out = append(out, sh)
		}
	}
	return out
}

// Reps returns -validate-reps: the runs of each engine per problem.
func Reps() int { return *reps }

// Synth returns the data that cfg generates with seed 7, made when a
// validation asks for them.
func Synth(cfg synth.Config) func(testing.TB) *sets.Collection {
	return func(t testing.TB) *sets.Collection {
		cfg.Seed = 7
		c, err := synth.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// Auto names the planner's own choice among the engines.
const Auto = "auto"

// Engine is one engine the planner could choose, with its estimate.
type Engine struct {
	Name     string
	Estimate float64 // seconds
}

// Problem is one problem of a validation.
type Problem struct {
	Name string
	// Choice is the engine the planner picks, Engines every engine that
	// can run the problem (the choice among them), with estimates.
	Choice  string
	Engines []Engine
	// Threads is the CPU threads the plans use: cpu/estimate divides the
	// CPU time by it.
	Threads int
	// Run plans and runs the problem with engine forced, or with the
	// planner's choice for Auto, and stops at ctx's end (returning its
	// error). It returns the plan's estimate. The time of the call is the
	// measure: planning counts, as in a command.
	Run func(ctx context.Context, engine string) (estimate float64, err error)
}

// Runs are one engine's runs on one problem.
type Runs struct {
	Engine   string
	Estimate float64   // seconds
	Walls    []float64 // seconds
	CPUs     []float64 // seconds of process CPU time
	Stopped  float64   // > 0: stopped after this many seconds, far slower than the fastest
}

// Median returns the median wall time.
func (r *Runs) Median() float64 { return Quantile(r.Walls, 0.5) }

// Quantile returns the q-quantile of xs (the nearest rank), +Inf if empty.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.Inf(1)
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// Result is one problem's outcome.
type Result struct {
	Name, Choice string
	Auto         *Runs
	Fastest      *Runs   // the fastest engine forced, by median wall time; nil if none ran
	Ratio        float64 // auto / fastest, by median wall times
	// CPURatio is auto / fastest by median process CPU time (the fastest
	// by that measure): on a machine shared with other work, where wall
	// times of multi-threaded runs depend on the others' load, it is the
	// steadier comparison of engines that keep every thread busy.
	CPURatio float64
}

// Time runs p: reps rounds, each the choice then every engine in order of
// estimate. An engine forced still running at 4 times the fastest median
// so far (and at least 2 s) is stopped and not run again, since it cannot
// be the fastest; the choice always runs to its end. It prints a table to
// w: each engine's estimate, median, min and max wall time, median CPU
// time, median over estimate and CPU over estimate times the threads (the
// steadier check of a cost model on a machine shared with other work).
func Time(w io.Writer, p Problem, reps int) (Result, error) {
	engines := slices.Clone(p.Engines)
	slices.SortStableFunc(engines, func(a, b Engine) int {
		switch {
		case a.Estimate < b.Estimate:
			return -1
		case a.Estimate > b.Estimate:
			return 1
		}
		return 0
	})
	runs := []*Runs{{Engine: Auto}}
	for _, e := range engines {
		runs = append(runs, &Runs{Engine: e.Name, Estimate: e.Estimate})
	}
	for rep := 0; rep < max(reps, 1); rep++ {
		best := math.Inf(1)
		for _, r := range runs {
			if len(r.Walls) > 0 {
				best = min(best, r.Median())
			}
		}
		for _, r := range runs {
			if r.Stopped > 0 {
				continue
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if r.Engine != Auto && !math.IsInf(best, 1) {
				ctx, cancel = context.WithTimeout(ctx, time.Duration(max(4*best, 2)*float64(time.Second)))
			}
			start, startCPU := time.Now(), sysinfo.CPUTime()
			est, err := p.Run(ctx, r.Engine)
			wall, cpu := time.Since(start).Seconds(), (sysinfo.CPUTime() - startCPU).Seconds()
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				r.Stopped = wall
				continue
			}
			if err != nil {
				return Result{}, fmt.Errorf("%s, %s: %w", p.Name, r.Engine, err)
			}
			r.Estimate = est
			r.Walls, r.CPUs = append(r.Walls, wall), append(r.CPUs, cpu)
			if rep == 0 {
				best = min(best, wall)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t(%s)\t\t\t\t\t\t\t\n", p.Name, p.Choice)
	fmt.Fprintln(tw, "engine\testimate ms\tmedian ms\tmin\tmax\tcpu ms\tmedian/estimate\tcpu/estimate\t")
	res := Result{Name: p.Name, Choice: p.Choice, Auto: runs[0]}
	for _, r := range runs {
		if r.Stopped > 0 {
			fmt.Fprintf(tw, "%s\t%.1f\t> %.0f\t\t\t\t(stopped)\t\t\n", r.Engine, r.Estimate*1e3, r.Stopped*1e3)
			continue
		}
		m, cpu := r.Median(), Quantile(r.CPUs, 0.5)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t\n", r.Engine, r.Estimate*1e3, m*1e3,
			Quantile(r.Walls, 0)*1e3, Quantile(r.Walls, 1)*1e3, cpu*1e3, m/r.Estimate, cpu/(r.Estimate*float64(max(p.Threads, 1))))
		if r.Engine != Auto && (res.Fastest == nil || m < res.Fastest.Median()) {
			res.Fastest = r
		}
	}
	if err := tw.Flush(); err != nil {
		return res, err
	}
	if res.Fastest != nil {
		res.Ratio = res.Auto.Median() / res.Fastest.Median()
		minCPU := math.Inf(1)
		for _, r := range runs[1:] {
			if r.Stopped == 0 {
				minCPU = min(minCPU, Quantile(r.CPUs, 0.5))
			}
		}
		res.CPURatio = Quantile(res.Auto.CPUs, 0.5) / minCPU
		fmt.Fprintf(w, "  auto (%s) / fastest (%s) = %.3f (by CPU time %.3f)\n\n", p.Choice, res.Fastest.Engine, res.Ratio, res.CPURatio)
	}
	return res, nil
}

// Summarize prints one line per result and, over the results whose fastest
// engine takes at least minSeconds (the review's 0.25 s) and over all, the
// geometric mean and the maximum of auto / fastest.
func Summarize(w io.Writer, results []Result, minSeconds float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "problem\tchoice\tauto ms (min-max)\tfastest\tfastest ms (min-max)\tauto/fastest\tby CPU time")
	var timed, all, timedCPU []float64
	for _, r := range results {
		if r.Fastest == nil {
			continue
		}
		a, f := r.Auto, r.Fastest
		fmt.Fprintf(tw, "%s\t%s\t%.0f (%.0f-%.0f)\t%s\t%.0f (%.0f-%.0f)\t%.3f\t%.3f\n", r.Name, r.Choice,
			a.Median()*1e3, Quantile(a.Walls, 0)*1e3, Quantile(a.Walls, 1)*1e3,
			f.Engine, f.Median()*1e3, Quantile(f.Walls, 0)*1e3, Quantile(f.Walls, 1)*1e3, r.Ratio, r.CPURatio)
		all = append(all, r.Ratio)
		if f.Median() >= minSeconds {
			timed = append(timed, r.Ratio)
			timedCPU = append(timedCPU, r.CPURatio)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nauto / fastest where the fastest takes >= %g s: %s (by CPU time: %s)\nauto / fastest on every problem: %s\n",
		minSeconds, summary(timed), summary(timedCPU), summary(all))
	return err
}

func summary(rs []float64) string {
	if len(rs) == 0 {
		return "no problem"
	}
	return fmt.Sprintf("%d problems, geometric mean %.3f, max %.3f", len(rs), GeoMean(rs), slices.Max(rs))
}

// GeoMean returns the geometric mean of xs (1 if empty).
func GeoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 1
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
