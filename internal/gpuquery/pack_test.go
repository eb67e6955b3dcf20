package gpuquery

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/query"
)

// TestPack checks the packing of a batch for the device, in one part and
// in several, against a plain loop: starts then terms, none for a query
// of more than devMaxTerms terms, which are listed for the host; and that
// a buffer too short is reported, not overrun.
func TestPack(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, nq := range []int{0, 1, 2047, 2048, 30000} {
		qs := make([]query.Query, nq)
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
		for _, layout := range []string{"separate", "one array", "one array, capped", "one array, out of order"} {
			testPack(t, layout, relayout(rng, qs, layout))
		}
	}
}

// relayout returns qs with the same terms in another memory layout: each
// query's terms an array of their own, or all in one array (as xsect
// query reads them), with each slice's capacity to the array's end or
// capped at its length, or in one array with the queries in another
// order than their terms and some sharing another query's terms.
func relayout(rng *rand.Rand, qs []query.Query, layout string) []query.Query {
	out := make([]query.Query, len(qs))
	if layout == "separate" {
		for i, q := range qs {
			out[i].Terms = slices.Clone(q.Terms)
		}
		return out
	}
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	if layout == "one array, out of order" {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var all []uint32
	at := make([]int, len(qs))
	for _, i := range order {
		at[i] = len(all)
		all = append(all, qs[i].Terms...)
	}
	for i, q := range qs {
		out[i].Terms = all[at[i] : at[i]+len(q.Terms)]
		if layout == "one array, capped" {
			out[i].Terms = out[i].Terms[:len(q.Terms):len(q.Terms)]
		}
	}
	if layout == "one array, out of order" {
		// Equal queries sharing their terms.
		for i := 1; i < len(qs); i += 5 {
			out[i].Terms = out[i-1].Terms
		}
	}
	return out
}

func testPack(t *testing.T, layout string, qs []query.Query) {
	t.Helper()
	nq := len(qs)
	{
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
				t.Fatalf("%s, %d queries, %d threads: a buffer one word short: ok %v, %d terms (want %d)", layout, nq, threads, ok, n, len(terms))
			}
			for _, w := range short[len(want)-1:] {
				if w != 7 {
					t.Fatalf("%s, %d queries, %d threads: written past the buffer", layout, nq, threads)
				}
			}
			got := make([]uint32, len(want)+5)
			n, ok := r.pack(&ps, qs, got)
			if !ok || n != len(terms) || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("%s, %d queries, %d threads (%d parts): packing differs (ok %v, %d terms)", layout, nq, threads, r.numParts(nq, packLeast), ok, n)
			}
			var host []int
			for _, h := range ps.lists {
				host = append(host, h...)
			}
			if !slices.Equal(host, long) {
				t.Fatalf("%s, %d queries, %d threads: host queries %v, want %v", layout, nq, threads, host, long)
			}
		}
	}
}
