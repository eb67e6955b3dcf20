package overlap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/engine"

	"github.com/xsect/xsect/sets"
)

// Plan is a problem with the engine chosen to run it. Its Prepare is the
// time spent selecting, renumbering, measuring and estimating.
type Plan struct {
	engine.Plan[*Problem, Engine]
	opt Options
}

// Memory is the CPU memory the plan holds and its engine is predicted to
// take at its peak: the problem's Bytes and, for a CPU engine, its
// estimate.
func (pl *Plan) Memory() int64 {
	n := pl.Problem.Bytes
	if pl.Chosen.Err == nil && pl.Chosen.Device.Kind == CPU {
		n += pl.Chosen.Estimate.Memory
	}
	return n
}

// bounder is implemented by engines whose Estimate costs more than a look
// at the statistics (a measurement, a sample, a layout): lowerBound
// returns, in O(1), seconds that Estimate cannot go below, and 0 if it
// knows none. The planner asks for such estimates last, and not at all
// when an estimate already made is no higher than the bound.
type bounder interface {
	lowerBound(p *Problem) float64
}

// gpuStartup is what opening a GPU costs before any work: loading the
// driver, creating the context and loading the kernels (98 + 119 + 7 ms on
// the H100 host, docs/GPU.md). With Device "auto", GPU engines are not even
// opened when a CPU engine's estimate is below it.
const gpuStartup = 250 * time.Millisecond

// NewPlan measures r × s (s == nil: the self-join of r) for query q and
// picks the engine with the lowest estimated time among those that
// Options.Device and Options.Technique allow.
func NewPlan(r, s *sets.Collection, q Query, opt Options) (*Plan, error) {
	return newPlan(r, s, q, opt, 0, 0)
}

// NewTilePlan is NewPlan for dense tiles of at most rows × cols counts.
func NewTilePlan(r, s *sets.Collection, rows, cols int, opt Options) (*Plan, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("allpairs: tile shape %dx%d is not positive", rows, cols)
	}
	if int64(rows)*int64(cols) > 1<<31 {
		return nil, fmt.Errorf("allpairs: tile shape %dx%d is over 2^31 counts", rows, cols)
	}
	return newPlan(r, s, Query{}, opt, rows, cols)
}

