package simjoin

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// mannData are the real data sets with Mann et al.'s exact counts at
// mannThresholds (simjointest.MannData).
var mannData = simjointest.MannData

var mannThresholds = simjointest.Thresholds

// loadData returns a real data set, or skips the test or benchmark when
// the shared data are not there.
func loadData(tb testing.TB, file string) *sets.Collection { return simjointest.Load(tb, file) }

// TestMannCounts: every algorithm finds Mann et al.'s counts on the real
// data sets, and the same pairs.
func TestMannCounts(t *testing.T) {
	for _, d := range mannData {
		c := loadData(t, d.File)
		for i, ts := range mannThresholds {
			if testing.Short() && (i < 2 || d.Large && i < 3) {
				continue
			}
			th := mustThreshold(t, Jaccard, ts)
			algs := algorithms
			if d.Large && i < 2 {
				algs = []string{"auto"}
			}
			var first []Pair
			for _, alg := range algs {
				pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg, Distinct: true})
				if err != nil {
					t.Fatal(err)
				}
				n, err := pl.Count(context.Background())
				if err != nil || n != d.Pairs[i] {
					t.Errorf("%s at %s, %s: %d pairs, %v; want %d", d.Name, ts, alg, n, err, d.Pairs[i])
				}
				if d.Pairs[i] > 20000 {
					continue
				}
				pl, _ = NewPlan(c, nil, Options{Threshold: th, Technique: alg, Distinct: true})
				ps, err := pl.Collect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					a, b := c.Set(int(p.I)), c.Set(int(p.J))
					if !th.Reached(p.Overlap, uint32(len(a)), uint32(len(b))) || int(p.Overlap) != countMerge(a, b) {
						t.Fatalf("%s at %s, %s: pair %+v is wrong", d.Name, ts, alg, p)
					}
				}
				if first == nil {
					first = ps
				} else {
					simjointest.ComparePairs(t, fmt.Sprintf("%s at %s, %s against %s", d.Name, ts, alg, algs[0]), ps, first)
				}
			}
		}
	}
}

// countMerge is a plain merge count, for checking real data pairs.
func countMerge(a, b []uint32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// TestRealDataEverySet: without Distinct every pair of sets counts, equal
// ones included: on the first 2000 sets of kosarak, which repeat some, the
// pairs are the reference's.
func TestRealDataEverySet(t *testing.T) {
	all := loadData(t, "fimi/kosarak_head36682.dat")
	c := sets.New()
	for i := range 2000 {
		c.Add(all.Set(i))
	}
	for _, ts := range []string{"0.6", "0.9"} {
		th := mustThreshold(t, Jaccard, ts)
		want := reference(c, nil, th, false)
		if len(want) < 1000 {
			t.Fatalf("only %d pairs at %s: the test needs equal sets", len(want), ts)
		}
		for _, alg := range algorithms {
			pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg})
			if err != nil {
				t.Fatal(err)
			}
			got, err := pl.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			simjointest.ComparePairs(t, "kosarak's first 2000 sets at "+ts+", "+alg, got, want)
		}
	}
}

// anchorData reports whether the data set is one of the five of the
// issue's anchor (Mann et al.'s best times in ../shared/NOTES.md).
func anchorData(name string) bool {
	switch name {
	case "BMS2", "retail", "kosarak", "tags-math-sx", "gcide":
		return true
	}
	return false
}

// benchPhases sums the phases of a benchmark's joins.
type benchPhases struct{ Phases }

func (ph *benchPhases) add(p Phases) {
	ph.Distinct += p.Distinct
	ph.Renumber += p.Renumber
	ph.Order += p.Order
	ph.Plan += p.Plan
}

// report reports where the time of each join went, in ms; with run (the
// runs' time) also the planning and the run, which the preparation alone
// leaves out.
func (ph *benchPhases) report(b *testing.B, run *time.Duration) {
	ms := func(d time.Duration, unit string) { b.ReportMetric(d.Seconds()*1e3/float64(b.N), unit) }
	ms(ph.Distinct, "equal-ms")
	ms(ph.Renumber, "renumber-ms")
	ms(ph.Order, "order-ms")
	if run != nil {
		ms(ph.Plan, "plan-ms")
		ms(*run, "run-ms")
	}
}

