package intersect

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The benchmarks run every method (and "auto", the dispatching Count and
// Intersect) on pairs of random sets:
//
//	n       size of the larger set: 1K, 10K, 100K, 1M, 10M (10M not with -short)
//	r       size ratio small:large: 1:1, 1:10, 1:100, 1:1000, 1:10000
//	s       selectivity |a ∩ b| / |small|, exact: 0%, 1%, 10%, 33%, 50%, 100%
//
// and report Gelem/s, input elements (|a| + |b|) per second. Examples:
//
//	go test -run - -bench 'Count/vp2intersect/n=1M/r=1:1/' ./intersect/
//	go test -run - -bench 'Count/.*/n=1M/r=1:1000/s=1%' ./intersect/

var (
	benchSizes  = []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
	benchRatios = []int{1, 10, 100, 1000, 10000}
	benchSels   = []int{0, 1, 10, 33, 50, 100} // percent
)

type benchKey struct{ small, large, common int }

var benchCache = map[benchKey][2][]uint32{}

// benchPair returns a strictly increasing set of small values and one of
// large values that share exactly common values. The values are spread
// over the whole uint32 range (sign bit included) and the three kinds
// (common, only in a, only in b) are interleaved at random.
func benchPair(small, large, common int) (a, b []uint32) {
	k := benchKey{small, large, common}
	if p, ok := benchCache[k]; ok {
		return p[0], p[1]
	}
	r := rand.New(rand.NewPCG(uint64(small), uint64(large)^uint64(common)<<32))
	total := small + large - common
	// Gaps uniform in [1, 2*spread]: the mean is 15/16 of what fills the
	// range, enough below it that the sum stays under 2^32.
	spread := uint64(1<<32) / uint64(total) * 15 / 16
	kinds := make([]byte, total) // 0: both, 1: only a, 2: only b
	for i := range kinds {
		switch {
		case i < common:
			kinds[i] = 0
		case i < small:
			kinds[i] = 1
		default:
			kinds[i] = 2
		}
	}
	r.Shuffle(total, func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	a = make([]uint32, 0, small)
	b = make([]uint32, 0, large)
	var x uint64
	for _, kind := range kinds {
		x += 1 + r.Uint64N(2*spread)
		v := uint32(x)
		if kind != 2 {
			a = append(a, v)
		}
		if kind != 1 {
			b = append(b, v)
		}
	}
	if x >= 1<<32 {
		panic("benchPair: values overflow uint32")
	}
	benchCache[k] = [2][]uint32{a, b}
	return a, b
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dK", n/1000)
	}
	return fmt.Sprint(n)
}

// benchGrid calls f for every shape of the grid.
func benchGrid(b *testing.B, f func(b *testing.B, x, y []uint32, common int)) {
	for _, n := range benchSizes {
		if n > 1_000_000 && testing.Short() {
			continue
		}
		for _, ratio := range benchRatios {
			small := n / ratio
			if small < 1 {
				continue
			}
			for _, sel := range benchSels {
				common := small * sel / 100
				name := fmt.Sprintf("n=%s/r=1:%d/s=%d%%", sizeName(n), ratio, sel)
				b.Run(name, func(b *testing.B) {
					x, y := benchPair(small, n, common)
					f(b, x, y, common)
				})
			}
		}
	}
}

func reportElems(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

func BenchmarkCount(b *testing.B) {
	for _, m := range allMethods() {
		b.Run(m.Name, func(b *testing.B) {
			benchGrid(b, func(b *testing.B, x, y []uint32, want int) {
				if got := m.Count(x, y); got != want {
					b.Fatalf("Count = %d, want %d", got, want)
				}
				b.ResetTimer()
				for range b.N {
					m.Count(x, y)
				}
				reportElems(b, len(x)+len(y))
			})
		})
	}
}

func BenchmarkIntersect(b *testing.B) {
	for _, m := range allMethods() {
		b.Run(m.Name, func(b *testing.B) {
			benchGrid(b, func(b *testing.B, x, y []uint32, want int) {
				dst := m.Intersect(nil, x, y)
				if len(dst) != want {
					b.Fatalf("Intersect found %d, want %d", len(dst), want)
				}
				b.ResetTimer()
				for range b.N {
					dst = m.Intersect(dst[:0], x, y)
				}
				reportElems(b, len(x)+len(y))
			})
		})
	}
}

// BenchmarkCrossover times the block methods against the galloping ones
// at the size ratios around the switch between them (gallopRatio):
//
//	go test -run - -bench Crossover -benchtime 10x -count 10 ./intersect/
func BenchmarkCrossover(b *testing.B) {
	var ms []Method
	for _, m := range allMethods() {
		switch m.Name {
		case "branchless", "gallop", "avx2", "avx512", "vp2intersect", "search-simd", "avx512-hybrid", "avx512-xormin", "auto":
			ms = append(ms, m)
		}
	}
	for _, large := range []int{100_000, 1_000_000} {
		for _, ratio := range []int{8, 16, 24, 32, 48, 64, 96, 128, 192, 256} {
			small := large / ratio
			x, y := benchPair(small, large, small/10)
			for _, m := range ms {
				b.Run(fmt.Sprintf("n=%s/r=1:%d/%s", sizeName(large), ratio, m.Name), func(b *testing.B) {
					for range b.N {
						m.Count(x, y)
					}
					reportElems(b, len(x)+len(y))
				})
			}
		}
	}
}
