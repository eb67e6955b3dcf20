package sets

import (
	"math"
	"slices"
)

// Stats describes a collection's shape; the planner and `xsect info` use it.
type Stats struct {
	Sets     int     // k
	Elements uint64  // total elements over all sets
	MinSize  int     // elements of the smallest set
	MaxSize  int     // elements of the largest set
	AvgSize  float64 // Elements / Sets (0 without sets)
	Universe int     // distinct elements
	MaxValue uint32  // largest element (0 for an empty collection)
	// Density is AvgSize / Universe: the fraction of the universe an
	// average set covers.
	Density float64
	// Skew is MaxSize / AvgSize: how far the largest set stands out.
	Skew float64
	// SizeCV is the coefficient of variation of the set sizes.
	SizeCV float64
}

// Measure computes the statistics of c in O(total elements) time, using a
// bitmap over [0, max] to count the universe.
func Measure(c *Collection) Stats {
	st := Stats{Sets: c.Len(), Elements: uint64(len(c.Elements))}
	if st.Sets == 0 {
		return st
	}
	st.MinSize = math.MaxInt
	var sumSq float64
	for i := 0; i < st.Sets; i++ {
		n := c.SetLen(i)
		st.MinSize = min(st.MinSize, n)
		st.MaxSize = max(st.MaxSize, n)
		sumSq += float64(n) * float64(n)
		if n > 0 {
			st.MaxValue = max(st.MaxValue, c.Set(i)[n-1])
		}
	}
	st.AvgSize = float64(st.Elements) / float64(st.Sets)
	if st.AvgSize > 0 {
		st.Skew = float64(st.MaxSize) / st.AvgSize
		variance := sumSq/float64(st.Sets) - st.AvgSize*st.AvgSize
		st.SizeCV = math.Sqrt(max(variance, 0)) / st.AvgSize
	}
	st.Universe = countDistinct(c.Elements, st.MaxValue)
	if st.Universe > 0 {
		st.Density = st.AvgSize / float64(st.Universe)
	}
	return st
}

// MeasureBytes returns the memory Measure allocates to measure c: a bitmap
// of its values, or a copy of its elements, to count the distinct ones.
func MeasureBytes(c *Collection) int64 {
	var maxValue uint32
	for i := range c.Len() {
		if s := c.Set(i); len(s) > 0 {
			maxValue = max(maxValue, s[len(s)-1])
		}
	}
	switch {
	case len(c.Elements) == 0:
		return 0
	case sortsToCount(len(c.Elements), maxValue):
		return 4 * int64(len(c.Elements))
	}
	return 8 * (int64(maxValue)/64 + 1)
}

// sortsToCount reports whether countDistinct sorts a copy of n elements
// up to maxValue: a bitmap costs (max+1)/8 bytes; past 8x the element
// array, sorting a copy is cheaper in memory.
func sortsToCount(n int, maxValue uint32) bool {
	return uint64(maxValue)/8 > 8*uint64(n)*4
}

func countDistinct(elems []uint32, maxValue uint32) int {
	if len(elems) == 0 {
		return 0
	}
	if sortsToCount(len(elems), maxValue) {
		u := slices.Clone(elems)
		slices.Sort(u)
		return len(slices.Compact(u))
	}
	bits := make([]uint64, uint64(maxValue)/64+1)
	n := 0
	for _, x := range elems {
		w, b := x/64, uint64(1)<<(x%64)
		if bits[w]&b == 0 {
			bits[w] |= b
			n++
		}
	}
	return n
}
