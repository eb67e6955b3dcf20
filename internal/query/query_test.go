package query_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
	"github.com/xsect/xsect/internal/query/querytest"
	"github.com/xsect/xsect/sets"
)

func TestCPUReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ n, terms, maxLen, ratio int }{
		{0, 1, 0, 0}, {1, 3, 2, 0}, {100, 20, 5, 0}, {700, 200, 10, 0}, {700, 200, 10, -1}, {700, 50, 10, 2}, {3000, 40, 6, 64},
	} {
		docs := querytest.RandomDocs(rng, tc.n, tc.terms, tc.maxLen)
		ix, err := invindex.FromDocs(docs, invindex.BuildOptions{DenseRatio: tc.ratio})
		if err != nil {
			t.Fatal(err)
		}
		qs := querytest.AdversarialQueries(rng, ix.Terms(), 300)
		for _, threads := range []int{1, 3} {
			c := query.NewCPU(ix, threads)
			for _, limit := range []int{-1, 0, 1, 3} {
				for _, countOnly := range []bool{false, true} {
					res := make([]query.Result, len(qs))
					// Stale results must be overwritten.
					for i := range res {
						res[i] = query.Result{Count: 99, IDs: []uint32{7, 8, 9}}
					}
					if err := c.Search(context.Background(), qs, limit, countOnly, res); err != nil {
						t.Fatal(err)
					}
					querytest.CheckResults(t, docs, qs, res, limit, countOnly)
				}
			}
		}
	}
}

// TestCPUManyQueries runs a batch large enough for every goroutine.
func TestCPUManyQueries(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	docs := querytest.RandomDocs(rng, 2000, 100, 8)
	ix, err := invindex.FromDocs(docs, invindex.BuildOptions{DenseRatio: 8})
	if err != nil {
		t.Fatal(err)
	}
	qs := querytest.AdversarialQueries(rng, ix.Terms(), 5000)
	res := make([]query.Result, len(qs))
	if err := query.NewCPU(ix, 4).Search(context.Background(), qs, 5, false, res); err != nil {
		t.Fatal(err)
	}
	querytest.CheckResults(t, docs, qs, res, 5, false)
}

func TestCPUErrors(t *testing.T) {
	ix, _ := invindex.FromDocs(sets.FromSets([]uint32{1}), invindex.BuildOptions{})
	c := query.NewCPU(ix, 2)
	if err := c.Search(context.Background(), make([]query.Query, 2), -1, false, make([]query.Result, 1)); err == nil {
		t.Error("mismatched results accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	qs := make([]query.Query, 5000)
	if err := c.Search(ctx, qs, -1, false, make([]query.Result, len(qs))); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestPrepare(t *testing.T) {
	docs := sets.FromSets([]uint32{0, 1, 2}, []uint32{0, 2}, []uint32{0}, []uint32{3})
	ix, _ := invindex.FromDocs(docs, invindex.BuildOptions{})
	// Lengths: term 0: 3, term 1: 1, term 2: 2, term 3: 1.
	for _, tc := range []struct {
		in   []uint32
		want []uint32
		ok   bool
	}{
		{nil, nil, false}, {[]uint32{0}, []uint32{0}, true}, {[]uint32{0, 2, 1}, []uint32{1, 2, 0}, true},
		{[]uint32{3, 1, 3, 1}, []uint32{1, 3}, true}, {[]uint32{0, 4}, nil, false}, {[]uint32{invindex.NoTerm}, nil, false},
	} {
		got, ok := query.Prepare(ix, query.Query{Terms: tc.in}, nil)
		if ok != tc.ok || ok && !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPlan(t *testing.T) {
	ix, _ := invindex.FromDocs(sets.FromSets([]uint32{1, 2}), invindex.BuildOptions{})
	w := &query.Workload{Index: ix, Threads: 2, Sample: []query.Query{{Terms: []uint32{1, 2}}}, Queries: 10}
	cs, chosen, err := query.Plan(w, engine.Choice{Device: "cpu"})
	if err != nil || len(cs) != 1 || cs[0].Engine.Kind() != engine.CPU || chosen.Device.Parallelism != 2 {
		t.Fatalf("cpu: %v, %+v, %v", cs, chosen, err)
	}
	if _, _, err := query.Plan(w, engine.Choice{Device: "tpu"}); err == nil {
		t.Error("device tpu accepted")
	}
}
