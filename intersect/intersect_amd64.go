//go:build amd64 && !purego

package intersect

//go:generate sh -c "cd ../asm && go run ./intersect -out ../intersect/intersect_amd64.s -stubs ../intersect/stubs_amd64.go -pkg intersect"

import (
	"math"
	"slices"

	"github.com/xsect/xsect/internal/cpufeat"
)

// The SIMD kernels come from the avo generator in asm/intersect, whose
// README records the alternatives measured and why these won.

var (
	hasAVX2   = cpufeat.AVX2 && cpufeat.POPCNT && cpufeat.BMI2
	hasAVX512 = hasAVX2 && cpufeat.AVX512F && cpufeat.AVX512VL
	hasVP2    = hasAVX512 && cpufeat.AVX512VP2INTERSECT
	isAMD     = cpufeat.AMD
)

// fitAt returns the l2 of a tier fitted with a larger set of values
// uint32 on a core whose L2 cache holds l2Bytes: tiers scale with the L2
// of the core they run on.
func fitAt(values, l2Bytes int) float64 { return float64(4*values) / float64(l2Bytes) }

// The L2 caches of the cores the tiers were fitted on.
const (
	zen4L2 = 1 << 20 // AMD EPYC, family 25, model 17
	xeonL2 = 2 << 20 // Emerald Rapids
)

// The dispatch per kind of CPU. Each comes from `pairfiles sweep` on that
// CPU over several sizes of the larger set (the smaller's are size/ratio
// rounded down, so 1:7 is a little above 7), and is judged on sizes between
// them (docs/PERFORMANCE.md): Zen 4's in
// docs/results/pairwise-crossovers-zen4-aligned.txt, Emerald Rapids' in
// pairwise-crossovers-xeon.txt (its 0.75·L2 tier in
// pairwise-crossovers-xeon-0.75.txt), the glide between tiers judged in
// pairwise-glide-zen4.txt and pairwise-glide-xeon.txt. The search passes
// come from the same sweeps (the ladder's median time from 1:4096 on over
// search-simd's a pass), judged in pairwise-search-end-zen4.txt (and on the
// Xeon in pairwise-gallop-xeon.txt); gallopUpTo from pairwise-gallop-zen4.txt's
// and pairwise-gallop-xeon.txt's own sweeps, judged there too. The ladder's
// chain of loads wins while the larger set is near (in L2 on the Xeon, up
// to 8·L2 on Zen 4) and loses to the skip, lane and search kernels, which
// keep more loads in flight, beyond. Zen 5's and AVX2's are the earlier
// block/search crossovers (asm/intersect/README.md, "Dispatch"), not
// measured yet with the lane, skip and ladder kernels; on those (and any
// CPU) package intersect/tune measures a Profile that replaces the table.
var (
	zen4Dispatch = dispatch{
		{fitAt(250_000, zen4L2), []step{{4, "avx2"}, {0, "ladder-avx512"}}, 0.59, 16},
		{fitAt(500_000, zen4L2), []step{{8, "avx2"}, {0, "ladder-avx512"}}, 1.21, 24},
		{fitAt(1_000_000, zen4L2), []step{{8, "avx2"}, {19, "lanes-avx512"}, {0, "ladder-avx512"}}, 2.25, 24},
		{fitAt(2_000_000, zen4L2), []step{{8, "avx2"}, {60, "lanes-avx512"}, {0, "ladder-avx512"}}, 5.68, 20},
		{fitAt(4_000_000, zen4L2), []step{{8, "avx2"}, {24, "lanes-avx512"}, {180, "skip-avx512"}, {0, "ladder-avx512"}}, 14.5, 20},
	}
	zen5Dispatch  = dispatch{{0, []step{{64, "vp2intersect"}, {0, "search-simd"}}, 0, 0}}
	intelDispatch = dispatch{
		{fitAt(250_000, xeonL2), []step{{8, "avx512"}, {0, "ladder-avx512"}}, 0, 4},
		{fitAt(393_216, xeonL2), []step{{7, "avx512"}, {60, "lanes-avx512"}, {0, "ladder-avx512"}}, 0.96, 8},
		{fitAt(500_000, xeonL2), []step{{9, "avx512"}, {24, "lanes-avx512"}, {40, "skip-avx512"}, {100, "search-simd"}, {0, "ladder-avx512"}}, 1.63, 12},
		{fitAt(1_000_000, xeonL2), []step{{9, "avx512"}, {23, "lanes-avx512"}, {68, "skip-avx512"}, {1400, "search-simd"}, {0, "ladder-avx512"}}, 3.05, 10},
		{fitAt(2_000_000, xeonL2), []step{{9, "avx512"}, {20, "lanes-avx512"}, {68, "skip-avx512"}, {0, "search-simd"}}, 0, 8},
	}
	avx2Dispatch = dispatch{{0, []step{{48, "avx2"}, {0, "gallop"}}, 0, 0}}
)

