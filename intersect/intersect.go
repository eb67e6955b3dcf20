// Package intersect computes the intersection of sorted sets of uint32 on
// the CPU.
//
// Every input set must be strictly increasing (sorted, no duplicates); see
// package sets for normalising raw input. Count and Intersect pick the
// fastest method for the CPU they run on and for the shapes of their inputs:
// a SIMD block comparison (AVX-512 with VP2INTERSECT, AVX-512, or AVX2) for
// sets of similar size; when one set is much smaller than the other, a
// search for each of its values in the larger one (batched SIMD binary
// searches with AVX-512, galloping otherwise). Building with the purego tag
// forces the portable Go methods.
//
// Methods lists every implementation this CPU can run, by name, so that tests
// and benchmarks can run each one.
package intersect

import (
	"fmt"
	"slices"
	"strings"
)

// Method is one named implementation of pairwise intersection.
type Method struct {
	// Name identifies the method, for example "merge" or "avx512".
	Name string
	// Count returns |a ∩ b|.
	Count func(a, b []uint32) int
	// Intersect appends a ∩ b to dst and returns the extended slice.
	Intersect func(dst, a, b []uint32) []uint32
}

// methods holds every method, portable ones first; architecture files add
// theirs in init when the CPU supports them.
var methods = []Method{
	{Name: "merge", Count: countMerge, Intersect: intersectMerge},
	{Name: "branchless", Count: countBranchless, Intersect: intersectBranchless},
	{Name: "gallop", Count: countGallop, Intersect: intersectGallop},
}

// Methods returns the methods this CPU can run, the portable ones first.
func Methods() []Method { return slices.Clone(methods) }

// Lookup returns the method called name. The name "auto" returns the
// adaptive method that Count and Intersect use.
func Lookup(name string) (Method, error) {
	if name == "auto" {
		return autoMethod, nil
	}
	for _, m := range methods {
		if m.Name == name {
			return m, nil
		}
	}
	names := []string{"auto"}
	for _, m := range methods {
		names = append(names, m.Name)
	}
	return Method{}, fmt.Errorf("intersect: unknown method %q (this CPU offers: %s)", name, strings.Join(names, ", "))
}

// Count returns |a ∩ b|. a and b are strictly increasing. It allocates
// nothing.
func Count(a, b []uint32) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return 0
	}
	if skewed(len(a), len(b)) {
		return gallopCount(a, b)
	}
	return blockCount(a, b)
}

// Intersect appends a ∩ b to dst (in increasing order) and returns the
// extended slice. a and b are strictly increasing. The SIMD methods write
// whole vectors past the end of the result (within the capacity), so the
// spare capacity of dst must not hold a or b.
func Intersect(dst, a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return dst
	}
	if skewed(len(a), len(b)) {
		return gallopIntersect(dst, a, b)
	}
	return blockIntersect(dst, a, b)
}

// skewed reports whether searching the large set for each value of the
// small one beats a linear pass over both. The architecture files tune the
// ratio to their methods (intersect_amd64.go: 24 to 64).
func skewed(small, large int) bool { return small*gallopRatio < large }

// These are the methods Count and Intersect dispatch to; init functions in
// the architecture files replace them with the fastest this CPU runs.
var (
	gallopRatio     = 32
	gallopCount     = countGallop
	gallopIntersect = intersectGallop
	blockCount      = countBranchless
	blockIntersect  = intersectBranchless
)
