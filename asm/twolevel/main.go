// Command twolevel generates the amd64 assembly of package
// github.com/xsect/xsect/intersect/twolevel: the AVX-512 kernels that
// intersect two sets in the two-level layout of Schlegel, Willhalm and
// Lehner, "Fast Sorted-Set Intersection using SIMD Instructions", section
// 3.3.
//
// Run it through go generate in the twolevel package:
//
//	go run -C ../../asm ./twolevel -out ../intersect/twolevel/twolevel_amd64.s
//
// The Go declarations of the kernels are written by hand in
// twolevel_amd64.go; go vet checks them against the frames here.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	for _, k := range []kind{xorMin, vp2} {
		for _, m := range []mode{count, intersect, intersectSet} {
			kernel(k, m)
		}
	}
	Generate()
}

// kind is how a kernel compares the lower halves of two groups.
type kind int

const (
	// xorMin compares 32 values of one group with each value of the
	// other, two instructions a value (xormin.go). AVX-512 BW.
	xorMin kind = iota
	// vp2 compares blocks of 32 values of both groups with four
	// VP2INTERSECTD on the values zero-extended to 32 bits (vp2.go).
	vp2
)

// mode says what a kernel does with the matches.
type mode int

const (
	count        mode = iota // count them
	intersect                // write them as uint32
	intersectSet             // write them in the two-level layout
)

// The kernels share the outer loop and the register plan.
//
// The outer loop merges the two header arrays (one uint32 a group: upper
// half << 16 | size-1) and keeps a pointer to the lower halves of the
// current group of each set; for each pair of groups with the same upper
// half it runs the kind's group body, which leaves DI (the count, or the
// output pointer) updated.
//
// Registers:
//
//	R8, R9    next header of a and of b
//	R10, R11  lower halves of the next group of a and of b
//	SI, BX    the larger group: current position and end
//	CX, DX    the other group: current position and end
//	DI        count, or where the next match is written
//	R14       where the next header is written (intersectSet)
//	AX, R12, R13  temporaries of the group bodies
//	Z7        upper half << 16 in every dword (intersect)
//	Z30, Z31  1<<16 and 2<<16 in every dword: padding that matches no
//	          zero-extended lower half (vp2)
func kernel(k kind, m mode) {
	name := map[mode]string{count: "count", intersect: "intersect", intersectSet: "intersectSet"}[m] +
		map[kind]string{xorMin: "AVX512", vp2: "VP2"}[k]
	switch m {
	case count:
		TEXT(name, NOSPLIT, "func(ah []uint32, al []uint16, bh []uint32, bl []uint16) int")
		Doc(name + " returns the size of the intersection of the two-level sets (ah, al) and (bh, bl).")
	case intersect:
		TEXT(name, NOSPLIT, "func(dst *uint32, ah []uint32, al []uint16, bh []uint32, bl []uint16) int")
		Doc(name+" writes the intersection of the two-level sets (ah, al) and (bh, bl)",
			"to dst as uint32 and returns its size. It stores whole vectors: dst must have",
			"room for min(len(al), len(bl)) + 32 values.")
	case intersectSet:
		TEXT(name, NOSPLIT, "func(dh *uint32, dl *uint16, ah []uint32, al []uint16, bh []uint32, bl []uint16) (groups, n int)")
		Doc(name+" writes the intersection of the two-level sets (ah, al) and (bh, bl)",
			"to (dh, dl) in the same layout and returns the number of groups and of values.",
			"It stores whole vectors: dh must have room for min(len(ah), len(bh)) headers and",
			"dl for min(len(al), len(bl)) + 32 values.")
	}
	tmp := AllocLocal(16)   // xorMin: the padded last chunk of a window
	aend := AllocLocal(8)   // end of a's headers
	bend := AllocLocal(8)   // end of b's headers
	gstart := AllocLocal(8) // DI at the start of a group (intersectSet)

	Load(Param("ah").Base(), R8)
	Load(Param("ah").Len(), R12)
	LEAQ(Mem{Base: R8, Index: R12, Scale: 4}, R12)
	MOVQ(R12, aend)
	Load(Param("bh").Base(), R9)
	Load(Param("bh").Len(), R12)
	LEAQ(Mem{Base: R9, Index: R12, Scale: 4}, R12)
	MOVQ(R12, bend)
	Load(Param("al").Base(), R10)
	Load(Param("bl").Base(), R11)
	switch m {
	case count:
		XORL(EDI, EDI)
	case intersect:
		Load(Param("dst"), RDI)
	case intersectSet:
		Load(Param("dh"), R14)
		Load(Param("dl"), RDI)
	}
	if k == vp2 {
		MOVL(U32(1<<16), EAX)
		VPBROADCASTD(EAX, Z30)
		VPADDD(Z30, Z30, Z31)
	}

	// Merge the headers.
	Label("hdr")
	CMPQ(R8, aend)
	JAE(LabelRef("done"))
	CMPQ(R9, bend)
	JAE(LabelRef("done"))
	MOVL(Mem{Base: R8}, EAX)
	MOVL(Mem{Base: R9}, R12L)
	MOVL(EAX, R13L)
	XORL(R12L, R13L)
	SHRL(U8(16), R13L)
	JZ(LabelRef("match"))
	CMPL(EAX, R12L) // the upper halves differ, so this compares them
	JB(LabelRef("skipa"))
	MOVWLZX(R12W, R12L)
	LEAQ(Mem{Base: R11, Index: R12, Scale: 2, Disp: 2}, R11)
	ADDQ(U8(4), R9)
	JMP(LabelRef("hdr"))
	Label("skipa")
	MOVWLZX(AX, EAX)
	LEAQ(Mem{Base: R10, Index: RAX, Scale: 2, Disp: 2}, R10)
	ADDQ(U8(4), R8)
	JMP(LabelRef("hdr"))

	Label("match")
	if m == intersect {
		MOVL(EAX, R13L)
		ANDL(U32(0xffff0000), R13L)
		VPBROADCASTD(R13L, Z7)
	}
	if m == intersectSet {
		MOVQ(RDI, gstart)
	}
	MOVWLZX(AX, EAX)
	MOVWLZX(R12W, R12L)
	MOVQ(R10, RSI)
	LEAQ(Mem{Base: R10, Index: RAX, Scale: 2, Disp: 2}, R10)
	MOVQ(R10, RBX)
	MOVQ(R11, RCX)
	LEAQ(Mem{Base: R11, Index: R12, Scale: 2, Disp: 2}, R11)
	MOVQ(R11, RDX)
	ADDQ(U8(4), R8)
	ADDQ(U8(4), R9)
	// The larger group goes to SI, BX, without a branch: with groups of
	// similar size it would mispredict half the time.
	CMPL(EAX, R12L)
	for _, p := range [][2]GPPhysical{{RSI, RCX}, {RBX, RDX}, {RAX, R12}} {
		MOVQ(p[0], R13)
		CMOVQCS(p[1], p[0])
		CMOVQCS(R13, p[1])
	}
	// Both groups are non-empty; EAX and R12 hold their sizes minus one.
	if k == vp2 {
		vp2Group(m)
	}
	xorMinGroup(m, tmp)

	Label("groupdone")
	if m == intersectSet {
		// A header for the group if it kept any value.
		MOVQ(RDI, R12)
		SUBQ(gstart, R12)
		JZ(LabelRef("hdr"))
		SHRQ(U8(1), R12)
		DECL(R12L)
		MOVL(Mem{Base: R8, Disp: -4}, R13L)
		ANDL(U32(0xffff0000), R13L)
		ORL(R12L, R13L)
		MOVL(R13L, Mem{Base: R14})
		ADDQ(U8(4), R14)
	}
	JMP(LabelRef("hdr"))

	Label("done")
	VZEROUPPER()
	switch m {
	case count:
		Store(RDI, ReturnIndex(0))
	case intersect:
		Load(Param("dst"), R12)
		SUBQ(R12, RDI)
		SHRQ(U8(2), RDI)
		Store(RDI, ReturnIndex(0))
	case intersectSet:
		Load(Param("dh"), R12)
		SUBQ(R12, R14)
		SHRQ(U8(2), R14)
		Store(R14, ReturnIndex(0))
		Load(Param("dl"), R12)
		SUBQ(R12, RDI)
		SHRQ(U8(1), RDI)
		Store(RDI, ReturnIndex(1))
	}
	RET()
}

