package allpairs

import "github.com/xsect/xsect/internal/sysinfo"

// The CPU cost model: nanoseconds per unit of work on one thread, fitted
// with TestCalibrate (go test ./internal/allpairs -run Calibrate -calibrate -v) on
// the development machine (AMD EPYC Zen 5, 2 cores, AVX-512), bitmapMap,
// clear and walk on the Xeon VM of November 2026 (Emerald Rapids, 2
// vCPUs), where the rest were checked; TestValidate checks the choices on
// data they were not fitted on. What belongs to the machine is not here:
// the cache tiers come from sysinfo (tiers), the popcount costs from the
// CPU's features (popcount_amd64.go), and the intersection kernels' costs
// are timed on the problem's own sets (merge's sample, prefix's
// verifications). See docs/ALLPAIRS.md for the method and the figures.
// Estimates divide by the thread count: every engine splits its work into
// many balanced tasks.
var costs = costModel{
	incL1:       0.7,
	incL2:       1.4,
	incL3:       3,
	incMem:      6,
	elem:        3.0,
	elemL3:      10,
	elemMem:     50,
	stream:      0.5,
	revisit:     3,
	walk:        20,
	indexElem:   8,
	dense:       0.35,
	needLookup:  0.65,
	word:        0.6,
	wordL3:      0.6,
	wordMM:      0.5,
	pairMM:      2,
	pairBitmap:  8,
	probe:       0.7,
	visit:       3,
	visitExact:  5,
	sortElem:    1.5,
	clear:       0.2,
	bitmapSet:   1.5,
	bitmapMap:   8,
	report:      38,
	reportFloor: 2.0,
	startup:     50e3,
}

type costModel struct {
	// Scan-count counter increments, by the size of the counter array.
	incL1, incL2, incL3, incMem float64
	// elem, elemL3 and elemMem are the costs of starting one inverted list
	// at random when the index fits in L2, in L3, or only in memory;
	// indexElem of placing one element when building an index; stream of
	// reading one list entry or list start in order.
	elem, elemL3, elemMem, indexElem, stream float64
	// revisit is the cost of one list entry of a probe's second walk over
	// its lists, when it reports the few counters it touched (the counter
	// read again, tested and zeroed), in increments of the same counters:
	// the increments need no answer, the test waits for the counter.
	// Fitted on BMS2, where the second walk takes 4 ns an entry on the
	// Xeon VM and the increments 1.0 (1.4 in this model).
	revisit float64
	// walk is the cost of one element of the universe in an element-major
	// walk: its list's bounds and weight (in splitting the work), even when
	// the list is empty or too short to count.
	walk float64
	// dense is the cost of looking at one counter of a dense pass;
	// needLookup is added when the threshold depends on the pair's sets
	// (containment): the other set's threshold loaded and compared (1.0
	// ns a counter against 0.35 on the Xeon VM, retail at containment 0.8).
	dense, needLookup float64
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
	// probe is one bit test of a dynamic bitmap; bitmapSet one bit set;
	// bitmapMap one bit set at the column of a heavy element, which MMJoin
	// looks up in its column map first.
	probe, bitmapSet, bitmapMap float64
	// sortElem is one element of sorting sets, per level (log2 of the size).
	sortElem float64
	// clear is one byte of a fresh array zeroed (the page faults of new
	// memory included): the private matrices of element-major layouts.
	clear float64
	// report is one qualifying pair handed to the caller, on one thread:
	// Output's batches and the caller's work on them, which for the
	// command is a line formatted and copied into its output file (fitted
	// on the Xeon VM, 2 threads, as a pair run's time less a count's:
	// 18-20 ns a pair on ENRON-30K, checked on TWITTER-30K, 17). However
	// many threads, the output's pace bounds it: reportFloor a pair on the
	// 2-H200 host's 32 cores, where one GPU's pairs wait for it (0.17-0.19
	// s for ENRON's and TWITTER's 10^8, checked on WORDS' and ORKUT's;
	// docs/PERFORMANCE.md, run Y).
	report, reportFloor float64
	// startup is the fixed cost of starting the workers, in ns.
	startup float64
}

// denseFor returns the cost of looking at one counter of a dense pass on
// p: more where every pair has its own threshold.
func (c costModel) denseFor(p *Problem) float64 {
	if _, constant := p.ConstNeed(); constant {
		return c.dense
	}
	return c.dense + c.needLookup
}

// inc returns the cost of one increment into a counter array of n bytes.
func (c costModel) inc(n int64) float64 {
	switch {
	case n <= tiers.l1:
		return c.incL1
	case n <= tiers.l2:
		return c.incL2
	case n <= tiers.l3:
		return c.incL3
	}
	return c.incMem
}

// cacheTiers are the array sizes at which the per-unit costs step up: this
// machine's L1 data and L2 caches of one core, and the part of the L3 that
// random accesses can count on.
type cacheTiers struct{ l1, l2, l3 int64 }

// tiers are this machine's.
var tiers = machineTiers(sysinfo.CPUCaches(), sysinfo.Cores())

// l3PerCore bounds the L3 the model counts on: a server's L3 is shared
// with cores this process does not see (the Xeon of the development VM
// reports 260 MiB for its 2 CPUs, and random increments there cost 4.3 ns
// over 16 MiB, 7.4 ns over 64 MiB and 13 ns over 256 MiB: past 32 MiB,
// memory rather than cache); 16 MiB per core keeps Zen 5's 32 MiB L3 on 2
// cores whole.
const l3PerCore = 16 << 20

// machineTiers returns the tiers for caches c on a machine of cores
// logical CPUs: an L2 shared by several cores counts for its share, a
// missing L3 makes everything past L2 memory.
func machineTiers(c sysinfo.Caches, cores int) cacheTiers {
	t := cacheTiers{l1: c.L1, l2: c.L2 / int64(max(c.L2Shared, 1))}
	t.l2 = max(t.l2, t.l1)
	t.l3 = max(min(c.L3, int64(max(cores, 1))*l3PerCore), t.l2)
	return t
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
	case n <= tiers.l2:
		return c.elem
	case n <= tiers.l3:
		return c.elemL3
	}
	return c.elemMem
}

// cpuSeconds converts single-thread nanoseconds of a CPU engine's work to
// the wall time on p's threads, with the pairs' report, which the same
// threads do (ReportSeconds).
func cpuSeconds(p *Problem, ns float64) float64 {
	return (ns/float64(max(p.Threads, 1))+costs.startup)/1e9 + p.ReportSeconds()
}

// ReportSeconds estimates the time p's threads take to hand the caller
// the pairs that qualify (ExpectedPairs): nothing for a count or a tile
// plan, whose tiles go to the caller whole. It does not depend on the
// engine: GPU engines overlap it with the device's work, CPU engines add
// it to theirs.
func (p *Problem) ReportSeconds() float64 {
	if _, _, ok := p.Tiled(); ok || p.CountOnly {
		return 0
	}
	return p.ExpectedPairs() * max(costs.report/float64(max(p.Threads, 1)), costs.reportFloor) / 1e9
}
