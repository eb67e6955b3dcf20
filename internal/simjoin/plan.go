// Package simjoin is the set similarity join's engine room: exact joins
// under Jaccard, Cosine, Dice or Overlap thresholds by the
// filter-verification algorithms that Mann et al. found best (AllPairs,
// PPJoin, GroupJoin) and PairJoin, with Mann et al.'s preprocessing,
// filtering on every core, verification by package intersect's kernels
// with an early exit (or on a GPU, by the engines of internal/gpusimjoin,
// fed through Candidates), every decision at the threshold in integer
// arithmetic, and the planner that picks an algorithm and a device.
// Package simjoin at the root is its API.
package simjoin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
)

// Plan is a prepared problem with the engine chosen to run it.
type Plan struct {
	engine.Plan[*Problem, Engine]
	// Phases splits the plan's Prepare time.
	Phases Phases

	opt   Options
	shift shift // added to the ids of a tile's pairs
}

// Phases are the parts of a plan's preparation: finding equal sets,
// renumbering the elements by frequency, building and ordering the
// records, and planning (the engines' indexes and samples).
type Phases struct {
	Distinct, Renumber, Order, Plan time.Duration
}

// NewPlan prepares r × s (s == nil: the self-join of r) and picks the
// engine with the lowest estimated time among those that opt.Device and
// opt.Technique allow. When none can run the problem, the error says why
// for each, and the plan, if not nil, can still Explain.
func NewPlan(r, s *sets.Collection, opt Options) (*Plan, error) {
	choice, err := engine.Choice{Device: opt.Device, Technique: opt.Technique}.Normalize("simjoin", Techniques())
	if err != nil {
		return nil, err
	}
	if opt.Threads < 0 {
		return nil, fmt.Errorf("simjoin: negative Threads %d", opt.Threads)
	}
	if opt.Memory < 0 {
		return nil, fmt.Errorf("simjoin: negative Memory %d", opt.Memory)
	}
	threads := opt.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	memory := opt.Memory
	if memory == 0 {
		memory = sysinfo.Memory() / 2
	}
	start := time.Now()
	r, s, sh, err := cutTile(r, s, opt, threads)
	if err != nil {
		return nil, err
	}
	p, err := newProblem(r, s, opt, threads, memory)
	if err != nil {
		return nil, err
	}
	pl := &Plan{opt: opt, shift: sh, Phases: p.phases}
	pl.Problem = p
	planning := time.Now()
	pl.Candidates, pl.Chosen, err = engine.Choose(engine.Planning[*Problem, Engine]{
		Workload: "simjoin", Choice: choice, Problem: p, Engines: Engines(), Threads: p.Threads,
		Budget: p.Memory, Prepared: p.preparedBytes(),
	})
	pl.Prepare = time.Since(start)
	pl.Phases.Plan = time.Since(planning)
	if err != nil && len(pl.Candidates) == 0 {
		return nil, err
	}
	return pl, err
}

// preparedBytes is the memory of the prepared records, which the budget
// holds beside a CPU engine's estimate.
func (p *Problem) preparedBytes() int64 {
	n := p.R.bytes()
	if !p.Self {
		n += p.S.bytes()
	}
	return n
}

// run executes the plan with out.
func (pl *Plan) run(ctx context.Context, out *Output) error {
	if pl.Chosen.Err != nil {
		return pl.Chosen.Err
	}
	p := pl.Problem
	out.p = p
	out.notes = &pl.RunNotes
	out.progress = pl.opt.Progress
	out.total = int64(p.S.Len())
	if p.Self {
		out.total = int64(p.R.Len())
	}
	out.addEqualSets()
	err := out.Err()
	if err == nil {
		err = pl.Chosen.Engine.Run(ctx, p, out)
	}
	return engine.RunError(err, out.Err())
}

// Join runs the plan, calling fn with batches of pairs from several
// goroutines at once (fn must be safe for that); a batch is only valid
// during the call. An error from fn stops the join and is returned.
func (pl *Plan) Join(ctx context.Context, fn func([]Pair) error) error {
	return pl.run(ctx, &Output{sink: pl.shift.sink(fn)})
}

// Count runs the plan and returns the number of similar pairs.
func (pl *Plan) Count(ctx context.Context) (int64, error) {
	out := &Output{countOnly: true}
	err := pl.run(ctx, out)
	return out.count.Load(), err
}

// Collect runs the plan and returns its pairs sorted by I, then J.
func (pl *Plan) Collect(ctx context.Context) ([]Pair, error) {
	return engine.Collect(func(fn func([]Pair) error) error { return pl.Join(ctx, fn) }, SortPairs)
}

// SortPairs sorts pairs by I, then J.
func SortPairs(ps []Pair) {
	slices.SortFunc(ps, func(a, b Pair) int {
		if c := cmp.Compare(a.I, b.I); c != 0 {
			return c
		}
		return cmp.Compare(a.J, b.J)
	})
}

// Explain writes the problem's statistics, every engine's estimate (or why
// it cannot run) and the choice.
func (pl *Plan) Explain(w io.Writer) error {
	p := pl.Problem
	st := p.Stats
	var b strings.Builder
	kind := "self-join"
	if !p.Self {
		kind = "R x S join"
	}
	dup := "every set counts"
	if p.Distinct {
		dup = "equal sets count once (--distinct)"
	}
	t := p.Threshold
	fmt.Fprintf(&b, "problem      %s, %s >= %s (%.6g), %s\n", kind, t.Measure, t, t.Float(), dup)
	side := func(name string, s SideStats) {
		fmt.Fprintf(&b, "%-12s %d sets (%d empty), %d distinct records, %d elements, size avg %.1f max %d\n",
			name, s.Sets, s.Empty, s.Records, s.Elements, s.AvgSize, s.MaxSize)
	}
	side("sets", st.R)
	if !p.Self {
		side("with", st.S)
	}
	fmt.Fprintf(&b, "universe     %d distinct elements, max frequency %d\n", st.Universe, st.MaxDF)
	fmt.Fprintf(&b, "prepared in  %s (%d threads, memory budget %s): equal sets %s, renumbering %s, ordering %s, planning %s\n\n",
		engine.Seconds(pl.Prepare.Seconds()), p.Threads, engine.Bytes(p.Memory), engine.Seconds(pl.Phases.Distinct.Seconds()),
		engine.Seconds(pl.Phases.Renumber.Seconds()), engine.Seconds(pl.Phases.Order.Seconds()), engine.Seconds(pl.Phases.Plan.Seconds()))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return pl.WriteChoice(w)
}

// Memory is the CPU memory the plan holds and its engine is predicted to
// take at its peak: the prepared records and, for a CPU engine, its
// estimate.
func (pl *Plan) Memory() int64 {
	p := pl.Problem
	n := p.preparedBytes()
	if pl.Chosen.Err == nil && pl.Chosen.Device.Kind == engine.CPU {
		n += pl.Chosen.Estimate.Memory
	}
	return n
}
