package overlap

// The CPU cost model: nanoseconds per unit of work on one thread, measured
// on the development machine (AMD EPYC Zen 5, 2 cores, AVX-512) by
// TestCalibrate (go test ./allpairs -run Calibrate -calibrate -v); see
// docs/ALLPAIRS.md for the method and the figures. Estimates divide by the
// thread count: every engine splits its work into many balanced tasks.
var costs = costModel{
	incL1:      0.7,
	incL2:      1.4,
	incL3:      3,
	incMem:     6,
	elem:       3.0,
	elemL3:     10,
	elemMem:    50,
	stream:     0.5,
	indexElem:  8,
	dense:      0.35,
	word:       0.6,
	wordL3:     0.6,
	wordMM:     0.5,
	pairMM:     2,
	pairBitmap: 8,
	probe:      0.7,
	visit:      3,
	visitExact: 5,
	sortElem:   1.5,
	bitmapSet:  1.5,
	startup:    50e3,
}

type costModel struct {
	// Scan-count counter increments, by the size of the counter array.
	incL1, incL2, incL3, incMem float64
	// elem, elemL3 and elemMem are the costs of starting one inverted list
	// at random when the index fits in L2, in L3, or only in memory;
	// indexElem of placing one element when building an index; stream of
	// reading one list entry or list start in order.
	elem, elemL3, elemMem, indexElem, stream float64
	// dense is the cost of looking at one counter of a dense pass.
	dense float64
	// word is one AND + popcount of two 64-bit words, pair by pair, with
	// the bitmaps in memory (wordL3: when they all fit in L3); wordMM the
	// same inside the blocked bit-matrix product.
	word, wordL3, wordMM float64
	// pairMM is the cost per pair of a tile of the blocked product, apart
	// from its words; pairBitmap the same for the pair-by-pair bitmaps.
	// Architecture files lower word and wordMM for SIMD popcounts.
	pairMM, pairBitmap float64
	// visit is the cost of meeting a candidate in prefix filtering
	// (counting it, remembering it the first time); visitExact of one
	// step of intersecting lists for exact containment.
	visit, visitExact float64
	// probe is one bit test of a dynamic bitmap; bitmapSet one bit set.
	probe, bitmapSet float64
	// sortElem is one element of sorting sets, per level (log2 of the size).
	sortElem float64
	// startup is the fixed cost of starting the workers, in ns.
	startup float64
}

// inc returns the cost of one increment into a counter array of n bytes.
func (c costModel) inc(n int64) float64 {
	switch {
	case n <= 48<<10:
		return c.incL1
	case n <= 1<<20:
		return c.incL2
	case n <= 32<<20:
		return c.incL3
	}
	return c.incMem
}

// build returns the cost of placing n occurrences into an index over a
// universe of u elements: cheap while the list heads fit in L2.
func (c costModel) build(n float64, u int) float64 {
	if u <= 1<<16 {
		return 3 * n
	}
	return c.indexElem * n
}

// incAt is inc for the matrix of element-major scan-count, whose
// increments are scattered over n bytes.
func (c costModel) incAt(n int64) float64 { return c.inc(n) }

// elemAt returns the cost of starting a list of an index of n bytes.
func (c costModel) elemAt(n int64) float64 {
	switch {
	case n <= 1<<20:
		return c.elem
	case n <= 32<<20:
		return c.elemL3
	}
	return c.elemMem
}

// cpuSeconds converts single-thread nanoseconds to the wall time on p's
// threads.
func cpuSeconds(p *Problem, ns float64) float64 {
	return (ns/float64(max(p.Threads, 1)) + costs.startup) / 1e9
}
