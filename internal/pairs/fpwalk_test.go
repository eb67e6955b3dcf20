package pairs

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xsect/xsect/sets"
)

// exactWalk is the walk that fpgrowth's Run makes: its trees built, the
// depth less one of every node.
func exactWalk(d *Data) float64 {
	label := supportLabels(d)
	h := relabel(d.Horizontal(), label, d.Threads)
	var tids []uint32
	for t, n := range d.Lengths {
		if n >= 2 {
			tids = append(tids, uint32(t))
		}
	}
	parts := fpParts(d)
	walk := 0.0
	for p := range parts {
		t := buildTree(h, tids[p*len(tids)/parts:(p+1)*len(tids)/parts], d.Frequent())
		for n := 1; n < len(t.parent); n++ {
			for a := t.parent[n]; a > 0; a = t.parent[a] {
				walk++
			}
		}
	}
	return walk
}

// fpWalk is exact when it samples every transaction, whether the
// preparation kept the horizontal database or not, on any number of
// trees; with fewer, it stays at most the pair occurrences, and on
// transactions that share their frequent items it is well below them.
func TestFPWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for iter := range 30 {
		m := 1 + rng.IntN(3000)
		z := rand.NewZipf(rng, 1.2+rng.Float64(), 1, uint64(50+rng.IntN(500)))
		c := sets.New()
		for range m {
			s := make([]uint32, rng.IntN(12))
			for j := range s {
				s[j] = uint32(z.Uint64())
			}
			c.AddUnsorted(s)
		}
		for _, horizontal := range []bool{false, true} {
			threads := 1 + rng.IntN(4)
			d, err := prepare(c, 1+rng.IntN(5), threads, 1<<30, horizontal, tile{})
			if err != nil {
				t.Fatal(err)
			}
			want := exactWalk(d)
			if got := fpWalk(d, m); got != want {
				t.Fatalf("iteration %d (%d transactions, %d threads, horizontal %v): fpWalk of all %g, the trees walk %g", iter, m, threads, horizontal, got, want)
			}
			if got := fpWalk(d, 1+m/10); got > float64(d.PairSteps) || got < 0 || math.IsNaN(got) {
				t.Fatalf("iteration %d: sampled walk %g, pair occurrences %d", iter, got, d.PairSteps)
			}
		}
	}
	// Transactions that all hold the same frequent items share one path:
	// a sample sees it.
	c := sets.New()
	for range 20000 {
		c.AddUnsorted([]uint32{1, 2, 3, 4, 5, 6, 7, 8})
	}
	d, err := prepare(c, 1, 1, 1<<30, true, tile{})
	if err != nil {
		t.Fatal(err)
	}
	if got, exact := fpWalk(d, 1000), exactWalk(d); got != exact || exact != 28 {
		t.Fatalf("one shared path: sampled %g, exact %g, want 28", got, exact)
	}
}
