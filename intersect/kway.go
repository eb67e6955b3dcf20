package intersect

import (
	"slices"
)

// autoMethod is the adaptive method: Count and Intersect themselves.
var autoMethod = Method{Name: "auto", Count: Count, Intersect: Intersect}

// IntersectAll appends the intersection of all the given sets to dst and
// returns the extended slice. It intersects the two shortest sets first and
// then each next-shortest with the running result, stopping as soon as the
// result is empty. With no sets the result is empty; with one set it is a
// copy of that set. dst may share memory with the sets, as with Intersect.
func IntersectAll(dst []uint32, sets ...[]uint32) []uint32 {
	return autoMethod.IntersectAll(dst, sets...)
}

// CountAll returns the size of the intersection of all the given sets. With
// no sets it returns 0; with one set, its size.
func CountAll(sets ...[]uint32) int { return autoMethod.CountAll(sets...) }

// IntersectAll is the package's IntersectAll with m for every pairwise
// step.
func (m Method) IntersectAll(dst []uint32, sets ...[]uint32) []uint32 {
	switch len(sets) {
	case 0:
		return dst
	case 1:
		return append(dst, sets[0]...)
	}
	// The running result must not overwrite a set not yet read.
	for _, s := range sets {
		if overlaps(dst, s) {
			return append(dst, m.IntersectAll(nil, sets...)...)
		}
	}
	order := shortestFirst(sets)
	start := len(dst)
	dst = m.Intersect(dst, sets[order[0]], sets[order[1]])
	var tmp []uint32
	for _, i := range order[2:] {
		if len(dst) == start {
			break
		}
		// Copy the running result out of dst: a kernel must never read an
		// input that it is writing.
		tmp = append(tmp[:0], dst[start:]...)
		dst = m.Intersect(dst[:start], tmp, sets[i])
	}
	return dst
}

// CountAll is the package's CountAll with m for every pairwise step.
func (m Method) CountAll(sets ...[]uint32) int {
	switch len(sets) {
	case 0:
		return 0
	case 1:
		return len(sets[0])
	case 2:
		return m.Count(sets[0], sets[1])
	}
	order := shortestFirst(sets)
	acc := m.Intersect(nil, sets[order[0]], sets[order[1]])
	tmp := make([]uint32, 0, len(acc))
	for _, i := range order[2 : len(order)-1] {
		if len(acc) == 0 {
			return 0
		}
		tmp = m.Intersect(tmp[:0], acc, sets[i])
		acc, tmp = tmp, acc
	}
	return m.Count(acc, sets[order[len(order)-1]])
}

func shortestFirst(sets [][]uint32) []int {
	order := make([]int, len(sets))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return len(sets[x]) - len(sets[y]) })
	return order
}
