package allpairs

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// knows none (engine.Planning.Bound).
type bounder interface {
	lowerBound(p *Problem) float64
}

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
	estimating := time.Now()
	plan.Candidates, plan.Chosen, err = engine.Choose(engine.Planning[*Problem, Engine]{
		Workload: "allpairs", Choice: choice, Problem: p, Engines: Engines(), Threads: p.Threads, Budget: p.memoryLeft(),
		DeviceOf: func(e Engine) (Device, error) { return DeviceOf(e, p) },
		Bound: func(e Engine) (float64, bool) {
			if b, ok := e.(bounder); ok {
				return b.lowerBound(p), true
			}
			return 0, false
		},
	})
	plan.Prepare, plan.Estimating = time.Since(start), time.Since(estimating)
	if err != nil && len(plan.Candidates) == 0 {
		return nil, err
	}
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
	if report := p.ReportSeconds(); report > 0 {
		fmt.Fprintf(&b, "report       about %.3g pairs qualify (a sample), %s to report them\n", p.ExpectedPairs(), secondsString(report))
	}
	fmt.Fprintf(&b, "prepared in  %s (the sets %s, the estimates %s; %d threads, memory budget %s, %s of it for the prepared sets)\n\n",
		secondsString(pl.Prepare.Seconds()), secondsString((pl.Prepare - pl.Estimating).Seconds()), secondsString(pl.Estimating.Seconds()),
		p.Threads, bytesString(p.Memory), bytesString(p.Bytes))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return pl.WriteChoice(w)
}

func secondsString(s float64) string { return engine.Seconds(s) }

func bytesString(n int64) string { return engine.Bytes(n) }
