package pairs

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
)

// BenchmarkFIMI times NewPlan and Run (pairs counted, not formatted) on the
// sparse FIMI files at the supports of docs/BATMAP.md, with the engine auto
// picks and with each CPU engine.
func BenchmarkFIMI(b *testing.B) {
	for _, file := range []string{"retail.dat", "T10I4D100K.dat", "kosarak_head36682.dat"} {
		tx, err := setio.Load(settest.SharedData(b, "fimi", file))
		if err != nil {
			b.Fatal(err)
		}
		for _, support := range []string{"0.1%", "0.01%"} {
			s, err := ParseSupport(support, tx.Len())
			if err != nil {
				b.Fatal(err)
			}
			for _, engine := range []string{"auto", "apriori", "fpgrowth", "batmap"} {
				b.Run(file+"/"+support+"/"+engine, func(b *testing.B) {
					for b.Loop() {
						p, err := NewPlan(tx, Options{MinSupport: s, Technique: engine, Device: "cpu"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := p.Run(context.Background(), func([]Pair) error { return nil }); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkPlan times NewPlan alone: preparation and every estimate.
func BenchmarkPlan(b *testing.B) {
	for _, file := range []string{"retail.dat", "T10I4D100K.dat"} {
		tx, err := setio.Load(settest.SharedData(b, "fimi", file))
		if err != nil {
			b.Fatal(err)
		}
		s, _ := ParseSupport("0.01%", tx.Len())
		b.Run(file, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewPlan(tx, Options{MinSupport: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProbe runs the probe (without its cache) on 1, 2, 4, ... and
// all threads and reports the median of its ratios to the reference
// machine's probe and its duration: what scales the cost model here.
func BenchmarkProbe(b *testing.B) {
	benchProbe(b, runProbe)
}

func benchProbe(b *testing.B, run func(threads int) *probe) {
	var counts []int
	for t := 1; t < runtime.GOMAXPROCS(0); t *= 2 {
		counts = append(counts, t)
	}
	counts = append(counts, runtime.GOMAXPROCS(0))
	for _, threads := range counts {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var inc, word, elem, ms []float64
			for b.Loop() {
				p := run(threads)
				inc = append(inc, p.increment/probeReference.increment)
				word = append(word, p.word/probeReference.word)
				elem = append(elem, p.element/probeReference.element)
				ms = append(ms, p.elapsed.Seconds()*1e3)
			}
			b.ReportMetric(median(inc), "counters-x")
			b.ReportMetric(median(word), "words-x")
			b.ReportMetric(median(elem), "merges-x")
			b.ReportMetric(median(ms), "probe-ms")
		})
	}
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}

// BenchmarkEstimates checks the cost model on the files that
// XSECT_PAIRS_BENCH lists ("FILE@SUPPORT,..."; the sparse FIMI files at
// 0.1% and 0.01% when it is unset): for every CPU engine that is not far
// off the fastest, the least time of three NewPlan+Run (pairs counted, not
// formatted; "run-s") against its estimate with the reference costs
// ("ref-est-s") and with the probe's ("est-s"). With -test.v it logs the
// plans. Only the engines within 4x of the fastest estimate (or under 1 s)
// are run.
func BenchmarkEstimates(b *testing.B) {
	spec := os.Getenv("XSECT_PAIRS_BENCH")
	if spec == "" {
		for _, f := range []string{"retail.dat", "T10I4D100K.dat", "kosarak_head36682.dat"} {
			for _, s := range []string{"0.1%", "0.01%"} {
				spec += "," + settest.SharedData(b, "fimi", f) + "@" + s
			}
		}
		spec = spec[1:]
	}
	for _, item := range strings.Split(spec, ",") {
		path, support, ok := strings.Cut(item, "@")
		if !ok {
			b.Fatalf("XSECT_PAIRS_BENCH: %q is not FILE@SUPPORT", item)
		}
		tx, err := setio.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		s, err := ParseSupport(support, tx.Len())
		if err != nil {
			b.Fatal(err)
		}
		auto, err := NewPlan(tx, Options{MinSupport: s, Device: "cpu"})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s at %s:\n%s", path, support, auto.Explain())
		probed := measure(auto.Data.Threads).costs()
		fastest := math.Inf(1)
		type est struct{ ref, probed float64 }
		ests := map[string]est{}
		for _, c := range auto.Candidates {
			if c.Err != nil {
				continue
			}
			d := auto.Data
			d.costs = nil
			ref, _ := c.Engine.Estimate(d)
			d.costs = &probed
			pr, _ := c.Engine.Estimate(d)
			ests[c.Engine.Name()] = est{ref.Seconds, pr.Seconds}
			fastest = min(fastest, pr.Seconds)
		}
		for _, name := range EngineNames() {
			e, ok := ests[name]
			if !ok || (e.probed > 4*fastest && e.probed > 1) {
				continue
			}
			b.Run(filepath.Base(path)+"@"+support+"/"+name, func(b *testing.B) {
				best := math.Inf(1)
				for b.Loop() {
					for range 3 {
						start := time.Now()
						p, err := NewPlan(tx, Options{MinSupport: s, Technique: name, Device: "cpu"})
						if err != nil {
							b.Fatal(err)
						}
						start = time.Now()
						if _, err := p.Run(context.Background(), func([]Pair) error { return nil }); err != nil {
							b.Fatal(err)
						}
						best = min(best, time.Since(start).Seconds())
					}
				}
				b.ReportMetric(best, "run-s")
				b.ReportMetric(e.ref, "ref-est-s")
				b.ReportMetric(e.probed, "est-s")
			})
		}
	}
}
