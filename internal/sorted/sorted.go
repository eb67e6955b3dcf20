// Package sorted holds searches over sorted slices that several
// intersection packages share.
package sorted

// Gallop returns the first index i >= lo with b[i] >= x (len(b) if none),
// searching exponentially from lo and then binary searching the bracket:
// O(log d) steps for a target d positions ahead, which is what makes
// intersecting a small set with a much larger one cheap.
func Gallop[T ~uint16 | ~uint32](b []T, lo int, x T) int {
	if lo >= len(b) || b[lo] >= x {
		return lo
	}
	// b[lo] < x: double the step until b[lo+step] >= x or the end.
	step := 1
	for lo+step < len(b) && b[lo+step] < x {
		lo += step
		step <<= 1
	}
	hi := min(lo+step, len(b))
	// Invariant: b[lo] < x, and b[hi] >= x or hi == len(b).
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if b[mid] < x {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
