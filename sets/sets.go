// Package sets defines xsect's set model: a set is a strictly increasing
// []uint32, and a collection of sets is stored flat, as offsets into one
// element array (the CSR layout), so that it can be copied to a GPU as is.
package sets

import (
	"fmt"
	"slices"
)

// IsStrict reports whether s is strictly increasing, the form every xsect
// kernel expects.
func IsStrict(s []uint32) bool {
	// Eight differences at a time, without a branch each: a step that is
	// not an increase makes its difference less 1 negative, and the OR of
	// them all keeps the sign: no mispredicted branch, and eight
	// independent subtractions per step.
	var acc int64
	i := 1
	for ; i+8 <= len(s); i += 8 {
		t := s[i-1 : i+8 : i+8]
		acc |= (int64(t[1]) - int64(t[0]) - 1) | (int64(t[2]) - int64(t[1]) - 1) |
			(int64(t[3]) - int64(t[2]) - 1) | (int64(t[4]) - int64(t[3]) - 1) |
			(int64(t[5]) - int64(t[4]) - 1) | (int64(t[6]) - int64(t[5]) - 1) |
			(int64(t[7]) - int64(t[6]) - 1) | (int64(t[8]) - int64(t[7]) - 1)
		if acc < 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		acc |= int64(s[i]) - int64(s[i-1]) - 1
	}
	return acc >= 0
}

// Normalize sorts s and removes duplicates in place, returning the
// strictly increasing prefix.
func Normalize(s []uint32) []uint32 {
	if IsStrict(s) {
		return s
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// Collection is k sets stored flat. Set i is
// Elements[Offsets[i]:Offsets[i+1]]; len(Offsets) is k+1 and Offsets[0] is 0.
// Set ids are 0-based positions.
type Collection struct {
	// Offsets are the sets' bounds in Elements: k+1 of them, from 0.
	Offsets []uint64
	// Elements are the sets' elements, set after set, each set strictly
	// increasing.
	Elements []uint32
}

// New returns an empty collection.
func New() *Collection { return &Collection{Offsets: []uint64{0}} }

// FromSets builds a collection from plain slices, normalising each one.
// The input slices are not modified.
func FromSets(in ...[]uint32) *Collection {
	c := New()
	for _, s := range in {
		c.AddUnsorted(s)
	}
	return c
}

// Len returns the number of sets.
func (c *Collection) Len() int { return len(c.Offsets) - 1 }

// Set returns set i. The slice aliases the collection's storage.
func (c *Collection) Set(i int) []uint32 {
	return c.Elements[c.Offsets[i]:c.Offsets[i+1]:c.Offsets[i+1]]
}

// SetLen returns |set i|.
func (c *Collection) SetLen(i int) int { return int(c.Offsets[i+1] - c.Offsets[i]) }

// Add appends a strictly increasing set. It panics if s is not strictly
// increasing; use AddUnsorted for raw input.
func (c *Collection) Add(s []uint32) {
	if !IsStrict(s) {
		panic("sets: Add of a set that is not strictly increasing")
	}
	c.Elements = append(c.Elements, s...)
	c.Offsets = append(c.Offsets, uint64(len(c.Elements)))
}

// AddUnsorted appends a copy of s, sorted and without duplicates.
func (c *Collection) AddUnsorted(s []uint32) {
	start := len(c.Elements)
	c.Elements = append(c.Elements, s...)
	norm := Normalize(c.Elements[start:])
	c.Elements = c.Elements[:start+len(norm)]
	c.Offsets = append(c.Offsets, uint64(len(c.Elements)))
}

// Validate checks the structural invariants: offsets start at 0, never
// decrease, end at len(Elements), and every set is strictly increasing.
func (c *Collection) Validate() error {
	if len(c.Offsets) == 0 || c.Offsets[0] != 0 {
		return fmt.Errorf("sets: offsets must start with 0")
	}
	if last := c.Offsets[len(c.Offsets)-1]; last != uint64(len(c.Elements)) {
		return fmt.Errorf("sets: last offset %d, but %d elements", last, len(c.Elements))
	}
	// Check every offset before slicing with any of them: a later offset
	// may lie past the end even when the last one does not.
	for i := 0; i < c.Len(); i++ {
		if c.Offsets[i+1] < c.Offsets[i] {
			return fmt.Errorf("sets: offsets decrease at set %d", i)
		}
	}
	for i := 0; i < c.Len(); i++ {
		if !IsStrict(c.Set(i)) {
			return fmt.Errorf("sets: set %d is not strictly increasing", i)
		}
	}
	return nil
}

// Union returns the union of all sets, strictly increasing.
func (c *Collection) Union() []uint32 {
	u := slices.Clone(c.Elements)
	slices.Sort(u)
	return slices.Compact(u)
}
