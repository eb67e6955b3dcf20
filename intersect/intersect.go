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
	"unsafe"
)

// Method is one named implementation of pairwise intersection.
type Method struct {
	// Name identifies the method, for example "merge" or "avx512".
	Name string
	// Count returns |a ∩ b|.
	Count func(a, b []uint32) int
	// Intersect appends a ∩ b to dst and returns the extended slice, as
	// the package's Intersect does (dst may share memory with a or b).
	Intersect func(dst, a, b []uint32) []uint32
	// Block reports a method that runs over both sets together, a block
	// at a time (a merge): fastest for sets of similar sizes. The others
	// search the larger set for each value of the smaller.
	Block bool
}

// methods holds every method, portable ones first; architecture files add
// theirs in init when the CPU supports them.
var methods = []Method{
	{Name: "merge", Count: countMerge, Intersect: intersectMerge, Block: true},
	{Name: "branchless", Count: countBranchless, Intersect: intersectBranchless, Block: true},
	{Name: "gallop", Count: countGallop, Intersect: intersectGallop},
}

// Methods returns the methods this CPU can run, the portable ones first.
func Methods() []Method {
	ms := slices.Clone(methods)
	for i := range ms {
		ms[i].Intersect = inPlace(ms[i].Intersect)
	}
	return ms
}

// Lookup returns the method called name. The name "auto" returns the
// adaptive method that Count and Intersect use.
func Lookup(name string) (Method, error) {
	if name == "auto" {
		return autoMethod, nil
	}
	if m, ok := methodNamed(name); ok {
		m.Intersect = inPlace(m.Intersect)
		return m, nil
	}
	names := []string{"auto"}
	for _, m := range methods {
		names = append(names, m.Name)
	}
	return Method{}, fmt.Errorf("intersect: unknown method %q (this CPU offers: %s)", name, strings.Join(names, ", "))
}

// methodNamed returns the method called name as the dispatch runs it
// (without Lookup's guard for a dst that overlaps the inputs).
func methodNamed(name string) (Method, bool) {
	for _, m := range methods {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
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
	d := active.Load()
	if d.skewed(len(a), len(b)) {
		return d.gallopCount(a, b)
	}
	return d.blockCount(a, b)
}

// Intersect appends a ∩ b to dst (in increasing order) and returns the
// extended slice. a and b are strictly increasing. dst may share memory
// with a or b: Intersect(a[:0], a, b) leaves a ∩ b at the start of a. The
// result is then built in a new buffer and copied, since the SIMD methods
// write whole vectors past the end of the result, within dst's capacity,
// where the inputs may not have been read yet.
func Intersect(dst, a, b []uint32) []uint32 {
	if overlaps(dst, a) || overlaps(dst, b) {
		return append(dst, Intersect(nil, a, b)...)
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return dst
	}
	d := active.Load()
	if d.skewed(len(a), len(b)) {
		return d.gallopIntersect(dst, a, b)
	}
	return d.blockIntersect(dst, a, b)
}

// overlaps reports whether appending to dst may write over x: whether
// the spare capacity of dst, where the methods write, shares memory with
// x.
func overlaps(dst, x []uint32) bool {
	if len(x) == 0 || len(dst) == cap(dst) {
		return false
	}
	const size = unsafe.Sizeof(uint32(0))
	d := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	free, end := d+uintptr(len(dst))*size, d+uintptr(cap(dst))*size
	x0 := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	return free < x0+uintptr(len(x))*size && x0 < end
}

// inPlace makes intersect safe when dst shares memory with a or b, as
// Intersect is.
func inPlace(intersect func(dst, a, b []uint32) []uint32) func(dst, a, b []uint32) []uint32 {
	return func(dst, a, b []uint32) []uint32 {
		if overlaps(dst, a) || overlaps(dst, b) {
			return append(dst, intersect(nil, a, b)...)
		}
		return intersect(dst, a, b)
	}
}

// skewed reports whether searching the large set for each value of the
// small one beats a linear pass over both, by the dispatch in use.
func skewed(small, large int) bool { return active.Load().skewed(small, large) }
