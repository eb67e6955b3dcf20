// Command allpairs generates the amd64 assembly of package
// github.com/xsect/xsect/internal/allpairs: AND + popcount kernels over
// bitmaps with AVX-512 VPOPCNTQ, for the bit-packed matrix product and the
// resident bitmaps.
//
// Run it through go generate in internal/allpairs:
//
//	go run -C ../../asm ./allpairs -out ../internal/allpairs/popcount_amd64.s -stubs ../internal/allpairs/popcount_stubs_amd64.go -pkg allpairs
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

func main() {
	ConstraintExpr("amd64,!purego")
	genAnd4x4()
	genAndCount()
	Generate()
}

// hsum reduces the eight quadwords of z and stores their sum at m.
func hsum(z reg.VecVirtual, m Mem) {
	y := YMM()
	VEXTRACTI64X4(U8(1), z, y)
	VPADDQ(y, z.AsY(), y)
	x := XMM()
	VEXTRACTI32X4(U8(1), y, x)
	VPADDQ(x, y.AsX(), x)
	x2 := XMM()
	VPSRLDQ(U8(8), x, x2)
	VPADDQ(x2, x, x)
	VMOVQ(x, m)
}

// tailMask sets k to the low n-i bits, for the last n-i < 8 words.
func tailMask(n, i reg.GPVirtual, k reg.OpmaskPhysical) {
	m := GP64()
	MOVQ(n, m)
	SUBQ(i, m)
	ones := GP64()
	MOVQ(I64(-1), ones)
	BZHIQ(m, ones, ones)
	KMOVW(ones.As32(), k)
}

// genAnd4x4 emits the 4x4 register block of the product: each loaded word
// of a row serves four columns and each word of a column four rows.
func genAnd4x4() {
	TEXT("and4x4AVX512", NOSPLIT, "func(a, b *uint64, stride, n int, out *[16]uint64)")
	Doc("and4x4AVX512 sets out[4*r+c] to the number of bits set in both row r",
		"of a and row c of b, over words [0, n) of each; the rows of a and of b",
		"lie stride words apart. It needs AVX512F, AVX512VL and AVX512_VPOPCNTDQ.")
	a := x86.LoadGP("a")
	b := x86.LoadGP("b")
	stride := x86.LoadGP("stride")
	n := x86.LoadGP("n")
	SHLQ(U8(3), stride)
	var ar, br [4]reg.GPVirtual
	ar[0], br[0] = a, b
	for r := 1; r < 4; r++ {
		ar[r], br[r] = GP64(), GP64()
		MOVQ(ar[r-1], ar[r])
		ADDQ(stride, ar[r])
		MOVQ(br[r-1], br[r])
		ADDQ(stride, br[r])
	}
	var acc [16]reg.VecVirtual
	for x := range acc {
		acc[x] = ZMM()
		VPXORQ(acc[x], acc[x], acc[x])
	}
	var A, B, T [4]reg.VecVirtual
	for r := range A {
		A[r], B[r], T[r] = ZMM(), ZMM(), ZMM()
	}
	body := func(load func(m Mem, z reg.VecVirtual), i reg.GPVirtual) {
		for r := 0; r < 4; r++ {
			load(Mem{Base: ar[r], Index: i, Scale: 8}, A[r])
		}
		for c := 0; c < 4; c++ {
			load(Mem{Base: br[c], Index: i, Scale: 8}, B[c])
			for r := 0; r < 4; r++ {
				VPANDQ(B[c], A[r], T[r])
				VPOPCNTQ(T[r], T[r])
				VPADDQ(T[r], acc[4*r+c], acc[4*r+c])
			}
		}
	}
	i := GP64()
	XORQ(i, i)
	end := GP64()
	Label("and4x4_loop")
	MOVQ(i, end)
	ADDQ(U8(8), end)
	CMPQ(end, n)
	JA(LabelRef("and4x4_tail"))
	body(func(m Mem, z reg.VecVirtual) { VMOVDQU64(m, z) }, i)
	ADDQ(U8(8), i)
	JMP(LabelRef("and4x4_loop"))

	Label("and4x4_tail")
	CMPQ(i, n)
	JAE(LabelRef("and4x4_reduce"))
	tailMask(n, i, reg.K1)
	body(func(m Mem, z reg.VecVirtual) { VMOVDQU64_Z(m, reg.K1, z) }, i)

	Label("and4x4_reduce")
	out := x86.LoadGP("out")
	reduce16(acc, out)
	VZEROUPPER()
	RET()
}

