package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

// phase is one step of a command's process for --explain's account: its
// name, when it ended (it began where the one before ended), and what the
// planner estimated of it (0: nothing).
type phase struct {
	name     string
	end      time.Time
	estimate time.Duration
}

// mark ends the phase name now, with the planner's estimate of it (0:
// none); the next phase begins.
func (env *Env) mark(name string, estimate time.Duration) {
	env.phases = append(env.phases, phase{name: name, end: time.Now(), estimate: estimate})
}

// gpuSpan is when the GPUs' start-up began and ended, for writePhases.
type gpuSpan struct {
	first, last time.Time
	opened      bool
	estimate    time.Duration // what planners assume of it (gpurt.StartupEstimate)
}

// writePhases writes the process's account by phase, from started: each
// marked phase's estimate where the planner made one, its time and its
// place in the process; the GPUs' start-up, which runs beside them, with
// what planners assume of it (its estimate); and the GPUs' teardown at
// the exit, which follows the account (gpurt.ExitCost). It writes
// nothing where no phase was marked.
func writePhases(w io.Writer, started time.Time, phases []phase, gpu gpuSpan) {
	if len(phases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\testimate\tmeasured\tin the process")
	at := func(t time.Time) string { return shortDuration(t.Sub(started)) }
	row := func(name string, estimate time.Duration, measured, span string) {
		est := "-"
		if estimate > 0 {
			est = shortDuration(estimate)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, est, measured, span)
	}
	if gpu.opened {
		row("gpu start", gpu.estimate, shortDuration(gpu.last.Sub(gpu.first)),
			fmt.Sprintf("%s to %s, beside the phases below", at(gpu.first), at(gpu.last)))
	}
	begin := started
	for _, p := range phases {
		span := fmt.Sprintf("%s to %s", at(begin), at(p.end))
		if p.estimate > 0 && gpu.opened && p.name == "run" {
			span += " (its estimate includes the wait for the GPUs and their exit)"
		}
		row(p.name, p.estimate, shortDuration(p.end.Sub(begin)), span)
		begin = p.end
	}
	if gpu.opened {
		what := "after this account: the GPUs' teardown"
		if gpurt.HandsOffTeardown() {
			what = "after this account: the GPUs' teardown handed to a helper that ends after the process"
		}
		row("exit", gpurt.ExitCost(), "-", what)
	}
	tw.Flush()
}

// shortDuration writes d in milliseconds to a tenth, or in seconds to
// three figures from 10 s.
func shortDuration(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
