package gpuquery

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xsect/xsect/internal/conj"
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
	qs := make([]conj.Query, maxQueries)
	for i := range qs {
		qs[i].Terms = terms[starts[i]:starts[i+1]]
	}
	up := make([]uint32, 1<<20)
	for _, layout := range []string{"one array", "separate"} {
		qs := relayout(rng, qs, layout)
		for _, threads := range []int{1, 4} {
			r := &devRunner{threads: threads}
			var ps partScratch
			b.Run(fmt.Sprintf("%s/threads%d", layout, threads), func(b *testing.B) {
				for b.Loop() {
					r.pack(&ps, qs, up)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(qs)), "ns/query")
			})
		}
	}
}
