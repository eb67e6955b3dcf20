package allpairs

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/xsect/xsect/intersect"
)

// merge intersects every pair with intersect.Count, the SIMD block
// comparison or galloping that package intersect picks per pair. Its work
// grows with k² times the set sizes, so it wins only when there are few,
// large sets with a huge universe, or when sizes differ so much that
// galloping skips most of the larger sets.
type merge struct{ cpuEngine }

func init() { Register(merge{cpuEngine{"merge"}}) }

func (merge) Estimate(p *Problem) (Estimate, error) {
	perPair := mergeSample(p)
	ns := perPair * float64(p.Stats.Pairs)
	return Estimate{Seconds: cpuSeconds(p, ns), Memory: tileMemory(p), Detail: fmt.Sprintf("intersect.Count per pair, %.0f ns on a sample", perPair)}, nil
}

// lowerBound: every pair costs a call and every merge step some time, far
// less than any kernel measured (0.4 ns a step with VP2INTERSECT on Zen 5,
// about 2 ns a pair).
func (merge) lowerBound(p *Problem) float64 {
	return cpuSeconds(p, mergeMinPair*float64(p.Stats.Pairs)+mergeMinStep*p.Stats.MergeWork)
}

const (
	mergeMinPair = 1
	mergeMinStep = 0.1
)

// mergeSample times intersect.Count on up to 256 pairs drawn from p (the
// best of three passes) and returns the mean nanoseconds per pair: the
// pairwise kernels differ by over 10x between CPUs (VP2INTERSECT, AVX-512,
// AVX2, portable Go) and with the sizes and their ratio, so measuring beats
// any formula. The pairs hold about 2^21 elements in all passes, and at
// least 8 pairs are timed.
func mergeSample(p *Problem) float64 {
	return p.Memo("allpairs.merge", func() any {
		kr, ks := p.R.Len(), p.S.Len()
		if kr == 0 || ks == 0 || (p.Self && kr < 2) {
			return 0.0
		}
		rng := rand.New(rand.NewPCG(uint64(kr), uint64(ks)))
		pair := max(p.Stats.R.AvgSize+p.Stats.S.AvgSize, 1)
		n := int(min(256, max(8, (1<<21)/(3*pair))))
		pa, pb := make([][]uint32, n), make([][]uint32, n)
		for x := range pa {
			i, j := randomPair(rng, kr, ks, p.Self)
			pa[x], pb[x] = p.R.Set(i), p.S.Set(j)
		}
		best := math.Inf(1)
		sink := 0
		for rep := 0; rep < 3; rep++ {
			start := time.Now()
			for x := range pa {
				sink += intersect.Count(pa[x], pb[x])
			}
			best = min(best, float64(time.Since(start).Nanoseconds()))
		}
		_ = sink
		// Collections larger than the caches run slower than a sample
		// that the first pass brought in.
		scale := 1.0
		if 4*(p.Stats.R.Elements+p.Stats.S.Elements) > tiers.l3 {
			scale = 1.3
		}
		return scale * best / float64(n)
	}).(float64)
}

// randomPair draws a pair of positions among nr × ns, two different ones
// in a self-join (nr == ns >= 2).
func randomPair(rng *rand.Rand, nr, ns int, self bool) (i, j int) {
	i, j = rng.IntN(nr), rng.IntN(ns)
	for self && i == j {
		j = rng.IntN(ns)
	}
	return i, j
}

// tileMemory is the memory of the per-worker tile buffers.
func tileMemory(p *Problem) int64 {
	rows, cols, ok := p.Tiled()
	if !ok {
		// Column bands of at most 64 columns over all the rows.
		rows, cols = p.R.Len(), min(64, p.S.Len())
	}
	return int64(p.Threads) * 4 * int64(rows) * int64(cols)
}

func (merge) Run(ctx context.Context, p *Problem, out *Output) error {
	// Bands of columns whose sets fit in L2 together; every row streams
	// through them.
	band := max(1, int((256<<10)/(4*max(p.Stats.S.AvgSize, 1))))
	band = min(band, max(1, p.S.Len()/(tasksPerThread*p.Threads)))
	cost := func(r0, r1, c0, c1 int) int64 {
		return rectPairs(p.Self, r0, r1, c0, c1) * int64(p.Stats.R.AvgSize+p.Stats.S.AvgSize+8)
	}
	return runTiles(ctx, p, out, band, cost, func() filler {
		return func(t *Tile) {
			for x := 0; x < t.Rows && !stopped(ctx); x++ {
				i := t.Row0 + x
				a := p.R.Set(i)
				y0 := 0
				if p.Self {
					y0 = max(0, i+1-t.Col0)
				}
				row := t.Counts[x*t.Cols : (x+1)*t.Cols]
				for y := y0; y < t.Cols; y++ {
					row[y] = uint32(intersect.Count(a, p.S.Set(t.Col0+y)))
				}
			}
		}
	})
}
