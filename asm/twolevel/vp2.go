package main

import (
	"github.com/xsect/xsect/asm/internal/x86"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vp2RatioLog is log2 of the size ratio of two groups beyond which the
// xorMin body, which skips what the smaller group does not reach, beats
// the block merge (measured on Zen 5: 2^6 to 2^7).
const vp2RatioLog = 7

// The vp2 group body, for CPUs with AVX512_VP2INTERSECT (Zen 5 here).
//
// Both groups advance in blocks of 32 lower halves, as in Schlegel et al.'s
// block merge: each block is zero-extended into two vectors of 16 dwords, four
// VP2INTERSECTD compare all 32x32 pairs, the lanes of the larger group's
// block that matched are recorded, and the block with the smaller last
// value advances (both when the last values are equal). Every pair of
// equal values meets in exactly one step, and a block's matches come out
// in lane order, so the output is increasing. The advance is two CMOVs,
// so the loop has no branch that depends on how the groups interleave.
//
// Where a group has fewer than 32 values left, its block is loaded with a
// mask (never reading past the group) over padding of 1<<16 for one group
// and 2<<16 for the other: values no lower half equals.
//
// Groups more than 2^vp2RatioLog times the size of the other go to the
// xorMin body, which skips the stretches of the larger group that the
// smaller one does not reach.
//
// Registers (besides those of kernel):
//
//	AX, R13   last value of the block of SI and of CX
//	Z0, Z1    the block at SI, zero-extended (lanes 0-15, 16-31)
//	Z16, Z17  the block at CX, zero-extended
//	Z18       the block at SI as 16-bit values (the writing modes)
//	K0-K7     the VP2INTERSECTD pairs; K2 then the block's matches
func vp2Group(m mode) {
	// Two groups of at most 32 (sparse sets have many): one masked step.
	MOVL(EAX, R13L)
	ORL(R12L, R13L)
	CMPL(R13L, U8(32))
	JB(LabelRef("vsmall"))
	// Groups more than 2^vp2RatioLog times larger than the other go to
	// the xorMin body. AX, R12 hold the sizes minus one.
	LEAQ(Mem{Base: R12, Disp: 1}, R13)
	SHLQ(U8(vp2RatioLog), R13)
	CMPQ(RAX, R13)
	JAE(LabelRef("window"))

	Label("vloop")
	MOVQ(RBX, R12)
	SUBQ(RSI, R12)
	CMPQ(R12, U8(64))
	JB(LabelRef("vtail"))
	MOVQ(RDX, R12)
	SUBQ(RCX, R12)
	CMPQ(R12, U8(64))
	JB(LabelRef("vtail"))
	MOVWLZX(Mem{Base: RSI, Disp: 62}, EAX)
	MOVWLZX(Mem{Base: RCX, Disp: 62}, R13L)
	VPMOVZXWD(Mem{Base: RSI}, Z0)
	VPMOVZXWD(Mem{Base: RSI, Disp: 32}, Z1)
	VPMOVZXWD(Mem{Base: RCX}, Z16)
	VPMOVZXWD(Mem{Base: RCX, Disp: 32}, Z17)
	if m != count {
		VMOVDQU16(Mem{Base: RSI}, Z18)
	}
	blockMatches()
	emitBlockMatches(m)
	CMPL(EAX, R13L)
	LEAQ(Mem{Base: RSI, Disp: 64}, R12)
	CMOVQLS(R12, RSI)
	LEAQ(Mem{Base: RCX, Disp: 64}, R12)
	CMOVQCC(R12, RCX)
	JMP(LabelRef("vloop"))

	// One group, or both, has fewer than 32 values left: R12 and R13 get
	// the bytes of each block, at most 64.
	Label("vtail")
	MOVQ(RBX, R12)
	SUBQ(RSI, R12)
	JZ(LabelRef("groupdone"))
	MOVQ(RDX, R13)
	SUBQ(RCX, R13)
	JZ(LabelRef("groupdone"))
	MOVL(U32(64), EAX)
	CMPQ(R12, RAX)
	CMOVQHI(RAX, R12)
	CMPQ(R13, RAX)
	CMOVQHI(RAX, R13)
	maskedStep(m)
	JMP(LabelRef("vtail"))

	Label("vsmall")
	// R12, R13 = bytes of each group.
	LEAQ(Mem{Base: RAX, Index: RAX, Scale: 1, Disp: 2}, R13)
	XCHGQ(R12, R13)
	LEAQ(Mem{Base: R13, Index: R13, Scale: 1, Disp: 2}, R13)
	maskedStep(m)
	JMP(LabelRef("groupdone"))
}

// maskedStep compares the blocks of R12 bytes at SI and R13 bytes at CX
// (1 to 64 each), records the matches of the block at SI and advances past
// the block with the smaller last value (both if equal).
func maskedStep(m mode) {
	// Each block is zero-extended over its padding: K1 = the valid lanes
	// of the block at SI, K3 its upper 16; K2 and K4 the same for CX.
	for _, b := range []struct {
		ptr, bytes GPPhysical
		lo, hi     OpmaskPhysical
		pad        VecPhysical
		dst        [2]VecPhysical
	}{
		{RSI, R12, K1, K3, Z30, [2]VecPhysical{Z0, Z1}},
		{RCX, R13, K2, K4, Z31, [2]VecPhysical{Z16, Z17}},
	} {
		MOVQ(I32(-1), RAX)
		SHRQ(U8(1), b.bytes)
		BZHIQ(b.bytes, RAX, RAX)
		KMOVD(EAX, b.lo)
		SHLQ(U8(1), b.bytes)
		KSHIFTRD(U8(16), b.lo, b.hi)
		VMOVDQA64(b.pad, b.dst[0])
		VPMOVZXWD(Mem{Base: b.ptr}, b.lo, b.dst[0])
		VMOVDQA64(b.pad, b.dst[1])
		VPMOVZXWD(Mem{Base: b.ptr, Disp: 32}, b.hi, b.dst[1])
	}
	if m != count {
		VMOVDQU16_Z(Mem{Base: RSI}, K1, Z18)
	}
	blockMatches()
	// Advance past the block whose last value is smaller, both if equal.
	MOVWLZX(Mem{Base: RSI, Index: R12, Scale: 1, Disp: -2}, EAX)
	CMPW(AX, Mem{Base: RCX, Index: R13, Scale: 1, Disp: -2})
	LEAQ(Mem{Base: RSI, Index: R12, Scale: 1}, R12)
	CMOVQLS(R12, RSI)
	LEAQ(Mem{Base: RCX, Index: R13, Scale: 1}, R13)
	CMOVQCC(R13, RCX)
	emitBlockMatches(m)
}

// blockMatches compares the blocks in Z0, Z1 and Z16, Z17 (all pairs) and
// leaves in K2 the lanes of Z0 (bits 0-15) and Z1 (bits 16-31) that
// matched.
func blockMatches() {
	x86.VP2INTERSECTD(Z16, Z0, K0)
	x86.VP2INTERSECTD(Z17, Z0, K2)
	x86.VP2INTERSECTD(Z16, Z1, K4)
	x86.VP2INTERSECTD(Z17, Z1, K6)
	KORW(K0, K2, K2)
	KORW(K4, K6, K4)
	KUNPCKWD(K2, K4, K2) // K2 = K4<<16 | K2
}

// emitBlockMatches records the matches that blockMatches found (of the
// 16-bit block in Z18), leaving R12 clobbered. It does not branch on
// whether there are any: at middling densities that branch mispredicts
// more than the stores cost.
func emitBlockMatches(m mode) { emitMatches(m, Z18) }