func newPlan(r, s *sets.Collection, q Query, opt Options, rows, cols int) (*Plan, error) {
	choice, err := engine.Choice{Device: opt.Device, Technique: opt.Technique}.Normalize("allpairs", Techniques())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	p, err := newProblem(r, s, q, opt, rows, cols)
	if err != nil {
		return nil, err
	}
	plan := &Plan{opt: opt}
	plan.Problem = p
	engines := Engines()
	// CPU engines first: their estimates decide whether a GPU is worth
	// opening at all. Engines with a lower bound come after the others
	// of their kind, lowest bound first.
	type entry struct {
		e       Engine
		bound   float64
		bounded bool
	}
	order := make([]entry, len(engines))
	for i, e := range engines {
		order[i].e = e
		if b, ok := e.(bounder); ok {
			order[i].bound, order[i].bounded = b.lowerBound(p), true
		}
	}
	slices.SortStableFunc(order, func(a, b entry) int {
		if c := cmp.Compare(a.e.Kind(), b.e.Kind()); c != 0 {
			return c
		}
		if a.bounded != b.bounded {
			if b.bounded {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.bound, b.bound)
	})
	bestCPU, best := math.Inf(1), math.Inf(1)
	for _, en := range order {
		e := en.e
		// Filter before Device, which may open a GPU.
		if !choice.Allows(e.Name(), e.Kind()) {
			continue
		}
		if e.Kind() == GPU && choice.Device == "auto" && bestCPU < gpuStartup.Seconds() {
			plan.Candidates = append(plan.Candidates, Candidate{Engine: e, Device: Device{Kind: GPU, Name: "not opened"},
				Err: cannot("not tried: the CPU's estimate, %v, is under the %v it takes to start a GPU",
					time.Duration(bestCPU*float64(time.Second)).Round(time.Millisecond), gpuStartup)})
			continue
		}
		d, derr := DeviceOf(e, p)
		c := Candidate{Engine: e, Device: d, Err: engine.Unavailable(derr)}
		if b := en.bound; c.Err == nil && b > 0 && b >= best {
			c.Bounded = true
			c.Estimate = Estimate{Seconds: b, Detail: "not estimated: at least this, and another estimate is lower"}
			plan.Candidates = append(plan.Candidates, c)
			continue
		}
		if c.Err == nil {
			c.Estimate, c.Err = e.Estimate(p)
		}
		c.CheckMemory(p.memoryLeft())
		if c.Err == nil {
			best = min(best, c.Estimate.Seconds)
			if d.Kind == CPU {
				bestCPU = min(bestCPU, c.Estimate.Seconds)
			}
		}
		plan.Candidates = append(plan.Candidates, c)
	}
	plan.Prepare = time.Since(start)
	engine.Rank(plan.Candidates)
	plan.Chosen, err = engine.Pick("allpairs", choice, plan.Candidates)
	if err != nil && len(plan.Candidates) == 0 {
		return nil, err
	}
	plan.Chosen.Device = plan.Chosen.Device.OnThreads(p.Threads)
	return plan, err
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
	if p.Stats.Pairs == 0 {
		return nil
	}
	return engine.RunError(pl.Chosen.Engine.Run(ctx, p, out), out.Err())
}

// Join runs a pair plan, calling fn with batches of pairs (see the package
// function Join for the contract).
func (pl *Plan) Join(ctx context.Context, fn func([]Pair) error) error {
	if _, _, ok := pl.Problem.Tiled(); ok {
		return errors.New("allpairs: Join on a tile plan")
	}
	return pl.run(ctx, &Output{sink: fn})
}

// Count runs a pair plan and returns the number of qualifying pairs.
func (pl *Plan) Count(ctx context.Context) (int64, error) {
	if _, _, ok := pl.Problem.Tiled(); ok {
		return 0, errors.New("allpairs: Count on a tile plan")
	}
	out := &Output{countOnly: true}
	err := pl.run(ctx, out)
	return out.count.Load(), err
}

// Collect runs a pair plan and returns its pairs sorted by I, then J.
func (pl *Plan) Collect(ctx context.Context) ([]Pair, error) {
	return engine.CollectPairs(func(fn func([]Pair) error) error { return pl.Join(ctx, fn) })
}

// Tiles runs a tile plan (see the package function Tiles).
func (pl *Plan) Tiles(ctx context.Context, fn func(*Tile) error) error {
	if _, _, ok := pl.Problem.Tiled(); !ok {
		return errors.New("allpairs: Tiles on a pair plan")
	}
	return pl.run(ctx, &Output{tileFn: fn})
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
	what := fmt.Sprintf("overlap >= %d", p.Query.MinOverlap)
	if rows, cols, ok := p.Tiled(); ok {
		what = fmt.Sprintf("dense tiles of %dx%d counts", rows, cols)
	} else if p.Query.IsContainment() {
		what = fmt.Sprintf("containment degree >= %s (%.6g)", p.Query.Containment, p.Query.Containment.Float())
		if p.Query.MinOverlap > 0 {
			what += fmt.Sprintf(", overlap >= %d", p.Query.MinOverlap)
		}
	}
	fmt.Fprintf(&b, "problem      %s, %s\n", kind, what)
	side := func(name string, s SideStats) {
		fmt.Fprintf(&b, "%-12s %d sets", name, s.Sets)
		if s.Dropped > 0 {
			fmt.Fprintf(&b, " (of %d)", s.Original)
		}
		fmt.Fprintf(&b, ", %d elements, size min %d avg %.1f max %d\n", s.Elements, s.MinSize, s.AvgSize, s.MaxSize)
	}
	side("sets", st.R)
	if !p.Self {
		side("with", st.S)
	}
	fmt.Fprintf(&b, "universe     %d distinct elements, density %.3g, skew %.3g, max df %d\n", st.Universe, st.Density, st.Skew, st.MaxDF)
	fmt.Fprintf(&b, "work         %d pairs, scan-count %.3g increments, merge %.3g steps\n", st.Pairs, float64(st.ScanWork), st.MergeWork)
	fmt.Fprintf(&b, "prepared in  %s (%d threads, memory budget %s, %s of it for the prepared sets)\n\n", secondsString(pl.Prepare.Seconds()), p.Threads, bytesString(p.Memory), bytesString(p.Bytes))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return pl.WriteChoice(w)
}

func secondsString(s float64) string { return engine.Seconds(s) }

func bytesString(n int64) string { return engine.Bytes(n) }
