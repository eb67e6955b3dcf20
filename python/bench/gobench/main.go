// Command gobench times in Go what python/bench/bench.py times through the
// Python package, so that the binding's own cost shows: a count of two
// sets of 1M elements each (intersect.CountParallel on every core,
// as xsect.count does), and all-pairs on retail (allpairs.Collect, sorted
// pairs in memory, as xsect.allpairs returns them). It prints the median of
// -reps runs of each, in milliseconds.
//
//	go run ./bench/gobench -retail ../data/retail.dat.gz
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/setio"
)

func main() {
	retail := flag.String("retail", "../data/retail.dat.gz", "the retail collection")
	reps := flag.Int("reps", 7, "runs of each measurement")
	minOverlap := flag.Int("min-overlap", 10, "all-pairs' minimum overlap")
	minSupport := flag.Int("min-support", 100, "frequent pairs' minimum support")
	flag.Parse()

	a, b := hashedSet(1_000_000, 2654435761), hashedSet(1_000_000, 40503)
	var n int
	report("count 1M x 1M", *reps, func() { n = intersect.CountParallel(a, b, 0) })
	fmt.Printf("  |a ∩ b| = %d\n", n)
	report("count 1M x 1M, 1 thread", *reps, func() { n = intersect.CountParallel(a, b, 1) })
	// Calls 2 ms apart, as a program that counts now and then makes them:
	// the runtime's other threads have gone to sleep and must be woken.
	report("count 1M x 1M, calls 2 ms apart", *reps, func() {
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		n = intersect.CountParallel(a, b, 0)
		slept += time.Since(start)
	})

	c, err := setio.Load(*retail)
	if err != nil {
		log.Fatal(err)
	}
	var ps []allpairs.Pair
	report(fmt.Sprintf("retail allpairs min_overlap=%d", *minOverlap), *reps, func() {
		ps, err = allpairs.Collect(context.Background(), c, nil, allpairs.Query{MinOverlap: *minOverlap}, allpairs.Options{})
		if err != nil {
			log.Fatal(err)
		}
	})
	fmt.Printf("  %d pairs\n", len(ps))
	report(fmt.Sprintf("retail frequent pairs min_support=%d", *minSupport), *reps, func() {
		ps, err = pairs.Collect(context.Background(), c, pairs.Options{MinSupport: *minSupport})
		if err != nil {
			log.Fatal(err)
		}
	})
	fmt.Printf("  %d pairs\n", len(ps))
}

// hashedSet returns the n values i·k mod 2^24 (i < n; distinct for an odd
// k), sorted: bench.py makes the same sets with numpy.
func hashedSet(n int, k uint64) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(uint64(i) * k % (1 << 24))
	}
	slices.Sort(s)
	return s
}

// report runs f reps times and prints the median time in milliseconds.
// slept is set by a measured function that times only part of itself
// (report then reports it instead of the whole call).
var slept time.Duration

func report(name string, reps int, f func()) {
	ts := make([]float64, reps)
	for i := range ts {
		slept = 0
		start := time.Now()
		f()
		d := time.Since(start)
		if slept > 0 {
			d = slept
		}
		ts[i] = float64(d.Microseconds()) / 1000
	}
	slices.Sort(ts)
	fmt.Printf("%-40s median %9.2f ms of %d (min %.2f, max %.2f)\n", name, ts[reps/2], reps, ts[0], ts[reps-1])
}
