package benchmarks

import (
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/intersect"
)

// seed is the seed of every generated pair, so that all runs and the
// `xsect bench` command see the same inputs.
const seed = 1

// The sweeps. Each varies one parameter around 1M x 1M at selectivity 0.33,
// at both densities: 1% (sparse: a universe 100 times the larger set, where
// Roaring holds arrays) and 33% (where Roaring holds bitmaps).
var (
	densities     = []float64{0.01, 0.33}
	sizes         = []int{1e3, 1e4, 1e5, 1e6, 1e7}
	ratios        = []int{1, 10, 100, 1000, 10000}
	selectivities = []float64{0, 0.01, 0.1, 0.5, 0.9, 1}
)

// BenchmarkSize intersects two sets of equal size, 1K to 10M (10M is left
// out with -short).
func BenchmarkSize(b *testing.B) {
	for _, n := range sizes {
		if n > 1e6 && testing.Short() {
			continue
		}
		for _, d := range densities {
			benchShape(b, bench.Shape{Large: n, Ratio: 1, Selectivity: 0.33, Density: d})
		}
	}
}

// BenchmarkRatio intersects a set of 1M with one 1 to 10000 times smaller.
func BenchmarkRatio(b *testing.B) {
	for _, r := range ratios {
		for _, d := range densities {
			benchShape(b, bench.Shape{Large: 1e6, Ratio: r, Selectivity: 0.33, Density: d})
		}
	}
}

// BenchmarkSelectivity intersects two sets of 1M sharing 0% to 100% of
// their elements.
func BenchmarkSelectivity(b *testing.B) {
	for _, sel := range selectivities {
		for _, d := range densities {
			benchShape(b, bench.Shape{Large: 1e6, Ratio: 1, Selectivity: sel, Density: d})
		}
	}
}

// input is a list of sets and the pairs of them to intersect: one pair for
// a generated shape, consecutive pairs for a real data set. One operation
// intersects every pair.
type input struct {
	sets    [][]uint32
	pairs   [][2]int
	elems   int // input elements summed over the pairs
	overlap int // result elements summed over the pairs
	bms     []*roaring.Bitmap
}

func newInput(sets [][]uint32, pairs [][2]int) *input {
	in := &input{sets: sets, pairs: pairs}
	for _, p := range pairs {
		a, b := sets[p[0]], sets[p[1]]
		in.elems += len(a) + len(b)
		in.overlap += intersect.Count(a, b)
	}
	return in
}

// bitmaps returns the sets as Roaring bitmaps, built on first use.
func (in *input) bitmaps() []*roaring.Bitmap {
	if in.bms == nil {
		in.bms = buildBitmaps(in.sets)
	}
	return in.bms
}

func buildBitmaps(sets [][]uint32) []*roaring.Bitmap {
	bms := make([]*roaring.Bitmap, len(sets))
	for i, s := range sets {
		bms[i] = roaring.BitmapOf(s...)
	}
	return bms
}

// Generated inputs are kept for the whole run: -count repeats every
// benchmark function, and generating the 10M pairs takes seconds.
var generated = map[bench.Shape]*input{}

func generate(tb testing.TB, s bench.Shape) *input {
	if in := generated[s]; in != nil {
		return in
	}
	a, b, err := bench.Pair(s, seed)
	if err != nil {
		tb.Fatal(err)
	}
	in := newInput([][]uint32{a, b}, [][2]int{{0, 1}})
	if in.overlap != s.Overlap() {
		tb.Fatalf("%v: generated pair shares %d elements, want %d", s, in.overlap, s.Overlap())
	}
	generated[s] = in
	return in
}

// benchShape runs every contender on the pair of shape s, for both
// operations, as sub-benchmarks named
// <shape>/op=count|intersect/impl=<contender>.
func benchShape(b *testing.B, s bench.Shape) {
	b.Run(s.BenchName(), func(b *testing.B) { benchInput(b, generate(b, s)) })
}

func benchInput(b *testing.B, in *input) {
	for _, op := range []bench.Op{bench.Count, bench.Intersect} {
		b.Run("op="+op.String(), func(b *testing.B) {
			for _, c := range contenders(op, in) {
				b.Run("impl="+c.name, func(b *testing.B) { run(b, c, in.elems, in.overlap) })
			}
		})
	}
}

// A contender is one implementation of one operation on one input.
type contender struct {
	name string
	// op performs the operation once; it is what is timed.
	op func()
	// result returns the number of elements the last op found.
	result func() int
}

// contenders returns, for operation op on in: xsect's adaptive entry point
// ("xsect"), every method this CPU offers ("xsect-<method>"), Roaring on
// prebuilt bitmaps ("roaring": AndCardinality or And) and Roaring building
// the bitmaps from the sorted arrays first ("roaring+build"). xsect's
// Intersect writes into a reused buffer; Roaring's And allocates its result.
func contenders(op bench.Op, in *input) []contender {
	methods := append([]intersect.Method{{Count: intersect.Count, Intersect: intersect.Intersect}},
		intersect.Methods()...)
	var cs []contender
	for _, m := range methods {
		name := "xsect"
		if m.Name != "" {
			name += "-" + m.Name
		}
		var n int
		if op == bench.Count {
			cs = append(cs, contender{name, func() {
				n = 0
				for _, p := range in.pairs {
					n += m.Count(in.sets[p[0]], in.sets[p[1]])
				}
			}, func() int { return n }})
			continue
		}
		var buf []uint32
		cs = append(cs, contender{name, func() {
			n = 0
			for _, p := range in.pairs {
				buf = m.Intersect(buf[:0], in.sets[p[0]], in.sets[p[1]])
				n += len(buf)
			}
		}, func() int { return n }})
	}
	if op == bench.Count {
		var n uint64
		count := func(bms []*roaring.Bitmap) {
			n = 0
			for _, p := range in.pairs {
				n += bms[p[0]].AndCardinality(bms[p[1]])
			}
		}
		return append(cs,
			contender{"roaring", func() { count(in.bitmaps()) }, func() int { return int(n) }},
			contender{"roaring+build", func() { count(buildBitmaps(in.sets)) }, func() int { return int(n) }})
	}
	res := make([]*roaring.Bitmap, len(in.pairs))
	and := func(bms []*roaring.Bitmap) {
		for i, p := range in.pairs {
			res[i] = roaring.And(bms[p[0]], bms[p[1]])
		}
	}
	card := func() int {
		n := 0
		for _, r := range res {
			n += int(r.GetCardinality())
		}
		return n
	}
	return append(cs,
		contender{"roaring", func() { and(in.bitmaps()) }, card},
		contender{"roaring+build", func() { and(buildBitmaps(in.sets)) }, card})
}

// run checks c's answer against want, then times it, reporting input
// elements per second (both sets) as Gelem/s.
func run(b *testing.B, c contender, elems, want int) {
	c.op() // also builds the prebuilt bitmaps outside the timed loop
	if got := c.result(); got != want {
		b.Fatalf("%s: result has %d elements, want %d", c.name, got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.op()
	}
	b.ReportMetric(float64(elems)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}