func init() {
	if !hasAVX2 {
		return
	}
	avx2 := Method{Name: "avx2", Count: blockCounter(countAVX2), Intersect: blockIntersecter(intersectAVX2, 8), Block: true}
	methods = append(methods, avx2)
	if !hasAVX512 {
		setDispatch(avx2Dispatch, 0, "built-in")
		return
	}
	xormin := Method{Name: "avx512-xormin", Count: blockCounter(countAVX512XorMin), Intersect: blockIntersecter(intersectAVX512XorMin, 16), Block: true}
	hybrid := Method{Name: "avx512-hybrid", Count: blockCounter(countAVX512Hybrid), Intersect: blockIntersecter(intersectAVX512Hybrid, 16), Block: true}
	search := Method{Name: "search-simd", Count: searchCounter, Intersect: searchIntersecter}
	skip := Method{Name: "skip-avx512", Count: smallFirst(blockCounter(countSkip)), Intersect: smallFirstIntersect(blockIntersecter(intersectSkip, 1))}
	lane := Method{Name: "lanes-avx512", Count: laneCounter(countLanes, laneWindow, skip.Count), Intersect: laneIntersecter(intersectLanes, laneWindow, skip.Intersect)}
	ladder := Method{Name: "ladder-avx512", Count: ladderCount, Intersect: ladderIntersect}
	// "avx512" is the emulation of VP2INTERSECT that is faster on this CPU
	// (xor/min on AMD's cores, the hybrid on Intel's); the other one stays
	// available (and tested) under its own name.
	best, other := xormin, hybrid
	if !isAMD {
		best, other = hybrid, xormin
	}
	best.Name = "avx512"
	dispatch := intelDispatch
	if !isAMD {
		// Emerald Rapids: the 64-stride ladder beats the 128 to 1:48 and
		// beyond (BenchmarkLadderKernels, 100K to 600K values).
		ladders[0].upTo = 64
	}
	methods = append(methods, best, other, search, skip, lane, ladder)
	if hasVP2 {
		vp2 := Method{Name: "vp2intersect", Count: blockCounter(countVP2Intersect), Intersect: blockIntersecter(intersectVP2Intersect, 16), Block: true}
		methods = append(methods, vp2)
		// Tiger Lake's VP2INTERSECTD is microcoded and slower than
		// emulating it (Díez-Cañas); Zen 5 runs one per cycle.
		if isAMD {
			dispatch = zen5Dispatch
		}
	} else if isAMD {
		// Zen 4 runs 512-bit operations in two halves: the AVX2 block
		// kernel beats both emulations of VP2INTERSECTD there.
		dispatch = zen4Dispatch
		if l2 := cpufeat.L2Size / 4; l2 > 0 {
			ladderWide = []struct{ maxLen, from int }{{l2, 96}, {2 * l2, 200}}
		}
	}
	setDispatch(dispatch, cpufeat.L2Size, "built-in")
}

// blockCounter wraps a block kernel: it runs until one set has less than a
// block left, and a scalar method finishes.
func blockCounter(kernel func(a, b []uint32) (n, i, j int)) func(a, b []uint32) int {
	return func(a, b []uint32) int {
		n, i, j := kernel(a, b)
		return n + countTail(a[i:], b[j:])
	}
}

// blockIntersecter wraps a block kernel that stores up to slack values
// past its last match.
func blockIntersecter(kernel func(dst *uint32, a, b []uint32) (n, i, j int), slack int) func(dst, a, b []uint32) []uint32 {
	return func(dst, a, b []uint32) []uint32 {
		m := min(len(a), len(b))
		if m == 0 {
			return dst
		}
		l := len(dst)
		dst = slices.Grow(dst, m+slack)
		n, i, j := kernel(&dst[:l+1][l], a, b)
		// The tail fits: n matches used up n of both sets, and it finds at
		// most min(len(a)-i, len(b)-j) <= m-n more.
		return intersectTail(dst[:l+n], a[i:], b[j:])
	}
}