// BenchmarkMann times a whole join as the targets count it: from
// the loaded collection (preparation included) to the number of pairs,
// with equal sets once, on the five data sets of Mann et al.'s anchor,
// and where the time goes: finding equal sets, renumbering, building and
// ordering the records, planning and the run. Run with -cpu 1,2 for one
// core and two.
func BenchmarkMann(b *testing.B) {
	for _, ts := range []string{"0.5", "0.7"} {
		for _, d := range mannData {
			if !anchorData(d.Name) {
				continue
			}
			i := 0
			if ts == "0.7" {
				i = 1
			}
			for _, alg := range []string{"auto", "allpairs", "ppjoin", "groupjoin", "pairjoin"} {
				b.Run(fmt.Sprintf("t=%s/%s/%s", ts, d.Name, alg), func(b *testing.B) {
					c := loadData(b, d.File)
					th := mustThreshold(b, Jaccard, ts)
					var ph benchPhases
					var run time.Duration
					for b.Loop() {
						pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg, Distinct: true})
						if err != nil {
							b.Fatal(err)
						}
						start := time.Now()
						n, err := pl.Count(context.Background())
						if err != nil || n != d.Pairs[i] {
							b.Fatalf("%d pairs, %v; want %d", n, err, d.Pairs[i])
						}
						run += time.Since(start)
						ph.add(pl.Phases)
					}
					ph.report(b, &run)
				})
			}
		}
	}
}

// TestEstimatesSparePairIndex checks that where PairJoin's estimate comes
// from PPJoin's sample (its pair index would not pay), no other estimate
// builds that index either: on BMS2 at 0.7, GroupJoin's compares itself
// with PairJoin's, and CandidateWork serves the GPU engines.
func TestEstimatesSparePairIndex(t *testing.T) {
	c := loadData(t, "fimi/BMS2.dat")
	p, err := newProblem(c, nil, Options{Threshold: mustThreshold(t, Jaccard, "0.7"), Distinct: true}, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pairEstimate(p); !ok {
		t.Fatal("BMS2 at 0.7: PairJoin's estimate samples its pair index; this test wants a problem where it does not")
	}
	for _, e := range []cpuFilter{{"pairjoin", pairJoin}, {"groupjoin", groupJoin}} {
		if _, err := e.Estimate(p); err != nil {
			t.Fatal(err)
		}
	}
	// Nor do the GPU engines' estimates, which start from CandidateWork.
	for _, tech := range []string{"pairjoin", "groupjoin"} {
		for _, nb := range []bool{false, true} {
			if _, err := CandidateWork(p, Filter{Technique: tech, NoBitmap: nb}); err != nil {
				t.Fatal(err)
			}
		}
	}
	unbuilt := new(pairFilter)
	if p.Memo("simjoin.pairs", func() any { return unbuilt }) != unbuilt {
		t.Error("the estimates built PairJoin's pair index")
	}
}

// BenchmarkPrepare times the preparation alone (equal sets, renumbering,
// ordering) on the data sets of BenchmarkMann, at Jaccard 0.5.
func BenchmarkPrepare(b *testing.B) {
	for _, d := range mannData {
		if !anchorData(d.Name) {
			continue
		}
		b.Run(d.Name, func(b *testing.B) {
			c := loadData(b, d.File)
			th := mustThreshold(b, Jaccard, "0.5")
			var ph benchPhases
			for b.Loop() {
				p, err := newProblem(c, nil, Options{Threshold: th, Distinct: true}, runtime.GOMAXPROCS(0), 1<<30)
				if err != nil {
					b.Fatal(err)
				}
				ph.add(p.phases)
			}
			ph.report(b, nil)
		})
	}
}
