package allpairs

import "math/bits"

// The AND + popcount kernels of the bitmap engines. Architecture files
// replace these with SIMD versions in init; popcount_test.go checks every
// version against the portable one.
var (
	// andCount returns the number of bits set in both a and b[:len(a)].
	andCount = andCountGeneric
	// and4x4 sets out[4*r+c] to the AND-popcount of a[r*stride:][:n] and
	// b[c*stride:][:n], for r, c < 4.
	and4x4 = and4x4Generic
)

func andCountGeneric(a, b []uint64) int {
	b = b[:len(a)]
	var n0, n1, n2, n3 int
	i := 0
	for ; i+4 <= len(a); i += 4 {
		n0 += bits.OnesCount64(a[i] & b[i])
		n1 += bits.OnesCount64(a[i+1] & b[i+1])
		n2 += bits.OnesCount64(a[i+2] & b[i+2])
		n3 += bits.OnesCount64(a[i+3] & b[i+3])
	}
	for ; i < len(a); i++ {
		n0 += bits.OnesCount64(a[i] & b[i])
	}
	return n0 + n1 + n2 + n3
}

func and4x4Generic(a, b []uint64, stride, n int, out *[16]uint64) {
	for r := 0; r < 4; r += 2 {
		a0, a1 := a[r*stride:][:n], a[(r+1)*stride:][:n]
		c := kernel2x4(a0, a1, b[:n], b[stride:][:n], b[2*stride:][:n], b[3*stride:][:n])
		for x := 0; x < 4; x++ {
			out[4*r+x] = uint64(c[x])
			out[4*(r+1)+x] = uint64(c[4+x])
		}
	}
}

// kernel2x4 returns the AND-popcounts of rows a0, a1 with columns b0..b3:
// a0·b0..a0·b3, then a1·b0..a1·b3.
func kernel2x4(a0, a1, b0, b1, b2, b3 []uint64) [8]int {
	n := len(a0)
	a1, b0, b1, b2, b3 = a1[:n], b0[:n], b1[:n], b2[:n], b3[:n]
	var c00, c01, c02, c03, c10, c11, c12, c13 int
	for w := 0; w < n; w++ {
		x0, x1 := a0[w], a1[w]
		y0, y1, y2, y3 := b0[w], b1[w], b2[w], b3[w]
		c00 += bits.OnesCount64(x0 & y0)
		c01 += bits.OnesCount64(x0 & y1)
		c02 += bits.OnesCount64(x0 & y2)
		c03 += bits.OnesCount64(x0 & y3)
		c10 += bits.OnesCount64(x1 & y0)
		c11 += bits.OnesCount64(x1 & y1)
		c12 += bits.OnesCount64(x1 & y2)
		c13 += bits.OnesCount64(x1 & y3)
	}
	return [8]int{c00, c01, c02, c03, c10, c11, c12, c13}
}
