package simjoin_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

func randomSets(rng *rand.Rand, n, maxSize, universe int) *sets.Collection {
	c := sets.New()
	for range n {
		s := make([]uint32, rng.IntN(maxSize+1))
		for i := range s {
			f := rng.Float64()
			s[i] = uint32(f * f * float64(universe))
		}
		c.AddUnsorted(s)
	}
	return c
}

// TestPairs: the iterator yields what Collect returns, and breaking out of
// it stops the join.
func TestPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := randomSets(rng, 2000, 8, 60)
	th, err := simjoin.ParseThreshold(simjoin.Jaccard, "0.6")
	if err != nil {
		t.Fatal(err)
	}
	want, err := simjoin.Collect(context.Background(), c, nil, simjoin.Options{Threshold: th})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 1000 {
		t.Fatalf("only %d pairs: the test needs many", len(want))
	}
	pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th})
	if err != nil {
		t.Fatal(err)
	}
	var got []simjoin.Pair
	for p, err := range pl.Pairs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	simjoin.SortPairs(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Pairs yielded %d pairs, Collect %d", len(got), len(want))
	}
	pl, _ = simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th})
	n := 0
	for _, err := range pl.Pairs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if n != 10 {
		t.Fatalf("broke out after %d pairs", n)
	}
	n64, _, err := simjoin.Count(context.Background(), c, nil, simjoin.Options{Threshold: th})
	if err != nil || n64 != int64(len(want)) {
		t.Fatalf("Count = %d, %v; want %d", n64, err, len(want))
	}
	// A canceled context ends the sequence with its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pl, _ = simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th})
	var last error
	for _, err := range pl.Pairs(ctx) {
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("canceled: last error %v", last)
	}
}

// TestDeviceGPU: the GPU engines come with the package; without a GPU
// they cannot run, and say so.
func TestDeviceGPU(t *testing.T) {
	th, _ := simjoin.ParseThreshold(simjoin.Cosine, "0.8")
	c := sets.FromSets([]uint32{1, 2}, []uint32{1, 2, 3}, []uint32{1, 2, 3}, []uint32{7})
	pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Device: "gpu"})
	if gpurt.Available() != nil {
		if !errors.Is(err, simjoin.ErrCannotRun) {
			t.Fatalf("device gpu without a GPU: %v", err)
		}
		return
	}
	if err != nil || pl.Device() != "gpu" {
		t.Fatalf("device gpu: %v", err)
	}
	got, err := pl.Collect(context.Background())
	want := []simjoin.Pair{{I: 0, J: 1, Overlap: 2, Similarity: 2 / math.Sqrt(6)}, {I: 0, J: 2, Overlap: 2, Similarity: 2 / math.Sqrt(6)}, {I: 1, J: 2, Overlap: 3, Similarity: 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("device gpu: %v, %v; want %v", got, err, want)
	}
}

func Example() {
	docs := sets.FromSets(
		[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 11},
		[]uint32{20, 21, 22},
		[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	)
	th, err := simjoin.ParseThreshold(simjoin.Jaccard, "0.8")
	if err != nil {
		panic(err)
	}
	pairs, err := simjoin.Collect(context.Background(), docs, nil, simjoin.Options{Threshold: th})
	if err != nil {
		panic(err)
	}
	for _, p := range pairs {
		fmt.Printf("%d %d overlap %d similarity %.4f\n", p.I, p.J, p.Overlap, p.Similarity)
	}
	// Output:
	// 0 1 overlap 9 similarity 0.8182
	// 0 3 overlap 10 similarity 1.0000
	// 1 3 overlap 9 similarity 0.8182
}
