package gpuallpairs

import (
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
func prepare(tb testing.TB, r, s *sets.Collection, q allpairs.Query) {
	pl, err := allpairs.NewPlan(r, s, q, allpairs.Options{Device: "cpu", CountOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	p := pl.Problem
	info := gpurt.StandIn()
	for _, e := range allpairs.Engines() {
		switch e := e.(type) {
		case *engine:
			planWith(p, e.t, e.tune, info, e.tune.budget(int64(info.Memory)), false)
		case mmjoinEngine:
			planMMJoin(p, mmjoinSplit(p, info, e.tune), info, e.tune, e.tune.budget(int64(info.Memory)), false, 1, 1)
		}
	}
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
