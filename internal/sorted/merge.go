package sorted

import "slices"

// The portable intersections of strictly increasing slices, for the
// 32-bit values of package intersect and the 16-bit lower halves of
// package intersect/twolevel.

// CountBranchless returns |a ∩ b| by a merge whose steps are computed,
// not branched on: the branch predictor cannot learn how two sets
// interleave.
func CountBranchless[T ~uint16 | ~uint32](a, b []T) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		n += b2i(x == y)
		i += b2i(x <= y)
		j += b2i(y <= x)
	}
	return n
}

// IntersectBranchless appends a ∩ b to dst by the merge of
// CountBranchless: every value of a is written, and the output position
// advances only past matches.
func IntersectBranchless[T ~uint16 | ~uint32](dst, a, b []T) []T {
	k := len(dst)
	dst = slices.Grow(dst, min(len(a), len(b)))
	out := dst[:cap(dst)]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		out[k] = x
		k += b2i(x == y)
		i += b2i(x <= y)
		j += b2i(y <= x)
	}
	return dst[:k]
}

// CountGallop returns |a ∩ b| by galloping through the larger slice for
// each value of the smaller: it wins only when one is much smaller.
func CountGallop[T ~uint16 | ~uint32](a, b []T) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	n, j := 0, 0
	for _, x := range a {
		j = Gallop(b, j, x)
		if j == len(b) {
			break
		}
		if b[j] == x {
			n++
			j++
		}
	}
	return n
}

// IntersectGallop appends a ∩ b to dst, galloping as CountGallop does.
func IntersectGallop[T ~uint16 | ~uint32](dst, a, b []T) []T {
	if len(a) > len(b) {
		a, b = b, a
	}
	j := 0
	for _, x := range a {
		j = Gallop(b, j, x)
		if j == len(b) {
			break
		}
		if b[j] == x {
			dst = append(dst, x)
			j++
		}
	}
	return dst
}

// b2i compiles to SETcc, which keeps the merge loops free of branches that
// depend on the data.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
