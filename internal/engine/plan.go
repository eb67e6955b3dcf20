package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/sysinfo"
)

// Plan is what every workload's plan holds; each workload's Plan embeds
// it beside its options.
type Plan[P any, E Named] struct {
	// Problem is the prepared problem.
	Problem P
	// Candidates lists every engine the planner considered, fastest
	// estimate first, those that cannot run last.
	Candidates []Candidate[E]
	// Chosen is the candidate that runs.
	Chosen Candidate[E]
	// Prepare is the time spent preparing the problem and estimating.
	Prepare time.Duration
	// Estimating is the part of Prepare spent estimating the engines, where
	// the workload measures it (0 where it does not).
	Estimating time.Duration
	// RunNotes is what the engine says about its run: the workload's
	// Output adds to it.
	RunNotes Notes
}

// Notes returns what the engine said about its run, once it has run.
func (pl *Plan[P, E]) Notes() string { return pl.RunNotes.String() }

// Technique returns the chosen engine's name, or "" when none can run:
// what the public packages' plans report.
func (pl *Plan[P, E]) Technique() string {
	if pl.Chosen.Err != nil {
		return ""
	}
	return pl.Chosen.Engine.Name()
}

// DeviceKind returns "cpu" or "gpu", where the chosen engine runs, or ""
// when none can run.
func (pl *Plan[P, E]) DeviceKind() string {
	if pl.Chosen.Err != nil {
		return ""
	}
	return pl.Chosen.Device.Kind.String()
}

// Estimated returns the chosen engine's predicted time and peak memory,
// or zeros when none can run.
func (pl *Plan[P, E]) Estimated() (time.Duration, int64) {
	if pl.Chosen.Err != nil {
		return 0, 0
	}
	return pl.Chosen.Estimate.Duration(), pl.Chosen.Estimate.Memory
}

// WriteChoice writes the candidates' table and the choice (WriteChoice).
func (pl *Plan[P, E]) WriteChoice(w io.Writer) error { return WriteChoice(w, pl.Candidates, pl.Chosen) }

// WriteChoice ends every workload's explanation: the candidates' table
// (WriteTable), then the engine that runs and its device, or, when chosen
// carries an error, why none can run.
func WriteChoice[E Named](w io.Writer, cs []Candidate[E], chosen Candidate[E]) error {
	at := -1
	if chosen.Err == nil {
		// By name and kind: an engine's value may not be comparable.
		at = slices.IndexFunc(cs, func(c Candidate[E]) bool {
			return c.Err == nil && c.Engine.Name() == chosen.Engine.Name() && c.Engine.Kind() == chosen.Engine.Kind()
		})
	}
	if err := WriteTable(w, cs, at); err != nil {
		return err
	}
	if chosen.Err != nil {
		_, err := fmt.Fprintf(w, "\nchoice       none: %v\n", Reason(chosen.Err))
		return err
	}
	name := chosen.Device.Name
	if chosen.Estimate.DeviceName != "" {
		name = chosen.Estimate.DeviceName
	}
	_, err := fmt.Fprintf(w, "\nchoice       %s on %s (%s)\n", chosen.Engine.Name(), chosen.Device.Kind, name)
	return err
}

// CPUDevice describes this machine's CPU, as the CPU engines of every
// workload run on it: GOMAXPROCS threads, unless a plan says otherwise
// (OnThreads).
func CPUDevice() Device {
	return Device{Kind: CPU, Memory: sysinfo.Memory()}.OnThreads(runtime.GOMAXPROCS(0))
}

// OnThreads returns d as a plan runs on it: a CPU on n threads (what
// Explain's choice says); other devices are returned unchanged.
func (d Device) OnThreads(n int) Device {
	if d.Kind != CPU {
		return d
	}
	d.Name, d.Parallelism = fmt.Sprintf("%s, %d threads", sysinfo.CPUName(), n), n
	return d
}

// Named is what the registry and the planner need of an engine: its
// technique and the kind of device it runs on.
type Named interface {
	// Name is the technique, for example "scancount". Engines of
	// different devices that compute alike share a name, so that a named
	// technique runs on whatever device the caller allows.
	Name() string
	// Kind is the kind of device the engine runs on. Unlike Device it
	// must not touch the device: the planner filters by kind without
	// opening a GPU.
	Kind() Kind
}

// Candidate is one engine's answer to a planner.
type Candidate[E Named] struct {
	Engine   E
	Device   Device
	Estimate Estimate
	// Err says why the engine cannot run the problem (nil if it can).
	Err error
	// Bounded says that the planner did not ask for the estimate: a cheap
	// lower bound, now in Estimate.Seconds, was no better than another
	// engine's estimate.
	Bounded bool
}

// CheckMemory sets c.Err when the estimate needs more memory than the
// device has or, on the CPU, more than budget bytes (budget <= 0: no
// budget).
func (c *Candidate[E]) CheckMemory(budget int64) { c.checkMemory(budget, 0) }

