package intersect

import "github.com/xsect/xsect/internal/sorted"

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

// The branch-free merge and galloping are shared with the two-level
// layout's 16-bit groups.

func countBranchless(a, b []uint32) int { return sorted.CountBranchless(a, b) }

func intersectBranchless(dst, a, b []uint32) []uint32 {
	return sorted.IntersectBranchless(dst, a, b)
}

// countGallop works for any sizes, but wins only when one set is much
// smaller.
func countGallop(a, b []uint32) int { return sorted.CountGallop(a, b) }

func intersectGallop(dst, a, b []uint32) []uint32 { return sorted.IntersectGallop(dst, a, b) }
