package simjoin

import "github.com/xsect/xsect/intersect"

// verifySets returns |x ∩ y| of two strictly increasing sets and whether
// it reaches need, by package intersect's SIMD kernels in blocks of x,
// checking after each block whether need is still within reach: the
// common elements found plus what is left of the shorter side. Unless
// exact, it stops as soon as need is reached, and the overlap it returns
// is only a lower bound.
func verifySets(x, y []uint32, need uint32, exact bool) (uint32, bool) {
	if len(x) > len(y) {
		x, y = y, x
	}
	if uint32(len(x)) < need {
		return 0, false
	}
	const block = 512 // long enough that the kernels' calls cost little
	var c uint32
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		if c >= need && !exact {
			return c, true
		}
		hi := min(i+block, len(x))
		if hi == len(x) && j == 0 {
			// One block: the kernels pick their method by the shapes.
			c += uint32(intersect.Count(x[i:], y))
			break
		}
		last := x[hi-1]
		// The part of y up to last: no element of x[hi:] can meet it.
		k := j + gallopTo(y[j:], last)
		if k < len(y) && y[k] == last {
			k++
		}
		c += uint32(intersect.Count(x[i:hi], y[j:k]))
		i, j = hi, k
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
