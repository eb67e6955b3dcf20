// Package sortnet sorts short sets of uint32 without data-dependent
// branches: straight-line sorting networks of min/max pairs, which the
// compiler turns into conditional moves. For a few dozen elements in
// random order they beat an insertion sort, which mispredicts about once
// per element, and a radix sort, whose passes cost more than the work.
package sortnet

import "math"

//go:generate go run gen.go

// SortUnique32 sorts and de-duplicates s, of Max+1 to 2·Max elements, in
// place.
func SortUnique32(s []uint32) []uint32 { return s[:sort32(s, 0)] }

// Sort32 sorts s, of Max+1 to 2·Max elements, in place, keeping repeats.
func Sort32(s []uint32) { sort32(s, 1) }

// sort32 sorts the first 16 elements of s and the rest (padded with
// 2^32-1) by networks, then merges them without branches into s, dropping
// repeats unless keep is 1, and returns the number of elements written.
func sort32(s []uint32, keep int) int {
	// 2^32-1 after the elements: when one side runs out, the other wins.
	var a, b [32]uint32
	for i := range 32 {
		a[i], b[i] = math.MaxUint32, math.MaxUint32
	}
	copy(a[:16], s)
	copy(b[:16], s[16:])
	Sort16((*[16]uint32)(a[:16]))
	Sort16((*[16]uint32)(b[:16]))
	n := len(s)
	// The padding of b may take the place of an element 2^32-1 of a or the
	// reverse: the values written are the same. i+j < n <= 32 throughout.
	i, j, k := 0, 0, 0
	prev := ^min(a[0], b[0]) // differs from the first element
	for range n {
		x, y := a[i&31], b[j&31]
		c := int((uint64(y) - uint64(x)) >> 63) // y < x
		v := min(x, y)
		s[k] = v
		k += ne(v, prev) | keep
		prev = v
		j += c
		i += 1 - c
	}
	return k
}
