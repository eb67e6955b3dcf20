// Command batmap generates the amd64 assembly of package
// github.com/xsect/xsect/batmap: the AVX-512 kernels that compare batmaps.
//
// Run it through go generate in the batmap package:
//
//	cd ../asm && go run ./batmap -out ../batmap/count_amd64.s -stubs ../batmap/stubs_amd64.go -pkg batmap
//
// Entries x and y (of 8, 16 or 32 bits, indicator bit on top) match when
// their element bits are equal and one of their indicator bits is set: the
// count formula of section III-A of the BATMAP paper. With h the indicator
// bits, the entry of
//
//	w = h ? ^(x | y) : (x ^ y)    (one VPTERNLOGQ, bit by bit)
//
// is zero exactly when x and y match, so one VPTESTNMB/W/D gives a mask of
// the matching entries of 64 bytes, and KMOV, POPCNT and ADD count it: two
// vector instructions for 64 bytes, where the paper's formula on 64-bit
// words takes five.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	for _, bits := range []int{8, 16, 32} {
		genCount(1, bits)
		genCount(4, bits)
	}
	Generate()
}

// matchTable is the VPTERNLOGQ truth table of C ? ^(A | B) : (A ^ B), with
// A the destination, B the second source and C the first.
const matchTable = 0x16

// genCount emits count<n>x<bits>: one wide slice a against n narrow ones
// of at least its length, for entries of the given width.
func genCount(n, bits int) {
	name := fmt.Sprintf("count%dx%d", n, bits)
	sig := "func(a, b []uint64) int"
	if n == 4 {
		sig = "func(a, b0, b1, b2, b3 []uint64) (n0, n1, n2, n3 int)"
	}
	TEXT(name, NOSPLIT, sig)
	if n == 1 {
		Doc(fmt.Sprintf("%s returns the matching %d-bit entries of a and b[:len(a)] (AVX-512BW).", name, bits))
	} else {
		Doc(fmt.Sprintf("%s counts the matching %d-bit entries of a against b0, b1, b2 and b3", name, bits),
			"(each at least as long as a) at once, loading each word of a once (AVX-512BW).")
	}
	a := Load(Param("a").Base(), GP64())
	length := Load(Param("a").Len(), GP64())
	bs := make([]Register, n)
	for k := range bs {
		p := Param("b")
		if n > 1 {
			p = Param(fmt.Sprintf("b%d", k))
		}
		bs[k] = Load(p.Base(), GP64())
	}
	// h: the indicator bit of every entry.
	h := ZMM()
	tmp := GP64()
	MOVQ(U64(map[int]uint64{8: 0x8080808080808080, 16: 0x8000800080008000, 32: 0x8000000080000000}[bits]), tmp)
	VPBROADCASTQ(tmp, h)
	acc := make([]Register, n)
	for k := range acc {
		acc[k] = GP64()
		XORQ(acc[k], acc[k])
	}
	i := GP64()
	XORQ(i, i)

	test := map[int]func(...Op){8: VPTESTNMB, 16: VPTESTNMW, 32: VPTESTNMD}[bits]
	kmov := map[int]func(Op, Op){8: KMOVQ, 16: KMOVD, 32: KMOVW}[bits]
	// block compares the 8 words at word index i, under mask if set.
	block := func(mask Op) {
		x := ZMM()
		load := func(base Register, dst VecVirtual) {
			if mask != nil {
				VMOVDQU64_Z(Mem{Base: base, Index: i, Scale: 8}, mask, dst)
			} else {
				VMOVDQU64(Mem{Base: base, Index: i, Scale: 8}, dst)
			}
		}
		load(a, x)
		for k := range n {
			y := ZMM()
			load(bs[k], y)
			VPTERNLOGQ(U8(matchTable), h, x, y) // y = h ? ^(y|x) : y^x
			test(y, y, K2)                      // K2: entries of y that are 0
			c := GP64()
			if bits == 8 {
				kmov(K2, c)
			} else {
				kmov(K2, c.As32())
			}
			POPCNTQ(c, c)
			ADDQ(c, acc[k])
		}
	}

	unroll := 2
	if n > 1 {
		unroll = 1
	}
	last := GP64()
	MOVQ(length, last)
	SUBQ(U32(8*unroll), last)
	Label(name + "_loop")
	CMPQ(i, last)
	JGT(LabelRef(name + "_tail"))
	for range unroll {
		block(nil)
		ADDQ(U8(8), i)
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_tail")
	// Whole blocks left (unrolled loop only), then a masked one: words
	// masked off load as zero, and zero entries never match.
	if unroll > 1 {
		ADDQ(U8(8), last)
		CMPQ(i, last)
		JGT(LabelRef(name + "_rest"))
		block(nil)
		ADDQ(U8(8), i)
		Label(name + "_rest")
	}
	rest := GP64()
	MOVQ(length, rest)
	SUBQ(i, rest)
	JZ(LabelRef(name + "_done"))
	m := GP64()
	MOVQ(U32(1), m)
	SHLXQ(rest, m, m)
	DECQ(m) // 1<<rest - 1, rest < 8
	KMOVW(m.As32(), K1)
	block(K1)

	Label(name + "_done")
	for k := range n {
		if n == 1 {
			Store(acc[k], ReturnIndex(0))
		} else {
			Store(acc[k], Return(fmt.Sprintf("n%d", k)))
		}
	}
	VZEROUPPER()
	RET()
}
