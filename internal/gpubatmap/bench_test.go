package gpubatmap

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

var benchItems = flag.String("gpubatmap.n", "4000,16000,64000", "comma-separated item counts of the BATMAP paper's instance for BenchmarkKernel")

// tidlists returns the tidlists of the BATMAP paper's instance with n items: each
// item in each of m = 10^7/(n·p) transactions with probability p = 5%,
// drawn by geometric gaps.
func tidlists(n int, seed uint64) (*sets.Collection, int) {
	const p = 0.05
	m := int(1e7 / (float64(n) * p))
	r := rand.New(rand.NewPCG(seed, 0xba7))
	lq := math.Log1p(-p)
	c := sets.New()
	var s []uint32
	for range n {
		s = s[:0]
		for t := -1; ; {
			t += 1 + int(math.Log(1-r.Float64())/lq)
			if t >= m {
				break
			}
			s = append(s, uint32(t))
		}
		c.Add(s)
	}
	return c, m
}

// BenchmarkKernel runs all pairs of the BATMAP paper's instances (n items, 10^7
// occurrences, p = 5%) on the GPU: "count" counts the pairs of support
// 0.3% (nothing but failed-insertion candidates comes back), "pairs"
// also brings every such pair back to the host. Bytes are counted as
// batmap's BenchmarkAllPairs counts them: the wider batmap of each pair
// (4·PairWords), so MB/s is per whole call; kernel-GB/s divides them by the
// device time of the kernels alone, and %HBM compares that with the H100's
// 3.35 TB/s.
func BenchmarkKernel(b *testing.B) {
	dev := needGPU(b)
	for _, f := range strings.Split(*benchItems, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatal(err)
		}
		c, m := tidlists(n, 1)
		bm, err := batmap.Build(c, batmap.Config{Universe: uint64(m)})
		if err != nil {
			b.Fatal(err)
		}
		sizes := make([]int, c.Len())
		for i := range sizes {
			sizes[i] = c.SetLen(i)
		}
		words := bm.Layout.PairWords(sizes)
		support := uint32(math.Ceil(0.003 * float64(m)))
		for _, mname := range []string{"count", "pairs"} {
			if mname == "pairs" && n > 16000 {
				continue
			}
			b.Run(fmt.Sprintf("n=%d/m=%d/%dbit/%s", n, m, bm.Layout.EntryBits, mname), func(b *testing.B) {
				b.SetBytes(int64(4 * words))
				var st Stats
				var pairs int64
				for b.Loop() {
					opt := Options{MinCount: support, Stats: &st}
					if mname == "count" {
						pairs, err = Count(context.Background(), gpurt.NewSet(dev), bm, opt)
					} else {
						var cnt atomic.Int64
						err = Pairs(context.Background(), gpurt.NewSet(dev), bm, opt, func(_ int, ps []Pair) error {
							cnt.Add(int64(len(ps)))
							return nil
						})
						pairs = cnt.Load()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				kb := 4 * words / st.KernelDev.Seconds()
				b.ReportMetric(kb/1e9, "kernel-GB/s")
				b.ReportMetric(100*kb/3.35e12, "%HBM")
				b.ReportMetric(st.WordPairs/st.KernelDev.Seconds()/1e12, "Twordpairs/s")
				b.ReportMetric(float64(st.KernelDev.Microseconds())/1e3, "kernel-ms")
				b.ReportMetric(float64(st.Upload.Microseconds())/1e3, "upload-ms")
				b.ReportMetric(float64(pairs), "pairs")
				b.Logf("%s: %s, %d batches, %d tiles, %d entries back, %.3g word pairs (%.3g unpadded), %d failures, device memory %d MiB",
					b.Name(), st.Kernel, st.Batches, st.Tiles, st.Entries, st.WordPairs, words, bm.Failures(), st.Memory>>20)
			})
		}
	}
}