// countTail finishes a block kernel's work: fewer than a block is left of
// one set, possibly much more of the other.
func countTail(a, b []uint32) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if skewed(min(len(a), len(b)), max(len(a), len(b))) {
		return countGallop(a, b)
	}
	return countBranchless(a, b)
}

func intersectTail(dst, a, b []uint32) []uint32 {
	if len(a) == 0 || len(b) == 0 {
		return dst
	}
	if skewed(min(len(a), len(b)), max(len(a), len(b))) {
		return intersectGallop(dst, a, b)
	}
	return intersectBranchless(dst, a, b)
}

// smallFirst and smallFirstIntersect hand the skip kernels the smaller set
// as the one whose values are looked up: skipping through the smaller set
// would be correct but read all of the larger one.
func smallFirst(count func(a, b []uint32) int) func(a, b []uint32) int {
	return func(a, b []uint32) int {
		if len(a) > len(b) {
			a, b = b, a
		}
		return count(a, b)
	}
}

func smallFirstIntersect(intersect func(dst, a, b []uint32) []uint32) func(dst, a, b []uint32) []uint32 {
	return func(dst, a, b []uint32) []uint32 {
		if len(a) > len(b) {
			a, b = b, a
		}
		return intersect(dst, a, b)
	}
}

// searchCounter is search-simd's Count: binary searches of the smaller
// set's values in the larger set, 64 at a time.
func searchCounter(a, b []uint32) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b) >= 1<<31 { // VPGATHERDD takes signed 32-bit indices
		return countGallop(a, b)
	}
	return countSearch(a, b, searchSpread(len(b)))
}

func searchIntersecter(dst, a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b) >= 1<<31 {
		return intersectGallop(dst, a, b)
	}
	if len(a) == 0 {
		return dst
	}
	l := len(dst)
	dst = slices.Grow(dst, len(a)+16)
	n := intersectSearch(&dst[:l+1][l], a, b, searchSpread(len(b)))
	return dst[:l+n]
}

// searchSpread returns the spread search-simd's kernels take for a larger
// set of n values: 0, or where the search's first levels would all step by
// multiples of 1024 values (4 KiB: n a power of two, or near one), 37 lines
// a level (asm/intersect/search.go). Then every lane's reads of those levels
// fall in one set of the L1 cache, and of L2 further up, and evict each
// other: 2^20 values took 2.7x as long as 10^6 (docs/PERFORMANCE.md).
func searchSpread(n int) int {
	if aliasedLevels(n) < 3 {
		return 0
	}
	return 37 * 16
}

// aliasedLevels returns how many of the first 12 levels of search-simd's
// search over n values step by a multiple of 1024 values (the kernel's
// half = n/2, then n -= half).
func aliasedLevels(n int) int {
	c := 0
	for range 12 {
		half := n / 2
		if half > 0 && half%1024 == 0 {
			c++
		}
		n -= half
	}
	return c
}

// A lane kernel's state ([13]int): where each of its four lanes starts in a
// (laneI), in b (laneP) and in dst (laneO), and the end of lane 0 in a
// (laneEnd). The kernel advances them to where it stopped.
const (
	laneWindow = 32 // asm/intersect/lanes.go
	lanes      = 4
	laneI      = 0
	laneP      = lanes
	laneO      = 2 * lanes
	laneEnd    = 3 * lanes
)

// laneSplit cuts a into the lanes of a kernel of window w over b and
// returns the state and the end of each lane, or false when a is too short
// to be worth it or b shorter than a window.
func laneSplit(a, b []uint32, w int) (st [13]int, ends [lanes]int, ok bool) {
	if len(a) < 8*lanes || len(b) < w {
		return st, ends, false
	}
	for l := range lanes {
		s := l * len(a) / lanes
		p, _ := slices.BinarySearch(b, a[s])
		st[laneI+l], st[laneP+l], st[laneO+l] = s, min(p, len(b)-w), s
		ends[l] = (l + 1) * len(a) / lanes
	}
	st[laneEnd] = len(a) / lanes
	return st, ends, true
}

// laneCounter wraps a lane kernel of window w; serial finishes each lane.
func laneCounter(kernel func(a, b []uint32, st *[13]int) int, w int, serial func(a, b []uint32) int) func(a, b []uint32) int {
	return func(a, b []uint32) int {
		if len(a) > len(b) {
			a, b = b, a
		}
		st, ends, ok := laneSplit(a, b, w)
		if !ok {
			return serial(a, b)
		}
		n := kernel(a, b, &st)
		for l := range lanes {
			n += serial(a[st[laneI+l]:ends[l]], b[st[laneP+l]:])
		}
		return n
	}
}

