// Package tune measures the pairwise methods of package intersect on the
// running CPU and fits the dispatch that intersect.Count and
// intersect.Intersect follow: which method serves which sizes.
//
// The package's built-in dispatch was measured on the kinds of CPU its
// authors had (intersect.ActiveProfile says which); where the running CPU
// differs (another cache size, another core, VP2INTERSECT), the crossovers
// between the methods move. Measure times each method's Count on generated
// pairs at several sizes of the larger set and many size ratios; Fit turns
// the timings into an intersect.Profile; Check judges a profile on shapes the
// fit did not use; Save and LoadDefault keep it for the next process.
//
//	t, err := tune.Measure(tune.Options{})
//	p := tune.Fit(t)
//	if err := intersect.UseProfile(p); err != nil { ... }
package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/internal/cpufeat"
	"github.com/xsect/xsect/intersect"
)

// Options says what Measure and Check time.
type Options struct {
	// Sizes are the larger set's sizes, in values, that Measure fits a
	// tier at, in increasing order. nil: DefaultSizes.
	Sizes []int
	// Ratios are the size ratios large:small timed at each size (those
	// that leave the smaller set at least 64 values). nil: DefaultRatios.
	Ratios []int
	// Rounds is how many times each method is timed on each pair; the
	// median is kept. 0: 3.
	Rounds int
	// MinTime is the shortest timed loop of one timing. 0: 3ms.
	MinTime time.Duration
	// Seed seeds the generated pairs. Check adds 1 to it, so that it
	// times other pairs than Measure with the same Options.
	Seed uint64
	// Progress, if not nil, is called after each timing with how many are
	// done and how many there are in all.
	Progress func(done, total int)
}

// DefaultRatios are the size ratios Measure and Check time by default.
var DefaultRatios = []int{1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
	2048, 3072, 4096, 8192, 16384}

// tinySizes are the smaller sets, in values, timed at each size to find
// where galloping stops paying.
var tinySizes = []int{1, 2, 4, 8, 12, 16, 24, 32, 48}

// DefaultSizes returns the sizes Measure fits tiers at by default: from
// half of the core's L2 cache (in 4-byte values) to 16 times it, doubling,
// with three quarters of it too, where the fastest methods change most;
// each rounded to three digits.
func DefaultSizes() []int {
	l2 := cpufeat.L2Size
	if l2 == 0 {
		l2 = 1 << 20
	}
	v := l2 / 4
	sizes := []int{v / 2, 3 * v / 4, v, 2 * v, 4 * v, 8 * v, 16 * v}
	for i, s := range sizes {
		sizes[i] = roundTo3(s)
	}
	return sizes
}

// roundTo3 rounds n to three significant digits: the L2 cache's size is a
// power of two, and so would the sizes be, where a binary search's steps
// alias in the caches (searchSpread in package intersect) and the timings
// would be those of an unusual size.
func roundTo3(n int) int {
	p := 1
	for n/p >= 1000 {
		p *= 10
	}
	return (n + p/2) / p * p
}

