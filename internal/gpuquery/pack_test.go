package gpuquery

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/conj"
)

// TestPack checks the packing of a batch for the device, in one part and
// in several, against a plain loop: starts then terms, none for a query
// of more than devMaxTerms terms.
func TestPack(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	qs := make([]conj.Query, 30000)
	for i := range qs {
		n := rng.IntN(6)
		if rng.IntN(100) == 0 {
			n = devMaxTerms + 1 + rng.IntN(10)
		}
		for range n {
			qs[i].Terms = append(qs[i].Terms, rng.Uint32())
		}
	}
	var want []uint32
	var terms []uint32
	for _, q := range qs {
		want = append(want, uint32(len(terms)))
		if len(q.Terms) <= devMaxTerms {
			terms = append(terms, q.Terms...)
		}
	}
	want = append(want, uint32(len(terms)))
	want = append(want, terms...)
	for _, threads := range []int{1, 2, 3, 16} {
		r := &devRunner{threads: threads}
		k := max(1, min(r.threads, len(qs)/8192))
		r.starts = r.starts[:0]
		n := 0
		for p := range k {
			r.starts = append(r.starts, n)
			for _, q := range qs[p*len(qs)/k : (p+1)*len(qs)/k] {
				if len(q.Terms) <= devMaxTerms {
					n += len(q.Terms)
				}
			}
		}
		got := make([]uint32, len(qs)+1+n)
		r.pack(qs, got, k)
		if !slices.Equal(got, want) {
			t.Fatalf("%d threads (%d parts): packing differs", threads, k)
		}
	}
}
