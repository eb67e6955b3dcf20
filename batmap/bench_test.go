package batmap

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

// bernoulli returns k tidlists over m transactions, each transaction in
// each with probability p: the shape of the paper's instance.
func bernoulli(k, m int, p float64, seed uint64) *sets.Collection {
	r := rand.New(rand.NewPCG(seed, 1))
	c := sets.New()
	var s []uint32
	for range k {
		s = s[:0]
		for t := range m {
			if r.Float64() < p {
				s = append(s, uint32(t))
			}
		}
		c.Add(s)
	}
	return c
}

// BenchmarkCount compares two batmaps of equal width held in cache, with
// the kernel in use and with the portable one; the paper's 4,000-item
// instance has batmaps of 3·2^13 bytes.
func BenchmarkCount(b *testing.B) {
	for _, words := range []int{1536, 6144, 24576} {
		// Sets sized so that their batmaps have the wanted width.
		m := 8 * words
		c := bernoulli(2, m, float64(words)/2/float64(m)*4/3/2*0.9, 1)
		bm, err := Build(c, Config{EntryBits: 8, Universe: uint64(m)})
		if err != nil {
			b.Fatal(err)
		}
		x, y := bm.batmap64(0), bm.batmap64(1)
		if len(x) != len(y) {
			b.Fatalf("widths %d and %d", len(x), len(y))
		}
		generic := genericKernel(8)
		for _, k := range []struct {
			name string
			f    func(a, b []uint64) int
		}{{Kernel(), kernelFor(8).one}, {"go-swar64", generic.one}} {
			b.Run(fmt.Sprintf("bytes=%d/%s", 8*len(x), k.name), func(b *testing.B) {
				b.SetBytes(int64(16 * len(x)))
				for b.Loop() {
					k.f(x, y)
				}
			})
		}
	}
}

// BenchmarkAllPairs counts all pairs of 512 tidlists of the paper's
// 16,000-item instance (p = 5%, 12,500 transactions), on one thread and
// on GOMAXPROCS; bytes are the batmap bytes compared (the wider batmap of
// each pair), and the counts are checked.
// Base 1 is the paper's powers of two; 0 lets the layout pick (5 here).
func BenchmarkAllPairs(b *testing.B) {
	c := bernoulli(512, 12500, 0.05, 2)
	sizes := make([]int, c.Len())
	for i := range sizes {
		sizes[i] = c.SetLen(i)
	}
	var want int64
	for i := range c.Len() {
		for j := i + 1; j < c.Len(); j++ {
			want += int64(settest.Count(c.Set(i), c.Set(j)))
		}
	}
	for _, base := range []int{1, 0} {
		bm, err := Build(c, Config{Base: base})
		if err != nil {
			b.Fatal(err)
		}
		for _, threads := range []int{1, 0} {
			b.Run(fmt.Sprintf("base=%d/r=%d/threads=%d", bm.Layout.Base, bm.Layout.R(sizes[0]), threads), func(b *testing.B) {
				b.SetBytes(int64(4 * bm.Layout.PairWords(sizes)))
				for b.Loop() {
					var sum atomic.Int64
					err := bm.AllPairs(context.Background(), PairsOptions{Threads: threads}, func(_ int, t *Tile) error {
						var s int64
						for _, c := range t.Counts {
							s += int64(c)
						}
						sum.Add(s)
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
					if sum.Load() != want {
						b.Fatalf("counts sum to %d, want %d", sum.Load(), want)
					}
				}
			})
		}
	}
}

// BenchmarkBuild builds the batmaps of the tidlists of BenchmarkAllPairs.
func BenchmarkBuild(b *testing.B) {
	c := bernoulli(512, 12500, 0.05, 2)
	b.SetBytes(int64(4 * len(c.Elements)))
	for b.Loop() {
		if _, err := Build(c, Config{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFailures reports the failed insertions per million elements
// (fail/Melem) at ratios c = r/|S| of a range to its set's size, for
// random sets, with the paper's insertion and the default MaxLoop: the
// measurement behind DefaultLoad (docs/BATMAP.md).
func BenchmarkFailures(b *testing.B) {
	for _, r := range []int{256, 2048} {
		for _, c := range []float64{1.25, 1.5, 1.75, 2, 2.5, 3} {
			n := int(float64(r) / c)
			k := 1 << 20 / n
			rng := rand.New(rand.NewPCG(uint64(r), uint64(100*c)))
			col := sets.New()
			for range k {
				col.AddUnsorted(randomSet(rng, n, uint64(20*n)))
			}
			b.Run(fmt.Sprintf("r=%d/c=%.2f", r, c), func(b *testing.B) {
				var failed, elems int
				for b.Loop() {
					bm, err := Build(col, Config{Load: c, Base: 1, EntryBits: 32, Universe: uint64(20 * n)})
					if err != nil {
						b.Fatal(err)
					}
					failed += bm.Failures()
					elems += len(col.Elements)
				}
				b.ReportMetric(1e6*float64(failed)/float64(elems), "fail/Melem")
			})
		}
	}
}
