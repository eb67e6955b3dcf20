package allpairs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// generate returns the synthetic collection of package synth (what
// xsect gen writes) for the benchmark shapes.
func generate(b testing.TB, k int, universe uint64, avg int, dist synth.Dist) *sets.Collection {
	c, err := synth.Generate(synth.Config{Sets: k, Universe: universe, AvgSize: avg, Dist: dist, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchData = struct {
	sync.Mutex
	m map[string]*sets.Collection
}{m: map[string]*sets.Collection{}}

func benchCollection(b testing.TB, name string) *sets.Collection {
	benchData.Lock()
	defer benchData.Unlock()
	if c, ok := benchData.m[name]; ok {
		return c
	}
	var c *sets.Collection
	switch name {
	case "uniform-1000x10k-1e6":
		c = generate(b, 1000, 1_000_000, 10_000, synth.Uniform)
	case "zipf-1000x10k-1e6":
		c = generate(b, 1000, 1_000_000, 10_000, synth.Zipf)
	case "zipf-1000x100k-1e7":
		c = generate(b, 1000, 10_000_000, 100_000, synth.Zipf)
	case "zipf-100000x8.7m-905":
		c = generate(b, 100_000, 8_700_000, 905, synth.Zipf) // ORKUT-100K's look-alike
	case "zipf-100000x37k-140":
		c = generate(b, 100_000, 37_000, 140, synth.Zipf) // TWITTER-100K's look-alike
	case "uniform-300x1k-1e4":
		c = generate(b, 300, 10_000, 1_000, synth.Uniform)
	case "retail":
		c = loadText(b, settest.SharedData(b, "fimi/retail.dat"), 0)
	case "BMS2":
		c = loadText(b, settest.SharedData(b, "fimi/BMS2.dat"), 0)
	case "kosarak":
		c = loadText(b, settest.SharedData(b, "fimi/kosarak_head36682.dat"), 0)
	case "chess":
		c = loadText(b, settest.SharedData(b, "fimi/chess.dat"), 0)
	case "gcide":
		c = loadText(b, settest.SharedData(b, "ir/gcide/gcide.docs.sets.gz"), 0)
	default:
		b.Fatalf("unknown data %q", name)
	}
	benchData.m[name] = c
	return c
}

var benchTech = flag.String("tech", "", "benchmark only this technique")

// BenchmarkAllPairs times Count (no output) for every technique and the
// planner's choice on each benchmark shape. Techniques that cannot run a
// shape, or that would take minutes, are skipped.
func BenchmarkAllPairs(b *testing.B) {
	shapes := []struct {
		data    string
		q       Query
		largest int
	}{
		{"uniform-1000x10k-1e6", Query{MinOverlap: 1}, 0},
		{"zipf-1000x10k-1e6", Query{MinOverlap: 1}, 0},
		{"uniform-300x1k-1e4", Query{MinOverlap: 1}, 0},
		{"chess", Query{MinOverlap: 1}, 0},
		{"retail", Query{MinOverlap: 1}, 10000},
		{"BMS2", Query{MinOverlap: 1}, 10000},
		{"kosarak", Query{MinOverlap: 1}, 10000},
		{"retail", Query{Containment: Ratio{1, 1}}, 0},
		{"retail", Query{Containment: Ratio{8, 10}}, 0},
		{"BMS2", Query{Containment: Ratio{1, 1}}, 0},
	}
	for _, sh := range shapes {
		name := sh.data
		if sh.largest > 0 {
			name += fmt.Sprintf("-largest%d", sh.largest)
		}
		if sh.q.IsContainment() {
			name += fmt.Sprintf("-containment%g", sh.q.Containment.Float())
		}
		b.Run(name, func(b *testing.B) {
			c := benchCollection(b, sh.data)
			for _, tech := range append([]string{"auto"}, Techniques()...) {
				if *benchTech != "" && tech != *benchTech {
					continue
				}
				opt := Options{Device: "cpu", Technique: tech, Largest: sh.largest}
				plan, err := NewPlan(c, nil, sh.q, opt)
				if errors.Is(err, ErrCannotRun) {
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if plan.Chosen.Estimate.Seconds > 30 {
					continue
				}
				b.Run(tech, func(b *testing.B) {
					for b.Loop() {
						if _, err := plan.Count(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(plan.Chosen.Estimate.Seconds*1e3, "est-ms")
				})
			}
		})
	}
}