// laneIntersecter wraps an intersect lane kernel. Lane l writes its
// matches from index start+16l of the result, so that the 16 values a
// serial kernel may store past its last match stay clear of the next lane;
// the lanes are then moved together in order.
func laneIntersecter(kernel func(dst *uint32, a, b []uint32, st *[13]int) int, w int, serial func(dst, a, b []uint32) []uint32) func(dst, a, b []uint32) []uint32 {
	return func(dst, a, b []uint32) []uint32 {
		if len(a) > len(b) {
			a, b = b, a
		}
		st, ends, ok := laneSplit(a, b, w)
		if !ok {
			return serial(dst, a, b)
		}
		var starts [lanes]int
		for l := range lanes {
			st[laneO+l] += 16 * l
			starts[l] = st[laneO+l]
		}
		l0 := len(dst)
		size := len(a) + 16*lanes + 16
		dst = slices.Grow(dst, size)
		out := dst[l0 : l0+size]
		kernel(&out[0], a, b, &st)
		n := 0
		for l := range lanes {
			n += copy(out[n:], out[starts[l]:st[laneO+l]])
			lane := serial(out[n:n], a[st[laneI+l]:ends[l]], b[st[laneP+l]:])
			n += copy(out[n:], lane)
		}
		return dst[:l0+n]
	}
}

// ladders are the ladder kernels (asm/intersect/ladder.go), each serving
// size ratios below upTo (the last: all beyond); stride is its first.
var ladders = []struct {
	upTo, stride int
	count        func(a, b []uint32) (n, j int)
	intersect    func(dst *uint32, a, b []uint32) (n, j int)
}{
	{48, 64, countLadder64, intersectLadder64},
	{200, 128, countLadder128, intersectLadder128},
	{288, 256, countLadder256, intersectLadder256},
	{560, 384, countLadder384, intersectLadder384},
	{1400, 768, countLadder768, intersectLadder768},
	{0, 1536, countLadder1536, intersectLadder1536},
}

// ladderWide lists, for larger sets of up to maxLen values, the ratio from
// which the 768-stride kernel serves every ratio below its own upTo: where
// the larger set is near, its longer first stride beats the shorter ones
// (BenchmarkLadderKernels; docs/PERFORMANCE.md). Set at init for the CPUs
// measured, in increasing maxLen.
var ladderWide []struct{ maxLen, from int }

// ladder768 is the index of the 768-stride kernel in ladders.
const ladder768 = 4

// ladderFor returns the index of the ladder kernel for sets of these sizes.
func ladderFor(small, large int) int {
	r := large / max(small, 1)
	for _, w := range ladderWide {
		if large <= w.maxLen {
			if r >= w.from && r < ladders[ladder768].upTo {
				return ladder768
			}
			break
		}
	}
	for k, l := range ladders[:len(ladders)-1] {
		if r < l.upTo {
			return k
		}
	}
	return len(ladders) - 1
}

// ladderCut returns how much of a and b a ladder kernel whose first stride
// is s may take: b[:m], m a multiple of s, and a[:e], the values up to
// b[m-1].
func ladderCut(a, b []uint32, s int) (e, m int) {
	m = len(b) / s * s
	if m == 0 {
		return 0, 0
	}
	if v := b[m-1]; v == math.MaxUint32 {
		e = len(a)
	} else {
		e, _ = slices.BinarySearch(a, v+1)
	}
	return e, m
}

func ladderCount(a, b []uint32) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	l := ladders[ladderFor(len(a), len(b))]
	e, m := ladderCut(a, b, l.stride)
	if e == 0 {
		return countTail(a, b)
	}
	n, j := l.count(a[:e], b[:m])
	return n + countTail(a[e:], b[j:])
}

func ladderIntersect(dst, a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	l := ladders[ladderFor(len(a), len(b))]
	e, m := ladderCut(a, b, l.stride)
	if e == 0 {
		return intersectTail(dst, a, b)
	}
	l0 := len(dst)
	dst = slices.Grow(dst, e+1) // the kernel stores one value past its last match
	n, j := l.intersect(&dst[:l0+1][l0], a[:e], b[:m])
	return intersectTail(dst[:l0+n], a[e:], b[j:])
}