// emitMatches records the lanes of the 16-bit values at src (32 lanes,
// some possibly past the group: they are not in the mask) selected by the
// 32-bit mask K2, and leaves their number in R12. It uses Z4 to Z6.
// count adds the number to DI; intersect writes the values with Z7's
// upper half; intersectSet writes the 16-bit values.
func emitMatches(m mode, src VecPhysical) {
	KMOVD(K2, R12L)
	POPCNTL(R12L, R12L)
	switch m {
	case count:
		ADDQ(R12, RDI)
	case intersect:
		VPCOMPRESSW_Z(src, K2, Z4)
		VPMOVZXWD(Y4, Z5)
		VPORD(Z7, Z5, Z5)
		VMOVDQU32(Z5, Mem{Base: RDI})
		VEXTRACTI64X4(U8(1), Z4, Y4)
		VPMOVZXWD(Y4, Z5)
		VPORD(Z7, Z5, Z5)
		VMOVDQU32(Z5, Mem{Base: RDI, Disp: 64})
		LEAQ(Mem{Base: RDI, Index: R12, Scale: 4}, RDI)
	case intersectSet:
		VPCOMPRESSW_Z(src, K2, Z4)
		VMOVDQU16(Z4, Mem{Base: RDI})
		LEAQ(Mem{Base: RDI, Index: R12, Scale: 2}, RDI)
	}
}
