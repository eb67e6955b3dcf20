//go:build amd64 && !purego

package intersect

//go:generate sh -c "cd ../asm && go run ./intersect -out ../intersect/intersect_amd64.s -stubs ../intersect/stubs_amd64.go -pkg intersect"

import (
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

func init() {
	if !hasAVX2 {
		return
	}
	avx2 := Method{Name: "avx2", Count: blockCounter(countAVX2), Intersect: blockIntersecter(intersectAVX2, 8)}
	methods = append(methods, avx2)
	blockCount, blockIntersect = avx2.Count, avx2.Intersect
	// With only the portable gallop for skewed inputs. The ratios here and
	// below are the measured crossovers (asm/intersect/README.md, "Dispatch").
	gallopRatio = 48
	if !hasAVX512 {
		return
	}
	xormin := Method{Name: "avx512-xormin", Count: blockCounter(countAVX512XorMin), Intersect: blockIntersecter(intersectAVX512XorMin, 16)}
	hybrid := Method{Name: "avx512-hybrid", Count: blockCounter(countAVX512Hybrid), Intersect: blockIntersecter(intersectAVX512Hybrid, 16)}
	search := Method{Name: "search-simd", Count: searchCounter, Intersect: searchIntersecter}
	skip := Method{Name: "skip-avx512", Count: smallFirst(blockCounter(countSkip)), Intersect: smallFirstIntersect(blockIntersecter(intersectSkip, 1))}
	// "avx512" is the emulation of VP2INTERSECT that is faster on this CPU
	// (xor/min on AMD's cores, the hybrid on Intel's); the other one stays
	// available (and tested) under its own name.
	best, other := xormin, hybrid
	gallopRatio = 40
	if !isAMD {
		best, other = hybrid, xormin
		gallopRatio = 24
	}
	best.Name = "avx512"
	methods = append(methods, best, other, search, skip)
	blockCount, blockIntersect = best.Count, best.Intersect
	gallopCount, gallopIntersect = search.Count, search.Intersect
	if !hasVP2 {
		if isAMD {
			zen4Dispatch(avx2, skip, search)
		}
		return
	}
	vp2 := Method{Name: "vp2intersect", Count: blockCounter(countVP2Intersect), Intersect: blockIntersecter(intersectVP2Intersect, 16)}
	methods = append(methods, vp2)
	// Tiger Lake's VP2INTERSECTD is microcoded and slower than emulating it
	// (Díez-Cañas); Zen 5 runs one per cycle, well ahead of the emulation.
	if isAMD {
		blockCount, blockIntersect = vp2.Count, vp2.Intersect
		gallopRatio = 64
	}
}

// zen4Dispatch sets the dispatch for AMD's cores with AVX-512 but without
// VP2INTERSECT (Zen 4), which run 512-bit operations in two halves: the AVX2
// block kernel beats both emulations of VP2INTERSECTD there, skip-avx512
// beats it from about 1:14, and search-simd beats skip-avx512 beyond about
// 1:1000 (docs/results/pairwise-peers-zen4.txt). Count and Intersect reach
// the last two through gallopCount and gallopIntersect.
func zen4Dispatch(block, skip, search Method) {
	const searchRatio = 1024
	blockCount, blockIntersect = block.Count, block.Intersect
	gallopRatio = 14
	gallopCount = func(a, b []uint32) int {
		if len(a)*searchRatio < len(b) {
			return search.Count(a, b)
		}
		return skip.Count(a, b)
	}
	gallopIntersect = func(dst, a, b []uint32) []uint32 {
		if len(a)*searchRatio < len(b) {
			return search.Intersect(dst, a, b)
		}
		return skip.Intersect(dst, a, b)
	}
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
	return countSearch(a, b)
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
	n := intersectSearch(&dst[:l+1][l], a, b)
	return dst[:l+n]
}
