package pairs

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/plantest"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// validateShape is one problem of the validation: transactions and a
// support (as ParseSupport reads it).
type validateShape struct {
	name    string
	data    func(testing.TB) *sets.Collection
	support string
}

func realTx(name string) func(testing.TB) *sets.Collection {
	return func(t testing.TB) *sets.Collection {
		c, err := setio.Load(settest.SharedData(t, name))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func bernoulliTx(n int, p float64, occurrences int64) func(testing.TB) *sets.Collection {
	return func(t testing.TB) *sets.Collection {
		c, err := synth.GenerateBernoulli(n, p, occurrences, 7)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// validationShapes are problems the cost model was NOT fitted on (it was
// fitted on retail, T10I4D100K and kosarak at 0.1% and 0.01%, and on the
// BATMAP paper's instances: p = 5%, 10^7 occurrences, support 0.3%): other
// real data (hypergraphs, graphs, other FIMI files, IR), Bernoulli
// instances of other densities and sizes, and Zipf baskets.
var validationShapes = []validateShape{
	{"soc-Epinions1 5", realTx("graphs/soc-Epinions1.adj"), "5"},
	{"cit-HepTh 3", realTx("graphs/cit-HepTh.adj"), "3"},
	{"threads-math-sx 2", realTx("hypergraphs/threads-math-sx.dedup.sets"), "2"},
	{"tags-math-sx 2", realTx("hypergraphs/tags-math-sx.dedup.sets"), "2"},
	{"congress-bills 0.1%", realTx("hypergraphs/congress-bills.dedup.sets"), "0.1%"},
	{"BMS2 0.005%", realTx("fimi/BMS2.dat"), "0.005%"},
	{"accidents10k 0.1%", realTx("fimi/accidents_head10k.dat"), "0.1%"},
	{"gcide 0.05%", realTx("ir/gcide/gcide.docs.sets.gz"), "0.05%"},
	{"bernoulli n=3000 p=2% 1e7 0.1%", bernoulliTx(3000, 0.02, 1e7), "0.1%"},
	{"bernoulli n=500 p=20% 2e7 1%", bernoulliTx(500, 0.2, 2e7), "1%"},
	{"bernoulli n=1000 p=10% 2e7 0.5%", bernoulliTx(1000, 0.1, 2e7), "0.5%"},
	{"bernoulli n=20000 p=1% 2e7 0.5%", bernoulliTx(20000, 0.01, 2e7), "0.5%"},
	{"zipf 400000x20/1e5 0.005%", plantest.Synth(synth.Config{Sets: 400000, Universe: 1e5, AvgSize: 20, Dist: synth.Zipf}), "0.005%"},
	{"uniform 100000x40/2000 0.5%", plantest.Synth(synth.Config{Sets: 100000, Universe: 2000, AvgSize: 40, Dist: synth.Uniform}), "0.5%"},
}

// fitShapes are data the reference costs were fitted on.
var fitShapes = []validateShape{
	{"fit retail 0.01%", realTx("fimi/retail.dat"), "0.01%"},
	{"fit T10I4D100K 0.01%", realTx("fimi/T10I4D100K.dat"), "0.01%"},
	{"fit kosarak 0.01%", realTx("fimi/kosarak_head36682.dat"), "0.01%"},
	{"fit bernoulli n=4000 p=5% 1e7 0.3%", bernoulliTx(4000, 0.05, 1e7), "0.3%"},
}

// TestValidate times, on every validation problem, the planner's choice
// (auto: preparation, estimates and probe included) against every CPU
// engine forced, all threads, pairs counted, -validate-reps times each in
// turns (internal/plantest), and prints per problem each engine's estimate
// (with the probe's costs where auto probed) and its median, min and max
// wall time, then auto / the fastest and their geometric mean and maximum
// over the problems whose fastest takes 0.25 s or more. It needs
// -validate; it fails nothing on timings, only on errors.
//
//	go test ./internal/pairs -run Validate -validate -v -timeout 3h
func TestValidate(t *testing.T) {
	shapes := plantest.Select(t, validationShapes, fitShapes, func(sh validateShape) string { return sh.name })
	fmt.Printf("machine: %s, %d threads\n\n", sysinfo.CPUName(), runtime.GOMAXPROCS(0))
	var results []plantest.Result
	for _, sh := range shapes {
		tx := sh.data(t)
		s, err := ParseSupport(sh.support, tx.Len())
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{MinSupport: s, Device: "cpu", CountOnly: true}
		auto, err := NewPlan(tx, opt)
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		prob := plantest.Problem{Name: sh.name, Choice: auto.Engine.Name(), Threads: auto.Data.Threads,
			Run: func(ctx context.Context, engine string) (float64, error) {
				o := opt
				if engine != plantest.Auto {
					o.Technique = engine
				}
				plan, err := NewPlan(tx, o)
				if err != nil {
					return 0, err
				}
				_, err = plan.Run(ctx, func([]Pair) error { return nil })
				for _, c := range plan.Candidates {
					// By name and device: an engine's value may not be
					// comparable (batmap's holds its layout).
					if c.Engine.Name() == plan.Engine.Name() && c.Engine.Kind() == plan.Engine.Kind() {
						return c.Estimate.Seconds, err
					}
				}
				return 0, err
			}}
		for _, c := range auto.Candidates {
			if c.Err == nil && c.Engine.Kind() == engine.CPU {
				prob.Engines = append(prob.Engines, plantest.Engine{Name: c.Engine.Name(), Estimate: c.Estimate.Seconds})
			}
		}
		res, err := plantest.Time(os.Stdout, prob, plantest.Reps())
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	if err := plantest.Summarize(os.Stdout, results, 0.25); err != nil {
		t.Fatal(err)
	}
}
