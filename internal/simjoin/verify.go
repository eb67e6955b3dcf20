package simjoin

import "github.com/xsect/xsect/intersect"

// simdFrom is the length from which both remainders of a verification are
// counted by package intersect's SIMD kernels, in blocks that keep the
// early exit, rather than by a scalar merge.
const simdFrom = 48

// verify completes the overlap of a candidate pair of which c common
// elements are known and every other one lies in both remainders x and y
// (strictly increasing). It returns c + |x ∩ y| and true when that reaches
// need; false as soon as need is out of reach. Unless exact, it stops as
// soon as need is reached, and the overlap it returns is only a lower
// bound.
func verify(x, y []uint32, c, need uint32, exact bool) (uint32, bool) {
	// c plus the elements left on either side bounds the overlap: each
	// element that one side skips lowers that side's bound.
	rx, ry := c+uint32(len(x)), c+uint32(len(y))
	if rx < need || ry < need {
		return c, false
	}
	if len(x) >= simdFrom && len(y) >= simdFrom {
		return verifyBlocks(x, y, c, need, exact)
	}
	i, j := 0, 0
	for c < need {
		// rx, ry >= need > c: both sides have elements left.
		a, b := x[i], y[j]
		switch {
		case a == b:
			c++
			i++
			j++
		case a < b:
			i++
			rx--
			if rx < need {
				return c, false
			}
		default:
			j++
			ry--
			if ry < need {
				return c, false
			}
		}
	}
	if exact {
		c += countRest(x[i:], y[j:])
	}
	return c, true
}

// countRest returns |x ∩ y|.
func countRest(x, y []uint32) uint32 {
	if len(x) == 0 || len(y) == 0 {
		return 0
	}
	if len(x) >= 16 && len(y) >= 16 {
		return uint32(intersect.Count(x, y))
	}
	var c uint32
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		a, b := x[i], y[j]
		if a == b {
			c++
		}
		if a <= b {
			i++
		}
		if a >= b {
			j++
		}
	}
	return c
}

// verifyBlocks is verify for long remainders: blocks of x are counted
// against the part of y they can meet by the SIMD kernels, and the bound
// is checked after each.
func verifyBlocks(x, y []uint32, c, need uint32, exact bool) (uint32, bool) {
	const block = 64
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		if c >= need && !exact {
			return c, true
		}
		hi := min(i+block, len(x))
		last := x[hi-1]
		// The part of y up to last: no element of x[hi:] can meet it.
		k := j + gallopTo(y[j:], last)
		if k < len(y) && y[k] == last {
			k++
		}
		c += uint32(intersect.Count(x[i:hi], y[j:k]))
		i, j = hi, k
		// The bound: what is left of the shorter side.
		if c+uint32(min(len(x)-i, len(y)-j)) < need {
			return c, false
		}
	}
	return c, c >= need
}

// gallopTo returns the number of elements of the increasing s below v.
func gallopTo(s []uint32, v uint32) int {
	step := 1
	hi := 0
	for hi < len(s) && s[hi] < v {
		hi += step
		step <<= 1
	}
	lo := hi - step>>1
	if step == 1 {
		lo = 0
	}
	hi = min(hi, len(s))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
