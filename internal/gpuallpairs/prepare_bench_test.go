package gpuallpairs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// prepareShape is a collection that xsect allpairs prepares: the
// look-alikes of Table 1 that the GPU host runs, at full size for the
// benchmark and cut down for the test.
type prepareShape struct {
	name     string
	sets     int
	avg      int
	universe uint64
	dist     synth.Dist
}

var prepareShapes = []prepareShape{
	{"enron-100k", 100000, 258, 1100000, synth.Zipf},
	{"orkut-100k", 100000, 905, 8700000, synth.Zipf},
	{"twitter-100k", 100000, 140, 37000, synth.Zipf},
	{"words-100k", 100000, 2021, 11000, synth.Uniform},
}

func (sh prepareShape) generate(tb testing.TB) *sets.Collection {
	tb.Helper()
	c, err := synth.Generate(synth.Config{Sets: sh.sets, Universe: sh.universe, AvgSize: sh.avg, Dist: sh.dist, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// prepare is what xsect allpairs --count-only does before it runs: the
// problem and the estimates of every engine, the CPU's through the
// planner and the GPU's as their Estimate makes them once the GPUs are
// open, on the stand-in device (gpurt.StandIn) with all its memory free.
// It returns every estimate, or why the engine cannot run, one a line.
func prepare(tb testing.TB, r, s *sets.Collection, q allpairs.Query) string {
	pl, err := allpairs.NewPlan(r, s, q, allpairs.Options{Device: "cpu", CountOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	// The candidates by name: prefix times a sample of its verifications,
	// so its seconds, and with them the ranking, vary from run to run.
	var lines []string
	for _, cd := range pl.Candidates {
		sec := fmt.Sprint(cd.Estimate.Seconds)
		if cd.Engine.Name() == "prefix" && !cd.Bounded {
			sec = "(timed)"
		}
		lines = append(lines, fmt.Sprintf("%s %s %d %q %v %v\n", cd.Engine.Name(), sec, cd.Estimate.Memory, cd.Estimate.Detail, cd.Err, cd.Bounded))
	}
	slices.Sort(lines)
	var b strings.Builder
	b.WriteString(strings.Join(lines, ""))
	fmt.Fprintf(&b, "chosen %s\n", pl.Chosen.Engine.Name())
	p := pl.Problem
	info := gpurt.StandIn()
	for _, e := range allpairs.Engines() {
		var est allpairs.Estimate
		var err error
		switch e := e.(type) {
		case *engine:
			var rp *runPlan
			if rp, err = planWith(p, e.t, e.tune, info, e.tune.budget(int64(info.Memory)), false); err == nil {
				est = allpairs.Estimate{Seconds: rp.seconds, Memory: rp.memory, Detail: rp.detail}
			}
		case mmjoinEngine:
			sp := mmjoinSplit(p, info, e.tune)
			var m *mjPlan
			if m, err = planMMJoin(p, sp, info, e.tune, e.tune.budget(int64(info.Memory)), false, 1, 1); err == nil {
				est = allpairs.Estimate{Seconds: m.seconds, Memory: m.memory, Detail: fmt.Sprintf("%d %d %d %v %v %v", sp.Delta1, m.hr, len(sp.Columns), m.cpu, m.gpu, m.transfers)}
			}
		default:
			continue
		}
		fmt.Fprintf(&b, "gpu %s %v %d %q %v\n", e.Name(), est.Seconds, est.Memory, est.Detail, err)
	}
	return b.String()
}

// BenchmarkPrepare times prepare on the full-size shapes: what the GPU
// host's xsect allpairs waits for before its run can start.
func BenchmarkPrepare(b *testing.B) {
	for _, sh := range prepareShapes {
		b.Run(sh.name, func(b *testing.B) {
			c := sh.generate(b)
			for b.Loop() {
				prepare(b, c, nil, allpairs.Query{MinOverlap: 1})
			}
		})
	}
}

// sliceSets returns sets lo..hi of c as a collection of their own.
func sliceSets(c *sets.Collection, lo, hi int) *sets.Collection {
	out := sets.New()
	for i := lo; i < hi; i++ {
		out.Add(c.Set(i))
	}
	return out
}
