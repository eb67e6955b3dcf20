// Package radix sorts uint32 keys by least-significant-digit radix sort,
// which beats the comparison sort from a few dozen keys up: loaders sort
// every unsorted set they read, generators every set they draw.
package radix

import "math/bits"

// Sort sorts s in increasing order, using tmp, of at least len(s), as
// scratch. It sorts only on the bits in which the keys differ, by digits of
// 6, 8 or 11 bits, whichever makes the passes cheapest: each reads and
// scatters the keys and sums one counter per digit value, so short inputs
// take more, narrower digits and long ones fewer, wider ones. A pass whose
// digit is the same in every key is skipped.
func Sort(s, tmp []uint32) {
	n := len(s)
	if n < 2 {
		return
	}
	tmp = tmp[:n]
	or, and := uint32(0), ^uint32(0)
	for _, x := range s {
		or |= x
		and &= x
	}
	diff := or ^ and
	if diff == 0 {
		return
	}
	lo := bits.TrailingZeros32(diff)
	width := bits.Len32(diff) - lo
	w := digitBits(n, width)
	src, dst := s, tmp
	for shift := lo; shift < lo+width; shift += w {
		if (diff>>shift)&(1<<w-1) == 0 {
			continue
		}
		switch w {
		case 6:
			pass6(src, dst, uint(shift))
		case 8:
			pass8(src, dst, uint(shift))
		default:
			pass11(src, dst, uint(shift))
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}

// digitBits returns the digit width for sorting n keys on width bits: the
// one of 6, 8 and 11 that minimises p*(3n + 2^w) for p = ceil(width/w)
// passes, the cost of the passes in units of about a cycle.
func digitBits(n, width int) int {
	best, bestCost := 0, 0
	for _, w := range []int{6, 8, 11} {
		p := (width + w - 1) / w
		cost := p * (3*n + 1<<w)
		if best == 0 || cost < bestCost {
			best, bestCost = w, cost
		}
	}
	return best
}

// The passes are written out for each width: one generic function over the
// counter arrays measured a third to a half slower.

// pass6 moves src to dst stably ordered by the 6-bit digit at shift.
func pass6(src, dst []uint32, shift uint) {
	const mask = 1<<6 - 1
	var count [mask + 1]uint32
	shift &= 31
	for _, x := range src {
		count[(x>>shift)&mask]++
	}
	sum := uint32(0)
	for i, c := range count {
		count[i] = sum
		sum += c
	}
	dst = dst[:len(src)]
	for _, x := range src {
		d := (x >> shift) & mask
		dst[count[d]] = x
		count[d]++
	}
}

// pass8 moves src to dst stably ordered by the 8-bit digit at shift.
func pass8(src, dst []uint32, shift uint) {
	const mask = 1<<8 - 1
	var count [mask + 1]uint32
	shift &= 31
	for _, x := range src {
		count[(x>>shift)&mask]++
	}
	sum := uint32(0)
	for i, c := range count {
		count[i] = sum
		sum += c
	}
	dst = dst[:len(src)]
	for _, x := range src {
		d := (x >> shift) & mask
		dst[count[d]] = x
		count[d]++
	}
}

// pass11 moves src to dst stably ordered by the 11-bit digit at shift.
func pass11(src, dst []uint32, shift uint) {
	const mask = 1<<11 - 1
	var count [mask + 1]uint32
	shift &= 31
	for _, x := range src {
		count[(x>>shift)&mask]++
	}
	sum := uint32(0)
	for i, c := range count {
		count[i] = sum
		sum += c
	}
	dst = dst[:len(src)]
	for _, x := range src {
		d := (x >> shift) & mask
		dst[count[d]] = x
		count[d]++
	}
}
