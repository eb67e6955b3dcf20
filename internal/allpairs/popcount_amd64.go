//go:build amd64 && !purego

package allpairs

//go:generate go run -C ../../asm ./allpairs -out ../internal/allpairs/popcount_amd64.s -stubs ../internal/allpairs/popcount_stubs_amd64.go -pkg allpairs

import "github.com/xsect/xsect/internal/cpufeat"

// hasVPOPCNTQ reports the AVX-512 popcount of quadwords (Ice Lake, Zen 4
// and later).
var hasVPOPCNTQ = cpufeat.AVX512F && cpufeat.AVX512VL && cpufeat.AVX512VPOPCNTDQ && cpufeat.BMI2

func init() {
	if hasVPOPCNTQ {
		andCount = andCountFast
		and4x4 = and4x4Fast
		// Measured on Zen 5 (see cost.go): VPOPCNTQ over eight words at a
		// time; the pair-by-pair bitmaps are bound by memory bandwidth.
		costs.wordMM = 0.07
		costs.word = 0.25
		costs.wordL3 = 0.1
	}
}

func andCountFast(a, b []uint64) int {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return int(andCountAVX512(&a[0], &b[0], len(a)))
}

func and4x4Fast(a, b []uint64, stride, n int, out *[16]uint64) {
	if n == 0 {
		*out = [16]uint64{}
		return
	}
	// Bounds: the last word of the last row of each.
	_ = a[3*stride+n-1]
	_ = b[3*stride+n-1]
	and4x4AVX512(&a[0], &b[0], stride, n, out)
}
