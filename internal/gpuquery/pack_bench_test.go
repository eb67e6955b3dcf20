package gpuquery

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/query"
)

// BenchmarkPack times packing a batch of 64Ki queries of 2 to 5 terms,
// laid out in one array as xsect query reads them, or each in an array
// of its own as the server decodes them.
func BenchmarkPack(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var terms []uint32
	starts := []int{0}
	for range maxQueries {
		for range 2 + rng.IntN(4) {
			terms = append(terms, rng.Uint32())
		}
		starts = append(starts, len(terms))
	}
	qs := make([]query.Query, maxQueries)
	for i := range qs {
		qs[i].Terms = terms[starts[i]:starts[i+1]]
	}
	up := make([]uint32, 1<<20)
	bench := func(name string, qs []query.Query, up []uint32, threads int) {
		r := &devRunner{threads: threads}
		var ps partScratch
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := r.pack(&ps, qs, up); !ok {
					b.Fatal("buffer too small")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(qs)), "ns/query")
		})
	}
	for _, layout := range []string{"one array", "separate"} {
		qs := relayout(rng, qs, layout)
		for _, threads := range []int{1, 4} {
			bench(fmt.Sprintf("%s/threads%d", layout, threads), qs, up, threads)
		}
	}
	// Into memory registered with the driver, as the engine packs, beside
	// Go memory (where a GPU is): whether registering slows the CPU's
	// writes, as cuMemAllocHost memory's were slow on the H100 host.
	if gpurt.Available() != nil {
		return
	}
	dev, err := gpurt.Default()
	if err != nil {
		b.Fatal(err)
	}
	var reg gpurt.Registered
	if err := dev.Do(func(c *gpurt.Ctx) error { return reg.Grow(c, 4<<20) }); err != nil {
		b.Fatal(err)
	}
	defer dev.Do(func(c *gpurt.Ctx) error { return reg.Free(c) })
	qs = relayout(rng, qs, "one array")
	for _, threads := range []int{1, 4, 8} {
		bench(fmt.Sprintf("registered/threads%d", threads), qs, gpurt.Uint32s(reg.Bytes()), threads)
		bench(fmt.Sprintf("go/threads%d", threads), qs, up, threads)
	}
}
