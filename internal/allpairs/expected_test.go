package allpairs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xsect/xsect/sets"
)

// TestExpectedPairs checks the estimate of the pairs a problem reports
// against the reference: exact where every pair that can qualify is in
// the sample (adversarial and small problems, containment among them),
// within 15% on problems sampled at random, uniform and skewed.
func TestExpectedPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	empty := sets.New()
	one := sets.New()
	one.Add([]uint32{0, math.MaxUint32})
	same := sets.New()
	for range 40 {
		same.Add([]uint32{1, 5, 9, math.MaxUint32})
	}
	disjoint := sets.New()
	for i := range 40 {
		disjoint.Add([]uint32{uint32(2 * i), uint32(2*i + 1)})
	}
	exact := []struct {
		name string
		r, s *sets.Collection
		q    Query
	}{
		{"empty", empty, nil, Query{MinOverlap: 1}},
		{"one set", one, nil, Query{MinOverlap: 1}},
		{"one x one", one, one, Query{MinOverlap: 2}},
		{"identical", same, nil, Query{MinOverlap: 4}},
		{"identical, over their size", same, nil, Query{MinOverlap: 5}},
		{"disjoint", disjoint, nil, Query{MinOverlap: 1}},
		{"disjoint, overlap 0", disjoint, nil, Query{}},
		{"random", randomCollection(rng, 60, 200, 40), nil, Query{MinOverlap: 3}},
		{"random join", randomCollection(rng, 50, 100, 30), randomCollection(rng, 70, 100, 30), Query{MinOverlap: 4}},
		{"containment", randomCollection(rng, 80, 60, 20), nil, Query{Containment: Ratio{1, 2}}},
		{"containment join", randomCollection(rng, 60, 60, 20), randomCollection(rng, 50, 60, 20), Query{Containment: Ratio{2, 3}, MinOverlap: 2}},
	}
	for _, c := range exact {
		t.Run(c.name, func(t *testing.T) {
			got := expectedOf(t, c.r, c.s, c.q)
			want := len(refPairs(c.r, c.s, c.q))
			if got != float64(want) {
				t.Fatalf("expected %g pairs, the reference has %d", got, want)
			}
		})
	}
	sampled := []struct {
		name string
		r    *sets.Collection
		q    Query
	}{
		{"uniform", randomCollection(rng, 1500, 2000, 120), Query{MinOverlap: 3}},
		{"skewed", skewedCollection(rng, 1500, 4000), Query{MinOverlap: 4}},
		{"skewed containment", skewedCollection(rng, 1500, 4000), Query{Containment: Ratio{1, 5}}},
	}
	for _, c := range sampled {
		t.Run(c.name, func(t *testing.T) {
			got := expectedOf(t, c.r, nil, c.q)
			want := float64(len(refPairs(c.r, nil, c.q)))
			if n := c.r.Len(); want < 0.01*float64(n*(n-1)/2) {
				t.Fatalf("%g of the pairs qualify: too few for the test", want)
			}
			if math.Abs(got-want) > 0.15*want {
				t.Fatalf("expected %.0f pairs, the reference has %.0f", got, want)
			}
			t.Logf("expected %.0f pairs, the reference has %.0f", got, want)
		})
	}
}

// expectedOf is ExpectedPairs of r × s (s == nil: r's self-join) for q.
func expectedOf(t *testing.T, r, s *sets.Collection, q Query) float64 {
	t.Helper()
	p, err := newProblem(r, s, q, Options{Device: "cpu"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := p.ExpectedPairs()
	if again := p.ExpectedPairs(); again != got {
		t.Fatalf("ExpectedPairs gave %g, then %g", got, again)
	}
	return got
}

// TestReportSeconds checks that only pairs handed to the caller cost a
// report (a count or a tile plan has none), over the threads down to the
// output's pace.
func TestReportSeconds(t *testing.T) {
	r := randomCollection(rand.New(rand.NewPCG(73, 74)), 200, 300, 40)
	for _, c := range []struct {
		opt        Options
		rows, cols int
		report     bool
	}{
		{Options{Device: "cpu"}, 0, 0, true},
		{Options{Device: "cpu", CountOnly: true}, 0, 0, false},
		{Options{Device: "cpu"}, 64, 64, false},
	} {
		t.Run(fmt.Sprintf("count=%v tiles=%d", c.opt.CountOnly, c.rows), func(t *testing.T) {
			p, err := newProblem(r, nil, Query{MinOverlap: 1}, c.opt, c.rows, c.cols)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ReportSeconds(); (got > 0) != c.report {
				t.Fatalf("report %.3g s, want one: %v", got, c.report)
			}
		})
	}
	p, err := newProblem(r, nil, Query{MinOverlap: 1}, Options{Device: "cpu"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	pairs := p.ExpectedPairs()
	for _, c := range []struct {
		threads int
		ns      float64
	}{
		{1, costs.report},
		{2, costs.report / 2},
		{1 << 20, costs.reportFloor},
	} {
		p.Threads = c.threads
		if got, want := p.ReportSeconds(), pairs*c.ns/1e9; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%d threads: report %.6g s, want %.6g", c.threads, got, want)
		}
	}
}
