package simjoin

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// A join's pairs, handed on by Overlaps and made again by FromOverlap,
// are the pairs the join reported, similarity and all, in self-joins and
// R × S joins, for every measure.
func TestOverlapsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	r := simjointest.Random(rng, 300, 8, 60)
	s := simjointest.Random(rng, 200, 8, 60)
	seen := map[Measure]int{}
	for m, ths := range randomThresholds {
		for _, th := range ths {
			for _, with := range []*sets.Collection{nil, s} {
				pl, err := NewPlan(r, with, Options{Threshold: mustThreshold(t, m, th), Device: "cpu", Threads: 3})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var want []Pair
				var got []Pair
				add := func(ps []sets.Pair) error {
					mu.Lock()
					defer mu.Unlock()
					for _, p := range ps {
						got = append(got, FromOverlap(p, r, with, m))
					}
					return nil
				}
				to := Overlaps(add)
				err = pl.Join(context.Background(), func(ps []Pair) error {
					mu.Lock()
					want = append(want, ps...)
					mu.Unlock()
					return to(ps)
				})
				if err != nil {
					t.Fatal(err)
				}
				SortPairs(want)
				SortPairs(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%s %s, R × S %v: %d pairs made again differ from the %d the join reported", m, th, with != nil, len(got), len(want))
				}
				seen[m] += len(want)
			}
		}
	}
	for m := range randomThresholds {
		if seen[m] == 0 {
			t.Errorf("%s: no pair in any case: the test proves little", m)
		}
	}
}
