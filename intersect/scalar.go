package intersect

import (
	"slices"

	"github.com/xsect/xsect/internal/sorted"
)

// The portable methods. They are the reference the SIMD methods are checked
// against and the fallback on every CPU.

func countMerge(a, b []uint32) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

func intersectMerge(dst, a, b []uint32) []uint32 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	return dst
}

// b2i compiles to SETcc: it keeps the merge loops free of branches that
// depend on the data, which a branch predictor cannot learn.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func countBranchless(a, b []uint32) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		n += b2i(x == y)
		i += b2i(x <= y)
		j += b2i(y <= x)
	}
	return n
}

func intersectBranchless(dst, a, b []uint32) []uint32 {
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

// countGallop expects len(a) <= len(b); it works for any sizes, but wins
// only when a is much smaller.
func countGallop(a, b []uint32) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	n, j := 0, 0
	for _, x := range a {
		j = sorted.Gallop(b, j, x)
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

func intersectGallop(dst, a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	j := 0
	for _, x := range a {
		j = sorted.Gallop(b, j, x)
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
