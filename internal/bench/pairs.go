// Package bench generates the input pairs for pairwise intersection
// benchmarks and times intersection methods on them. The `xsect bench`
// command and the peer benchmarks in the benchmarks module both use it, so
// that they measure the same inputs.
package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Shape describes a generated pair of sets.
type Shape struct {
	// Large is the size of the larger set.
	Large int
	// Ratio is Large / the size of the smaller set (1 for equal sizes).
	Ratio int
	// Selectivity is the fraction of the smaller set that is also in the
	// larger one. The overlap is exact: round(Selectivity * Small()).
	Selectivity float64
	// Density is Large / universe: the fraction of the universe that the
	// larger set covers. 0.01 draws from a universe 100 times its size.
	Density float64
}

// Small returns the size of the smaller set: Large / Ratio, at least 1.
func (s Shape) Small() int { return max(1, s.Large/s.Ratio) }

// Overlap returns the exact size of the intersection.
func (s Shape) Overlap() int { return int(math.Round(s.Selectivity * float64(s.Small()))) }

// Universe returns the number of values the sets are drawn from,
// [0, Universe()).
func (s Shape) Universe() uint64 { return uint64(math.Round(float64(s.Large) / s.Density)) }

// Elements returns the number of input elements, Small() + Large(): the
// figure that G elements/s rates refer to.
func (s Shape) Elements() int { return s.Small() + s.Large }

// Validate reports whether a pair of this shape can be generated.
func (s Shape) Validate() error {
	switch {
	case s.Large < 1:
		return fmt.Errorf("bench: size %d: must be at least 1", s.Large)
	case s.Ratio < 1:
		return fmt.Errorf("bench: ratio %d: must be at least 1", s.Ratio)
	case !(s.Selectivity >= 0 && s.Selectivity <= 1):
		return fmt.Errorf("bench: selectivity %v: must be in [0, 1]", s.Selectivity)
	case !(s.Density > 0 && s.Density <= 1):
		return fmt.Errorf("bench: density %v: must be in (0, 1]", s.Density)
	}
	if u := s.Universe(); u > 1<<32 {
		return fmt.Errorf("bench: size %d at density %v needs a universe of %d values, more than 2^32", s.Large, s.Density, u)
	}
	if need := uint64(s.Small() + s.Large - s.Overlap()); need > s.Universe() {
		return fmt.Errorf("bench: %v needs %d distinct values, more than its universe of %d", s, need, s.Universe())
	}
	return nil
}

// String returns a compact description, such as "1M:1K sel=0.33 dens=0.01".
func (s Shape) String() string {
	return fmt.Sprintf("%s:%s sel=%s dens=%s", FormatCount(s.Large), FormatCount(s.Small()),
		strconv.FormatFloat(s.Selectivity, 'g', -1, 64), strconv.FormatFloat(s.Density, 'g', -1, 64))
}

// BenchName returns the shape as Go sub-benchmark name components, such as
// "size=1M/ratio=1000/sel=33%/dens=1%", which benchstat can split by key.
func (s Shape) BenchName() string {
	return fmt.Sprintf("size=%s/ratio=%d/sel=%s/dens=%s", FormatCount(s.Large), s.Ratio,
		percent(s.Selectivity), percent(s.Density))
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'g', 4, 64) + "%" }

// FormatCount writes n with a K, M or G suffix when it is an exact
// multiple: 1000 is "1K", 1500 is "1500".
func FormatCount(n int) string {
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.Itoa(n/u.mult) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

// Grid returns every combination of the given sizes (of the larger set),
// ratios, selectivities and densities, sizes varying slowest.
func Grid(sizes, ratios []int, selectivities, densities []float64) []Shape {
	var g []Shape
	for _, n := range sizes {
		for _, r := range ratios {
			for _, sel := range selectivities {
				for _, d := range densities {
					g = append(g, Shape{Large: n, Ratio: r, Selectivity: sel, Density: d})
				}
			}
		}
	}
	return g
}

// Pair generates a pair of strictly increasing sets of the given shape: a
// with Small() elements and b with Large elements, sharing exactly
// Overlap() of them, drawn uniformly without replacement from
// [0, Universe()). The same shape and seed give the same pair everywhere.
func Pair(s Shape, seed uint64) (a, b []uint32, err error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	small, large, both := s.Small(), s.Large, s.Overlap()
	// Mix the shape into the stream so that shapes sharing a seed do not
	// share a prefix of values.
	r := rand.New(rand.NewPCG(seed, uint64(large)*0x9e3779b97f4a7c15^uint64(small)^
		math.Float64bits(s.Selectivity)<<1^math.Float64bits(s.Density)))
	values := sample(r, small+large-both, s.Universe())
	// Label each distinct value: 0 in both sets, 1 in a only, 2 in b only,
	// in random order, so that the common values are spread uniformly.
	labels := make([]uint8, len(values))
	for i := both; i < small; i++ {
		labels[i] = 1
	}
	for i := small; i < len(labels); i++ {
		labels[i] = 2
	}
	r.Shuffle(len(labels), func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
	a = make([]uint32, 0, small)
	b = make([]uint32, 0, large)
	for i, v := range values {
		switch labels[i] {
		case 0:
			a = append(a, v)
			b = append(b, v)
		case 1:
			a = append(a, v)
		default:
			b = append(b, v)
		}
	}
	return a, b, nil
}

// sample returns m distinct values drawn uniformly from [0, universe), in
// increasing order. m <= universe <= 2^32.
func sample(r *rand.Rand, m int, universe uint64) []uint32 {
	out := make([]uint32, 0, m)
	if uint64(m)*4 >= universe {
		// Dense: selection sampling (Knuth's Algorithm S) visits every
		// value once and keeps it with probability needed/remaining.
		need := uint64(m)
		for x := uint64(0); need > 0; x++ {
			if r.Uint64N(universe-x) < need {
				out = append(out, uint32(x))
				need--
			}
		}
		return out
	}
	// Sparse: draw, sort, drop repeats, and draw again for the values lost
	// to repeats; fewer than a quarter collide, so this ends quickly.
	for len(out) < m {
		for range m - len(out) {
			out = append(out, uint32(r.Uint64N(universe)))
		}
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}