// reduce16 stores the sums of the quadwords of each of the 16 vectors acc
// at out[0..15], as a tree: pairs of vectors become one whose 128-bit
// lanes hold partial sums of both (unpack low and high, add), then pairs
// of those exchange lanes (VSHUFI64X2) and add, twice, which leaves the
// sums of eight vectors in order in one: 44 instructions, where 16
// separate horizontal sums take 112.
func reduce16(acc [16]reg.VecVirtual, out reg.GPVirtual) {
	var s [8]reg.VecVirtual
	for i := range s {
		lo, hi := ZMM(), ZMM()
		VPUNPCKLQDQ(acc[2*i+1], acc[2*i], lo)
		VPUNPCKHQDQ(acc[2*i+1], acc[2*i], hi)
		VPADDQ(hi, lo, lo)
		s[i] = lo
	}
	// Lanes 0 and 2 of x and y against lanes 1 and 3: the sums of lane
	// pairs of x, then of y.
	merge := func(x, y reg.VecVirtual) reg.VecVirtual {
		even, odd := ZMM(), ZMM()
		VSHUFI64X2(U8(0x88), y, x, even)
		VSHUFI64X2(U8(0xdd), y, x, odd)
		VPADDQ(odd, even, even)
		return even
	}
	var r [4]reg.VecVirtual
	for i := range r {
		r[i] = merge(s[2*i], s[2*i+1])
	}
	VMOVDQU64(merge(r[0], r[1]), Mem{Base: out})
	VMOVDQU64(merge(r[2], r[3]), Mem{Base: out, Disp: 64})
}

// genAndCount emits the popcount of the AND of two bitmaps, four
// accumulators deep.
func genAndCount() {
	TEXT("andCountAVX512", NOSPLIT, "func(a, b *uint64, n int) uint64")
	Doc("andCountAVX512 returns the number of bits set in both a[0:n] and",
		"b[0:n]. It needs AVX512F, AVX512VL and AVX512_VPOPCNTDQ.")
	a := x86.LoadGP("a")
	b := x86.LoadGP("b")
	n := x86.LoadGP("n")
	var acc, t [4]reg.VecVirtual
	for u := range acc {
		acc[u], t[u] = ZMM(), ZMM()
		VPXORQ(acc[u], acc[u], acc[u])
	}
	i := GP64()
	XORQ(i, i)
	end := GP64()
	step := func(u int, disp int, masked bool) {
		if masked {
			VMOVDQU64_Z(Mem{Base: a, Index: i, Scale: 8}, reg.K1, t[u])
			x := ZMM()
			VMOVDQU64_Z(Mem{Base: b, Index: i, Scale: 8}, reg.K1, x)
			VPANDQ(x, t[u], t[u])
		} else {
			VMOVDQU64(Mem{Base: a, Index: i, Scale: 8, Disp: disp}, t[u])
			VPANDQ(Mem{Base: b, Index: i, Scale: 8, Disp: disp}, t[u], t[u])
		}
		VPOPCNTQ(t[u], t[u])
		VPADDQ(t[u], acc[u], acc[u])
	}
	Label("andcount_loop32")
	MOVQ(i, end)
	ADDQ(U8(32), end)
	CMPQ(end, n)
	JA(LabelRef("andcount_loop8"))
	for u := 0; u < 4; u++ {
		step(u, 64*u, false)
	}
	ADDQ(U8(32), i)
	JMP(LabelRef("andcount_loop32"))

	Label("andcount_loop8")
	MOVQ(i, end)
	ADDQ(U8(8), end)
	CMPQ(end, n)
	JA(LabelRef("andcount_tail"))
	step(0, 0, false)
	ADDQ(U8(8), i)
	JMP(LabelRef("andcount_loop8"))

	Label("andcount_tail")
	CMPQ(i, n)
	JAE(LabelRef("andcount_reduce"))
	tailMask(n, i, reg.K1)
	step(1, 0, true)

	Label("andcount_reduce")
	VPADDQ(acc[1], acc[0], acc[0])
	VPADDQ(acc[3], acc[2], acc[2])
	VPADDQ(acc[2], acc[0], acc[0])
	hsum(acc[0], NewParamAddr("ret", 24))
	VZEROUPPER()
	RET()
}
