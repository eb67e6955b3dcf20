package gpuquery

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/conj"
)

// TestPack checks the packing of a batch for the device, in one part and
// in several, against a plain loop: starts then terms, none for a query
// of more than devMaxTerms terms, which are listed for the host; and that
// a buffer too short is reported, not overrun.
func TestPack(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, nq := range []int{0, 1, 2047, 2048, 30000} {
		qs := make([]conj.Query, nq)
		for i := range qs {
			n := rng.IntN(6)
			if rng.IntN(100) == 0 {
				n = devMaxTerms + 1 + rng.IntN(10)
			}
			if rng.IntN(500) == 0 {
				n = devMaxTerms
			}
			for range n {
				qs[i].Terms = append(qs[i].Terms, rng.Uint32())
			}
		}
		var want, terms []uint32
		var long []int
		for i, q := range qs {
			want = append(want, uint32(len(terms)))
			if len(q.Terms) <= devMaxTerms {
				terms = append(terms, q.Terms...)
			} else {
				long = append(long, i)
			}
		}
		want = append(want, uint32(len(terms)))
		want = append(want, terms...)
		for _, threads := range []int{1, 2, 3, 16} {
			r := &devRunner{threads: threads}
			var ps partScratch
			// Too short by one word: nothing written past it.
			short := make([]uint32, len(want)-1+8)
			for i := range short {
				short[i] = 7
			}
			if n, ok := r.pack(&ps, qs, short[:len(want)-1]); ok || n != len(terms) {
				t.Fatalf("%d queries, %d threads: a buffer one word short: ok %v, %d terms (want %d)", nq, threads, ok, n, len(terms))
			}
			for _, w := range short[len(want)-1:] {
				if w != 7 {
					t.Fatalf("%d queries, %d threads: written past the buffer", nq, threads)
				}
			}
			got := make([]uint32, len(want)+5)
			n, ok := r.pack(&ps, qs, got)
			if !ok || n != len(terms) || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("%d queries, %d threads (%d parts): packing differs (ok %v, %d terms)", nq, threads, r.numParts(nq, packLeast), ok, n)
			}
			var host []int
			for _, h := range ps.lists {
				host = append(host, h...)
			}
			if !slices.Equal(host, long) {
				t.Fatalf("%d queries, %d threads: host queries %v, want %v", nq, threads, host, long)
			}
		}
	}
}
