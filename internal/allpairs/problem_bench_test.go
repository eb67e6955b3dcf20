package allpairs

import (
	"context"
	"flag"
	"runtime"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// prepareShapes are the inputs of the preparation benchmarks: the
// all-pairs problems of Bellas & Gounaris, "Exploiting GPUs for fast
// intersection of large sets" (the 10,000 largest sets of four real data sets, and
// two generated collections, the zipf one of 10^8 elements).
var prepareShapes = []struct {
	data    string
	largest int
}{
	{"retail", 10000},
	{"kosarak", 10000},
	{"BMS2", 10000},
	{"gcide", 10000},
	{"uniform-1000x10k-1e6", 0},
	{"zipf-1000x100k-1e7", 0},
}

// BenchmarkNewProblem times the host-side preparation of a plan: selecting
// the largest sets, renumbering and the document-frequency and statistics
// passes.
func BenchmarkNewProblem(b *testing.B) {
	for _, sh := range prepareShapes {
		b.Run(sh.data, func(b *testing.B) {
			c := benchCollection(b, sh.data)
			opt := Options{Device: "cpu", Largest: sh.largest}
			for b.Loop() {
				if _, err := newProblem(c, nil, Query{MinOverlap: 1}, opt, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewPlan times all of a plan's preparation, up to the choice,
// as xsect allpairs --device cpu|auto|gpu takes it: the problem and the
// estimates of the engines the device allows. With "auto" and "gpu" a
// stand-in GPU engine is registered (no GPU is needed) whose estimate reads
// what package gpuallpairs' estimates read: the statistics and one pass
// over the document frequencies. "gpu-tiles" is the tile plan of
// gpuallpairs' BenchmarkMISI (2048 × 2048 tiles, device gpu).
func BenchmarkNewPlan(b *testing.B) {
	defer withEngine(standinGPU{})()
	for _, dev := range []string{"cpu", "auto", "gpu", "gpu-tiles"} {
		b.Run(dev, func(b *testing.B) {
			for _, sh := range prepareShapes {
				b.Run(sh.data, func(b *testing.B) {
					c := benchCollection(b, sh.data)
					opt := Options{Device: dev, Largest: sh.largest}
					for b.Loop() {
						var err error
						if dev == "gpu-tiles" {
							opt.Device = "gpu"
							_, err = NewTilePlan(c, nil, 2048, 2048, opt)
						} else {
							_, err = NewPlan(c, nil, Query{MinOverlap: 1}, opt)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// withEngine registers e until the returned function is called.
func withEngine(e Engine) func() { return registered.With(e) }

// standinGPU is a GPU engine for benchmarks of the planner: it estimates
// from what the GPU engines use (Stats, one memoised pass over the document
// frequencies, like gpuallpairs' column map) and cannot run.
type standinGPU struct{}

func (standinGPU) Name() string     { return "standin" }
func (standinGPU) Kind() DeviceKind { return GPU }
func (standinGPU) Device() (Device, error) {
	return Device{Kind: GPU, Name: "stand-in", Memory: 80 << 30, Parallelism: 132}, nil
}

func (standinGPU) Estimate(p *Problem) (Estimate, error) {
	cols := p.Memo("standin/columns", func() any {
		colOf := make([]int32, p.Universe)
		k := int32(0)
		for e := range colOf {
			keep := p.DFR[e] >= 2
			if !p.Self {
				keep = p.DFR[e] > 0 && p.DFS[e] > 0
			}
			if keep {
				colOf[e] = k
				k++
			} else {
				colOf[e] = -1
			}
		}
		return int(k)
	}).(int)
	work := float64(p.Stats.ScanWork) + float64(p.Stats.Pairs)*float64(cols)/1e3
	return Estimate{Seconds: work / 1e12, Memory: 4 * int64(cols)}, nil
}

func (standinGPU) Run(context.Context, *Problem, *Output) error {
	return cannot("a stand-in for benchmarks")
}

// BenchmarkCountDF times the document-frequency count of newProblem.
func BenchmarkCountDF(b *testing.B) {
	for _, name := range []string{"uniform-1000x10k-1e6", "zipf-1000x100k-1e7", "gcide", "zipf-100000x37k-140"} {
		b.Run(name, func(b *testing.B) {
			c := benchCollection(b, name)
			size := 0
			for i := 0; i < c.Len(); i++ {
				if s := c.Set(i); len(s) > 0 {
					size = max(size, int(s[len(s)-1])+1)
				}
			}
			for b.Loop() {
				countDF(spread{2, minParallel}, c, nil, size)
			}
		})
	}
}

// countDFFile is a collection for BenchmarkCountDFPaths in place of its
// generated one: a file that xsect gen writes, as the commands map it.
var countDFFile = flag.String("countdf.file", "", "BenchmarkCountDFPaths: a collection `FILE` (xsect's binary format) in place of ORKUT-100K's look-alike")

// BenchmarkCountDFPaths times each path of countDF on ORKUT-100K's
// look-alike (90M elements over 8.7M values, 35 MB of counters), or on the
// collection of -countdf.file, with the spread's threads: private counters per worker (as many as 256 MiB
// allow), blocks of values, and buckets (addDFPartitioned, which countDF
// takes where the counters are over a core's share of the L3).
func BenchmarkCountDFPaths(b *testing.B) {
	var c *sets.Collection
	if *countDFFile != "" {
		m, closeFile, err := setio.Map(*countDFFile)
		if err != nil {
			b.Fatal(err)
		}
		defer closeFile()
		c = m
	} else {
		c = benchCollection(b, "zipf-100000x8.7m-905")
	}
	size := 0
	for i := 0; i < c.Len(); i++ {
		if s := c.Set(i); len(s) > 0 {
			size = max(size, int(s[len(s)-1])+1)
		}
	}
	pp := spread{runtime.GOMAXPROCS(0), minParallel}
	n := int64(len(c.Elements))
	b.Run("countDF", func(b *testing.B) {
		for b.Loop() {
			countDF(pp, c, nil, size)
		}
	})
	b.Run("private", func(b *testing.B) {
		// countDF's private path, which it no longer takes here.
		workers := min(pp.threads, max(1, (256<<20)/(4*size)))
		for b.Loop() {
			df := make([]uint32, size)
			private := make([][]uint32, workers)
			par.Do(workers, func(w int) {
				d := df
				if w > 0 {
					d = make([]uint32, size)
					private[w] = d
				}
				for x := w * c.Len() / workers; x < (w+1)*c.Len()/workers; x++ {
					for _, v := range c.Set(x) {
						d[v]++
					}
				}
			})
			par.For(size, pp.threads, func(lo, hi int) {
				for _, d := range private[1:] {
					for e, n := range d[lo:hi] {
						df[lo+e] += n
					}
				}
			})
		}
	})
	b.Run("blocked", func(b *testing.B) {
		for b.Loop() {
			addDFBlocked(pp, make([]uint32, size), c.Len(), c.Set, n)
		}
	})
	b.Run("partitioned", func(b *testing.B) {
		for b.Loop() {
			addDFPartitioned(pp, make([]uint32, size), c.Len(), c.Set, n)
		}
	})
}

// BenchmarkSharedColumns times Problem.SharedColumns against the one-pass
// loop that the stand-in GPU engine (and package gpuallpairs) runs.
func BenchmarkSharedColumns(b *testing.B) {
	for _, name := range []string{"uniform-1000x10k-1e6", "zipf-1000x100k-1e7"} {
		c := benchCollection(b, name)
		p, err := newProblem(c, nil, Query{MinOverlap: 1}, Options{}, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/loop", func(b *testing.B) {
			for b.Loop() {
				p.memos = engine.Memos{}
				standinGPU{}.Estimate(p)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			for b.Loop() {
				p.memos = engine.Memos{}
				p.SharedColumns()
			}
		})
	}
}
