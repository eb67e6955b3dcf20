// Package twolevel stores sorted sets of uint32 in the two-level
// (hierarchical) layout of Schlegel, Willhalm and Lehner, "Fast Sorted-Set
// Intersection using SIMD Instructions" (ADMS 2011), and intersects them.
//
// A set is split into groups of elements that share their upper 16 bits. Each
// group stores its upper half once, in a 32-bit header that also holds the
// group's size, and the lower halves of its elements as packed uint16. Dense
// sets cost close to 2 bytes an element instead of 4; a set whose elements
// all sit in groups of their own costs 6.
//
// Intersection merges the headers first and intersects the lower halves of
// each pair of groups with the same upper half. On amd64 with AVX-512 the
// lower halves are compared 32 at a time: with VP2INTERSECTD where the CPU
// has it, else with AVX-512 BW alone (see twolevel_amd64.go). Elsewhere, or
// with the purego build tag, a portable Go merge does the work.
//
// The layout pays where the sets are dense, many elements to a group: with
// VP2INTERSECT (Zen 5) such sets count faster than package intersect's
// method on plain slices, in about half the memory; sparse ones (groups of
// a few elements) count a little slower. Without VP2INTERSECT (Sapphire
// Rapids) the layout saves memory but not time. docs/PERFORMANCE.md has
// the figures and their command.
//
// Methods lists every implementation this CPU can run, by name, so that tests
// and benchmarks can run each one.
package twolevel

//go:generate go run -C ../../asm ./twolevel -out ../intersect/twolevel/twolevel_amd64.s

import (
	"fmt"
	"slices"
	"strings"
)

// Set is a strictly increasing set of uint32 in the two-level layout. The
// zero value is the empty set. A Set is immutable once built and may be
// read by many goroutines at once.
type Set struct {
	// hdr holds one word per group, in increasing order of upper half:
	// the upper 16 bits of the group's elements in the high half and the
	// group's size minus one (0..65535) in the low half.
	hdr []uint32
	// lows holds the lower 16 bits of every element, group after group,
	// each group increasing.
	lows []uint16
}

// FromSorted builds a Set holding the elements of s. s must be strictly
// increasing; FromSorted panics otherwise, since a set with duplicates or
// out of order would make every intersection wrong.
func FromSorted(s []uint32) *Set {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			panic(fmt.Sprintf("twolevel: FromSorted of a slice that is not strictly increasing (s[%d] = %d, s[%d] = %d)",
				i-1, s[i-1], i, s[i]))
		}
	}
	t := &Set{lows: make([]uint16, len(s))}
	for i := 0; i < len(s); {
		hi := s[i] >> 16
		j := i + 1
		for j < len(s) && s[j]>>16 == hi {
			j++
		}
		t.hdr = append(t.hdr, hi<<16|uint32(j-i-1))
		i = j
	}
	for i, x := range s {
		t.lows[i] = uint16(x)
	}
	return t
}

// Len returns the number of elements in s.
func (s *Set) Len() int { return len(s.lows) }

// Groups returns the number of groups in s: the number of distinct upper
// halves among its elements.
func (s *Set) Groups() int { return len(s.hdr) }

// SizeBytes returns the memory that s's elements occupy: 4 bytes a group
// and 2 bytes an element.
func (s *Set) SizeBytes() int { return 4*len(s.hdr) + 2*len(s.lows) }

// AppendTo appends the elements of s, increasing, to dst and returns the
// extended slice.
func (s *Set) AppendTo(dst []uint32) []uint32 {
	dst = slices.Grow(dst, len(s.lows))
	off := 0
	for _, h := range s.hdr {
		hi, n := h&^0xffff, int(h&0xffff)+1
		for _, lo := range s.lows[off : off+n] {
			dst = append(dst, hi|uint32(lo))
		}
		off += n
	}
	return dst
}

// Method is one named implementation of two-level intersection.
type Method struct {
	// Name identifies the method, for example "generic" or "avx512".
	Name string
	// Count returns |a ∩ b|.
	Count func(a, b *Set) int
	// Intersect appends a ∩ b to dst, increasing, and returns the extended
	// slice.
	Intersect func(dst []uint32, a, b *Set) []uint32
	// IntersectSet returns a ∩ b as a new Set.
	IntersectSet func(a, b *Set) *Set
}

// methods holds every method, the portable one first; architecture files
// add theirs in init when the CPU supports them, and point best at the
// fastest.
var methods = []Method{
	{Name: "generic", Count: countGeneric, Intersect: intersectGeneric, IntersectSet: intersectSetGeneric},
}

// best is the method Count, Intersect and IntersectSet use.
var best = methods[0]

// Methods returns the methods this CPU can run, the portable one first.
func Methods() []Method { return slices.Clone(methods) }

// Lookup returns the method called name. The name "auto" returns the
// method that Count, Intersect and IntersectSet use.
func Lookup(name string) (Method, error) {
	if name == "auto" {
		return Method{Name: "auto", Count: Count, Intersect: Intersect, IntersectSet: IntersectSet}, nil
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
	return Method{}, fmt.Errorf("twolevel: unknown method %q (this CPU offers: %s)", name, strings.Join(names, ", "))
}

// Count returns |a ∩ b|. It allocates nothing.
func Count(a, b *Set) int { return best.Count(a, b) }

// Intersect appends a ∩ b to dst, increasing, and returns the extended
// slice. It may write past the returned length, within dst's capacity.
func Intersect(dst []uint32, a, b *Set) []uint32 { return best.Intersect(dst, a, b) }

// IntersectSet returns a ∩ b as a new Set.
func IntersectSet(a, b *Set) *Set { return best.IntersectSet(a, b) }
