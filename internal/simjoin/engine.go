package simjoin

import (
	"context"
	"fmt"

	"github.com/xsect/xsect/internal/engine"
)

// Engine is one technique on one device: Run reports every similar pair of
// records of the problem, exactly once, through writers of out (in a
// self-join each unordered pair once), and returns soon after ctx is done
// or out.Err() is set. Estimate predicts the time and the peak memory of
// Run.
//
// A GPU engine is another Engine of the same name on a GPU: it filters on
// the CPU with Candidates and verifies the batches on its device.
type Engine = engine.Engine[*Problem, *Output]

// Candidate is one engine's answer to the planner.
type Candidate = engine.Candidate[Engine]

// ErrCannotRun is wrapped by the errors of techniques or devices that
// cannot run a problem.
var ErrCannotRun = engine.ErrCannotRun

var registered = engine.NewRegistry[Engine]("simjoin")

// Register adds an engine for the planner; a GPU engine's package calls it
// from init. It panics if an engine with the same name and device kind is
// already registered.
func Register(e Engine) { registered.Register(e) }

// Engines returns the registered engines.
func Engines() []Engine { return registered.Engines() }

// Techniques returns the names of the registered techniques, sorted.
func Techniques() []string { return registered.Names() }

// cpuFilter is a filter-verification algorithm run on the CPU, filtering
// and verifying on every core.
type cpuFilter struct {
	name string
	alg  algorithm
}

func init() {
	Register(cpuFilter{"allpairs", allPairs})
	Register(cpuFilter{"ppjoin", ppJoin})
	Register(cpuFilter{"groupjoin", groupJoin})
	Register(cpuFilter{"pairjoin", pairJoin})
}

func (e cpuFilter) Name() string { return e.name }

func (cpuFilter) Kind() engine.Kind { return engine.CPU }

func (cpuFilter) Device() (engine.Device, error) { return engine.CPUDevice(), nil }

func (e cpuFilter) Estimate(p *Problem) (engine.Estimate, error) {
	if e.alg == groupJoin {
		// Where records hardly group, GroupJoin is PPJoin with groups
		// to build: say so without building its index.
		groups, records := problemGroups(p)
		w := work(p, ppJoin)
		if groups*10 >= records*9 {
			return engine.Estimate{Seconds: w.seconds(p)*1.05 + float64(w.elements)*costGroupElem*1e-9, Memory: w.memory(p),
				Detail: fmt.Sprintf("PPJoin's work: %d groups of %d records", groups, records)}, nil
		}
		if least, skip := groupJoinLeast(p, groups, records); skip {
			return engine.Estimate{Seconds: least, Memory: w.memory(p),
				Detail: fmt.Sprintf("at least 0.8 of PPJoin's work over %d groups of %d records (not sampled)", groups, records)}, nil
		}
	}
	if e.alg == allPairs {
		// AllPairs walks the lists that PPJoin walks, and keeps every
		// candidate that PPJoin keeps (it lacks the positional filter) to
		// a weaker bound: in the cost model it never beats PPJoin, so
		// PPJoin's sample stands for its own.
		w := work(p, ppJoin)
		return engine.Estimate{Seconds: w.seconds(p) * 1.02, Memory: w.memory(p),
			Detail: fmt.Sprintf("at least PPJoin's work: %.3g list entries, without the positional filter (not sampled)", w.entries)}, nil
	}
	if e.alg == pairJoin {
		if est, ok := pairEstimate(p); ok {
			return est, nil
		}
	}
	w := work(p, e.alg)
	return engine.Estimate{Seconds: w.seconds(p), Memory: w.memory(p), Detail: w.detail()}, nil
}

// problemGroups returns the number of GroupJoin's groups of both sides
// of p and of their records, counted once.
func problemGroups(p *Problem) (groups, records int) {
	g := p.Memo("simjoin.groups.count", func() any {
		groups, records := countGroups(p.R, problemBounds(p)), p.R.Len()
		if !p.Self {
			groups, records = groups+countGroups(p.S, problemBounds(p)), records+p.S.Len()
		}
		return [2]int{groups, records}
	}).([2]int)
	return g[0], g[1]
}

// groupJoinLeast returns a lower bound of GroupJoin's time on p, whose
// records form groups of records, and whether it already loses to PPJoin
// or PairJoin: then GroupJoin's index is not built for a sample. A group
// walks the lists of one of its records: GroupJoin does at least about
// PPJoin's work over the groups (0.8 of it, in TestCalibrate's runs, and
// often much more).
func groupJoinLeast(p *Problem, groups, records int) (float64, bool) {
	w := work(p, ppJoin)
	least := 0.8 * w.seconds(p) * float64(groups) / float64(records)
	return least, least > min(w.seconds(p), pairSeconds(p))
}

func (e cpuFilter) Run(ctx context.Context, p *Problem, out *Output) error {
	return newJoin(p, out, e.alg).run(ctx)
}

// pairSeconds is PairJoin's estimated time, as its Estimate says: from
// PPJoin's sample where its pair index would not pay, which it then does
// not build.
func pairSeconds(p *Problem) float64 {
	if est, ok := pairEstimate(p); ok {
		return est.Seconds
	}
	return work(p, pairJoin).seconds(p)
}
