// Package radix sorts uint32 keys by least-significant-digit radix sort,
// which beats the comparison sort from a few dozen keys up: loaders sort
// every unsorted set they read, generators every set they draw.
package radix

// Sort sorts s in increasing order, using tmp, of at least len(s), as
// scratch. It makes one pass per byte in which the keys differ, plus one to
// find those bytes.
func Sort(s, tmp []uint32) {
	if len(s) < 2 {
		return
	}
	tmp = tmp[:len(s)]
	or, and := uint32(0), ^uint32(0)
	for _, x := range s {
		or |= x
		and &= x
	}
	diff := or ^ and
	src, dst := s, tmp
	for shift := uint(0); shift < 32; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		var count [256]uint32
		for _, x := range src {
			count[(x>>shift)&0xff]++
		}
		sum := uint32(0)
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, x := range src {
			d := (x >> shift) & 0xff
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}