func (o Options) withDefaults() Options {
	if o.Sizes == nil {
		o.Sizes = DefaultSizes()
	}
	if o.Ratios == nil {
		o.Ratios = DefaultRatios
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.MinTime <= 0 {
		o.MinTime = 3 * time.Millisecond
	}
	return o
}

// A Timing is the median time of one method's Count on one pair.
type Timing struct {
	// Large and Small are the sizes of the pair's sets.
	Large, Small int
	// Method is the method's name; "auto" with a profile's label for
	// Count under that profile (Check).
	Method string
	// Seconds is the median time of one Count.
	Seconds float64
}

// The methods Measure times, by the ratios where they may win: beyond
// their range each is much slower than another (and some, timed there,
// would take seconds).
var ranges = []struct {
	method   string
	from, to int // ratios; to 0: no limit
}{
	{"branchless", 1, 256}, // where no SIMD method is
	{"vp2intersect", 1, 128},
	{"avx512", 1, 128},
	{"avx2", 1, 128},
	{"lanes-avx512", 4, 1024},
	{"skip-avx512", 4, 0},
	{"ladder-avx512", 2, 0},
	{"search-simd", 12, 0},
	{"gallop", 48, 0},
}

// portableGallopFrom is the lowest ratio galloping is timed at where the
// portable methods are all there is.
const portableGallopFrom = 8

// candidates returns the methods this CPU runs that may win at ratio (the
// branch-free merge only where it has no SIMD method).
func candidates(ratio int) []string {
	var names []string
	has := map[string]bool{}
	for _, m := range intersect.Methods() {
		has[m.Name] = true
	}
	simd := has["avx2"]
	for _, r := range ranges {
		from := r.from
		if r.method == "gallop" && !simd {
			from = portableGallopFrom
		}
		if has[r.method] && ratio >= from && (r.to == 0 || ratio <= r.to) && (r.method != "branchless" || !simd) {
			names = append(names, r.method)
		}
	}
	return names
}

// A shape is one pair to time: its sizes and selectivity.
type shape struct {
	large, small int
	selectivity  float64
}

// shapes returns the pairs timed at size: every ratio that leaves the
// smaller set 64 values or more, and the tiny smaller sets.
func shapes(size int, ratios []int, selectivity float64) []shape {
	var s []shape
	for _, r := range ratios {
		if small := size / r; small >= 64 {
			s = append(s, shape{size, small, selectivity})
		}
	}
	for _, n := range tinySizes {
		if n < size {
			s = append(s, shape{size, n, selectivity})
		}
	}
	return s
}

// methodsFor returns the methods timed on sh.
func methodsFor(sh shape) []string {
	if sh.small < 64 {
		ms := []string{"gallop"}
		for _, m := range candidates(1 << 20) {
			if m != "gallop" {
				ms = append(ms, m)
			}
		}
		return ms
	}
	return candidates(sh.large / sh.small)
}

// Measure times the candidate methods' Count on pairs at each of o.Sizes,
// every ratio of o.Ratios and the tiny smaller sets, at selectivity 1%, and
// returns the timings. It checks every answer against a simple merge first:
// a method that disagrees is an error.
func Measure(o Options) ([]Timing, error) {
	o = o.withDefaults()
	var plan []shape
	for _, size := range o.Sizes {
		plan = append(plan, shapes(size, o.Ratios, 0.01)...)
	}
	return timeShapes(plan, o, o.Seed, nil)
}

// timeShapes times each method of methodsFor on each shape (and Count
// under each profile of autos, as "auto " + its label), o.Rounds times in
// turn, and returns the medians.
func timeShapes(plan []shape, o Options, seed uint64, autos []labelled) ([]Timing, error) {
	total := 0
	for _, sh := range plan {
		total += o.Rounds * (len(methodsFor(sh)) + len(autos))
	}
	done := 0
	var out []Timing
	var lastLarge int
	var b []uint32
	r := newRand(seed)
	var sink int
	defer restore(intersect.ActiveProfile())
	for _, sh := range plan {
		if sh.large != lastLarge {
			b, lastLarge = largeSet(r, sh.large, 0.01), sh.large
		}
		// A tiny smaller set's time depends on where its few values fall:
		// several of them, timed together, give the time of a typical one.
		as := make([][]uint32, max(1, 64/sh.small))
		want := 0
		for i := range as {
			as[i] = smallSet(r, b, sh.small, sh.selectivity)
			want += mergeCount(as[i], b)
		}
		countAll := func(count func(a, b []uint32) int) int {
			n := 0
			for _, a := range as {
				n += count(a, b)
			}
			return n
		}
		names := methodsFor(sh)
		type entry struct {
			name  string
			count func(a, b []uint32) int
			p     *intersect.Profile
		}
		var es []entry
		for _, n := range names {
			m, err := intersect.Lookup(n)
			if err != nil {
				return nil, err
			}
			if got := countAll(m.Count); got != want {
				return nil, fmt.Errorf("tune: %s counts %d of %d x %d values, a merge %d", n, got, sh.small, sh.large, want)
			}
			es = append(es, entry{n, m.Count, nil})
		}
		for _, l := range autos {
			if err := intersect.UseProfile(l.profile); err != nil {
				return nil, err
			}
			if got := countAll(intersect.Count); got != want {
				return nil, fmt.Errorf("tune: Count under the %s profile counts %d of %d x %d values, a merge %d", l.label, got, sh.small, sh.large, want)
			}
			es = append(es, entry{"auto " + l.label, intersect.Count, &l.profile})
		}
		times := make([][]float64, len(es))
		for round := range o.Rounds {
			// Each round starts at another method, so that none always
			// runs first on a cold pair.
			for k := range es {
				e := es[(k+round)%len(es)]
				if e.p != nil {
					if err := intersect.UseProfile(*e.p); err != nil {
						return nil, err
					}
				}
				t := bench.Measure(func() { sink += countAll(e.count) }, 1, o.MinTime) / float64(len(as))
				times[(k+round)%len(es)] = append(times[(k+round)%len(es)], t)
				done++
				if o.Progress != nil {
					o.Progress(done, total)
				}
			}
		}
		for k, e := range es {
			out = append(out, Timing{sh.large, len(as[0]), e.name, median(times[k])})
		}
	}
	_ = sink
	return out, nil
}

// newRand returns the generator of the pairs of seed.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7475_6e65)) }

// restore installs p again (the profile in use before Check switched).
func restore(p intersect.Profile) { _ = intersect.UseProfile(p) }

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// largeSet returns n strictly increasing values whose gaps are those of
// values drawn independently with probability density: geometric, with
// mean 1/density.
func largeSet(r *rand.Rand, n int, density float64) []uint32 {
	b := make([]uint32, n)
	mean := 1/density - 1
	if max := float64(math.MaxUint32-1) / float64(n); mean > max-1 {
		mean = max - 1
	}
	v := uint64(0)
	for i := range b {
		v += uint64(r.ExpFloat64() * mean)
		b[i] = uint32(v)
		v++
	}
	return b
}

// smallSet returns n strictly increasing values of which round(sel*n) are
// values of b, chosen uniformly, and the others values up to b's largest
// that b lacks. b must leave that many values out.
func smallSet(r *rand.Rand, b []uint32, n int, sel float64) []uint32 {
	both := int(math.Round(sel * float64(n)))
	a := make([]uint32, 0, n)
	for len(a) < both {
		for range both - len(a) {
			a = append(a, b[r.IntN(len(b))])
		}
		a = sortedUnique(a)
	}
	top := uint64(b[len(b)-1]) + 1
	others := make([]uint32, 0, n-both)
	for len(others) < n-both {
		for range n - both - len(others) {
			others = append(others, uint32(r.Uint64N(top)))
		}
		others = sortedUnique(others)
		// Drop the values b holds: a merge of the two.
		k, j := 0, 0
		for _, v := range others {
			for j < len(b) && b[j] < v {
				j++
			}
			if j == len(b) || b[j] != v {
				others[k] = v
				k++
			}
		}
		others = others[:k]
	}
	a = append(a, others...)
	slices.Sort(a)
	return a
}

// sortedUnique sorts x and drops its repeated values.
func sortedUnique(x []uint32) []uint32 {
	slices.Sort(x)
	return slices.Compact(x)
}

// mergeCount is the reference the timed methods are checked against: the
// portable merge, which package intersect's tests check against a simpler
// reference still.
func mergeCount(a, b []uint32) int {
	m, err := intersect.Lookup("merge")
	if err != nil {
		panic(err) // every build has it
	}
	return m.Count(a, b)
}