// checkMemory is CheckMemory where the prepared problem already holds
// prepared bytes of the budget.
func (c *Candidate[E]) checkMemory(budget, prepared int64) {
	if c.Err != nil {
		return
	}
	d := c.Device
	switch {
	case d.Memory > 0 && c.Estimate.Memory > d.Memory:
		c.Err = Cannot("needs %s of memory, %s has %s", Bytes(c.Estimate.Memory), d.Kind, Bytes(d.Memory))
	case d.Kind != CPU || budget <= 0 || c.Estimate.Memory+prepared <= budget:
	case prepared > 0:
		c.Err = OverBudget("needs %s with the prepared data, over the budget of %s", Bytes(c.Estimate.Memory+prepared), Bytes(budget))
	default:
		c.Err = OverBudget("needs %s of memory, over the budget of %s", Bytes(c.Estimate.Memory), Bytes(budget))
	}
}

// Rank orders candidates for the choice: those that can run first, lowest
// estimated time first, an estimate before an equal bound; the order of
// equals is kept.
func Rank[E Named](cs []Candidate[E]) {
	slices.SortStableFunc(cs, func(a, b Candidate[E]) int {
		if (a.Err == nil) != (b.Err == nil) {
			if a.Err == nil {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Estimate.Seconds, b.Estimate.Seconds); c != 0 {
			return c
		}
		if a.Bounded != b.Bounded {
			if a.Bounded {
				return 1
			}
			return -1
		}
		return 0
	})
}

// Pick returns the first of the ranked candidates, or an error wrapping
// ErrCannotRun that names what was asked for and why each candidate cannot
// run it: a user learns the reasons without asking for an explanation. The
// error wraps ErrOverBudget too when a candidate could run with a larger
// memory budget, and ErrUnavailable when no candidate's device is there.
func Pick[E Named](workload string, choice Choice, cs []Candidate[E]) (Candidate[E], error) {
	if len(cs) == 0 {
		what := "no engine"
		if choice.Technique != "" && choice.Technique != "auto" {
			what = "no engine " + choice.Technique
		}
		if choice.Device != "" && choice.Device != "auto" {
			what += " on device " + choice.Device
		}
		return Candidate[E]{}, fmt.Errorf("%s: %s is registered (%w)", workload, what, ErrCannotRun)
	}
	if c := cs[0]; c.Err == nil {
		return c, nil
	}
	if len(cs) == 1 {
		c := cs[0]
		return c, fmt.Errorf("%s: %s on %s: %w", workload, c.Engine.Name(), c.Engine.Kind(), c.Err)
	}
	over, unavailable := false, true
	// Each reason once, with the engines that give it.
	var reasons []string
	who := map[string][]string{}
	for _, c := range cs {
		over = over || errors.Is(c.Err, ErrOverBudget)
		unavailable = unavailable && errors.Is(c.Err, ErrUnavailable)
		msg := Reason(c.Err)
		if who[msg] == nil {
			reasons = append(reasons, msg)
		}
		who[msg] = append(who[msg], c.Engine.Name()+" on "+c.Engine.Kind().String())
	}
	for i, msg := range reasons {
		reasons[i] = strings.Join(who[msg], ", ") + ": " + msg
	}
	err := fmt.Errorf("%s: no engine can run this problem (%w): %s", workload, ErrCannotRun, strings.Join(reasons, "; "))
	switch {
	case over:
		err = marked{err, ErrOverBudget}
	case unavailable:
		err = marked{err, ErrUnavailable}
	}
	return cs[0], err
}

// WriteTable writes one line per candidate, in their order: technique,
// device, estimate, memory and notes (the estimate's detail, or why the
// engine cannot run); the chosen one is marked.
func WriteTable[E Named](w io.Writer, cs []Candidate[E], chosen int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  technique\tdevice\testimate\tmemory\tnotes")
	for i, c := range cs {
		mark := " "
		if i == chosen {
			mark = "*"
		}
		switch {
		case c.Err != nil:
			fmt.Fprintf(tw, "%s %s\t%s\t-\t-\tcannot run: %s\n", mark, c.Engine.Name(), c.Engine.Kind(), Reason(c.Err))
		case c.Bounded:
			fmt.Fprintf(tw, "%s %s\t%s\t>= %s\t-\t%s\n", mark, c.Engine.Name(), c.Engine.Kind(), Seconds(c.Estimate.Seconds), c.Estimate.Detail)
		default:
			fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\n", mark, c.Engine.Name(), c.Engine.Kind(), Seconds(c.Estimate.Seconds), Bytes(c.Estimate.Memory), c.Estimate.Detail)
		}
	}
	return tw.Flush()
}

// Seconds formats a duration in seconds for people: "1.25 s", "3.4 ms".
func Seconds(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "inf"
	case s >= 100:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.0f us", s*1e6)
}

// Bytes formats a byte count for people: "1.5 GiB", "12.0 MiB".
func Bytes(n int64) string {
	x := float64(n)
	switch {
	case x >= 1<<30:
		return fmt.Sprintf("%.1f GiB", x/(1<<30))
	case x >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	case x >= 1<<10:
		return fmt.Sprintf("%.1f KiB", x/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
