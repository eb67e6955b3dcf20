// Package settest holds what the tests of xsect's packages share: the
// reference intersection every kernel is checked against, random sets, and
// the way to the project's real data sets (SharedData).
package settest

import (
	"math/rand/v2"
	"slices"
)

// Reference is the simplest correct intersection: a hash set of a, b's
// values looked up in it, sorted.
func Reference(a, b []uint32) []uint32 {
	in := make(map[uint32]bool, len(a))
	for _, x := range a {
		in[x] = true
	}
	out := []uint32{}
	for _, x := range b {
		if in[x] {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// Count is len(Reference(a, b)), without building the intersection.
func Count(a, b []uint32) int {
	in := make(map[uint32]bool, len(a))
	for _, x := range a {
		in[x] = true
	}
	n := 0
	for _, x := range b {
		if in[x] {
			n++
		}
	}
	return n
}

// RandomSet returns n distinct values in [lo, lo+universe), a range within
// uint32 (all of them if it holds fewer than n), sorted.
func RandomSet(r *rand.Rand, n int, lo, universe uint64) []uint32 {
	if uint64(n) > universe {
		n = int(universe)
	}
	seen := make(map[uint32]bool, n)
	s := make([]uint32, 0, n)
	for len(s) < n {
		x := uint32(lo + r.Uint64N(universe))
		if !seen[x] {
			seen[x] = true
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return s
}
