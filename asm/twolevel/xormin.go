package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The xorMin group body intersects the lower halves of two groups with
// AVX-512 BW alone (no VP2INTERSECT: Sapphire Rapids, Zen 4), and handles
// the groups of very different sizes in the vp2 kernels.
//
//   - The larger group is the window side: 32 of its values at a time sit
//     in Z0 (a zero-masked load where fewer than 32 remain, never reading
//     past the group). The other group is the stream side.
//   - Every stream value s that may lie in the window's range is compared
//     with all 32 lanes: VPXORD with an embedded {1to16} broadcast of the
//     dword (s[j], s[j+1]) XORs even lanes with s[j] and odd lanes with
//     s[j+1]; the same with the window rotated by 16 bits within each dword
//     (Z1) covers the other parity. VPMINUW keeps, per lane, the smallest
//     XOR seen: a lane is in the intersection when it reaches zero. Two
//     instructions a stream value, on any vector ALU, no shuffles.
//   - While the group has fastK chunks of 8 stream values left, the window
//     compares all of them, without a branch, and then consumes the values
//     <= its last (a window needs a varying number of values, and a loop
//     that stops at the right chunk mispredicts its exit once a window).
//     Near the end of the group, chunks of 8 are taken while their eighth
//     value is <= the window's last; a last, partial chunk is padded with
//     copies of its first value, which can only repeat a real match, and
//     consumes only the values <= the window's last. Values compared with
//     a window they cannot match cost time, not correctness: any equality
//     found is a real common element.
//   - Whole windows below the next stream value and whole stream chunks
//     below the window's first value are skipped with one scalar compare
//     each, so groups of very different sizes cost little.
//
// Registers (besides those of kernel):
//
//	AX        last value of the window; first stream value while skipping
//	Z0, Z1    window, and window with the words of each dword swapped
//	Z2, Z3, Z8, Z9  running minima (two a parity, to shorten the chains)
//	Z12       the window's last value in every word
//	X11       the last chunk of a window, padded
//	K1        valid lanes of the window; K2 matches

// fastK is the number of chunks of 8 stream values compared with each
// window without a branch: measured on Zen 5 for random sets from 2^20 to
// 2^28, 5 beat 4, 6 and 8 (a window of 32 sees 32 stream values on
// average when the groups are alike).
const fastK = 5

func xorMinGroup(m mode, tmp Mem) {
	Label("window")
	MOVWLZX(Mem{Base: RCX}, EAX) // first stream value
	// Skip 8 windows at a time, then one.
	Label("skip8")
	MOVQ(RBX, R12)
	SUBQ(RSI, R12)
	CMPQ(R12, U32(512))
	JB(LabelRef("skipwin"))
	CMPW(Mem{Base: RSI, Disp: 510}, AX)
	JAE(LabelRef("skipwin"))
	ADDQ(U32(512), RSI)
	JMP(LabelRef("skip8"))
	Label("skipwin")
	MOVQ(RBX, R12)
	SUBQ(RSI, R12)
	CMPQ(R12, U8(64))
	JB(LabelRef("lastwin"))
	CMPW(Mem{Base: RSI, Disp: 62}, AX)
	JAE(LabelRef("fullwin"))
	ADDQ(U8(64), RSI)
	JMP(LabelRef("skipwin"))

	Label("lastwin") // fewer than 32 values left
	TESTQ(R12, R12)
	JZ(LabelRef("groupdone"))
	SHRQ(U8(1), R12)
	MOVQ(I32(-1), R13)
	BZHIQ(R12, R13, R13)
	KMOVD(R13L, K1)
	MOVWLZX(Mem{Base: RBX, Disp: -2}, EAX)
	JMP(LabelRef("loadwin"))

	Label("fullwin")
	KXNORD(K1, K1, K1)
	MOVWLZX(Mem{Base: RSI, Disp: 62}, EAX)

	Label("loadwin")
	VMOVDQU16_Z(Mem{Base: RSI}, K1, Z0)
	VPROLD(U8(16), Z0, Z1)
	initMinima()
	VPBROADCASTW(EAX, Z12)
	MOVWLZX(Mem{Base: RSI}, R13L) // first window value
	Label("skipstream")
	MOVQ(RDX, R12)
	SUBQ(RCX, R12)
	CMPQ(R12, U8(16))
	JB(LabelRef("fast"))
	CMPW(Mem{Base: RCX, Disp: 14}, R13W)
	JAE(LabelRef("fast"))
	ADDQ(U8(16), RCX)
	JMP(LabelRef("skipstream"))

	Label("fast")
	fastChunks()

	Label("chunks")
	MOVQ(RDX, R12)
	SUBQ(RCX, R12)
	CMPQ(R12, U8(16))
	JB(LabelRef("partial"))
	CMPW(Mem{Base: RCX, Disp: 14}, AX)
	JA(LabelRef("partial"))
	compareChunk(Mem{Base: RCX})
	ADDQ(U8(16), RCX)
	JMP(LabelRef("chunks"))

	Label("partial")
	CMPQ(RCX, RDX)
	JAE(LabelRef("reduce"))
	CMPW(Mem{Base: RCX}, AX)
	JA(LabelRef("reduce"))
	// r = min(8, values left) valid values, the rest copies of the first.
	MOVQ(RDX, R12)
	SUBQ(RCX, R12)
	SHRQ(U8(1), R12)
	MOVL(U32(8), R13L)
	CMPQ(R12, R13)
	CMOVQGT(R13, R12)
	MOVQ(I32(-1), R13)
	BZHIQ(R12, R13, R13)
	KMOVD(R13L, K2)
	VPBROADCASTW(Mem{Base: RCX}, X11)
	VMOVDQU16(Mem{Base: RCX}, K2, X11)
	VMOVDQU(X11, tmp)
	compareChunk(tmp)
	// Consume the valid values <= the window's last; the rest wait for
	// the next window.
	VPCMPUW(U8(2), X12, X11, K2, K3) // K3 = K2 & (X11 <= X12)
	KMOVD(K3, R12L)
	POPCNTL(R12L, R12L)
	LEAQ(Mem{Base: RCX, Index: R12, Scale: 2}, RCX)

	Label("reduce")
	reduce(m)
	ADDQ(U8(64), RSI)
	CMPQ(RSI, RBX)
	JAE(LabelRef("groupdone"))
	CMPQ(RCX, RDX)
	JB(LabelRef("window"))
	JMP(LabelRef("groupdone"))
}

// initMinima sets the running minima to all ones: no XOR seen yet.
func initMinima() {
	VPTERNLOGD(U8(0xff), Z2, Z2, Z2)
	VMOVDQA64(Z2, Z3)
	VMOVDQA64(Z2, Z8)
	VMOVDQA64(Z2, Z9)
}

// reduce finds the lanes of the window (K1) whose minimum reached zero and
// records them.
func reduce(m mode) {
	VPMINUW(Z8, Z2, Z2)
	VPMINUW(Z9, Z3, Z3)
	VPROLD(U8(16), Z3, Z3)
	VPMINUW(Z3, Z2, Z2)
	VPTESTNMW(Z2, Z2, K1, K2) // K2 = K1 & (Z2 == 0)
	if m == count {
		emitMatches(m, Z0)
		return
	}
	skip := fmt.Sprintf("nomatch%d", labels)
	labels++
	KORTESTD(K2, K2)
	JZ(LabelRef(skip))
	emitMatches(m, Z0)
	Label(skip)
}

// labels numbers the labels that helpers emit more than once a function.
var labels int

// compareChunk compares 8 stream values at p, as 4 dwords, with every lane
// of the window.
func compareChunk(p Mem) {
	acc := [2][2]VecPhysical{{Z2, Z3}, {Z8, Z9}}
	tmps := []VecPhysical{Z4, Z5, Z6, Z10}
	for d := 0; d < 4; d++ {
		q := p.Offset(4 * d)
		for side, w := range []VecPhysical{Z0, Z1} {
			t := tmps[(2*d+side)%len(tmps)]
			VPXORD_BCST(q, w, t)
			VPMINUW(t, acc[d%2][side], acc[d%2][side])
		}
	}
}

// fastChunks compares the next fastK chunks of stream values with the
// window, if the group has that many left, and consumes those <= the
// window's last value (AX, and Z12 in every lane).
func fastChunks() {
	MOVQ(RDX, R12)
	SUBQ(RCX, R12)
	CMPQ(R12, U32(16*fastK))
	JB(LabelRef("chunks"))
	XORL(R12L, R12L)
	for off := 0; off < 16*fastK; {
		// K3 = the lanes of mem <= amax (predicate 5: amax not less).
		m := Mem{Base: RCX, Disp: off}
		switch rest := 16*fastK - off; {
		case rest >= 64:
			VPCMPUW(U8(5), m, Z12, K3)
			off += 64
		case rest >= 32:
			VPCMPUW(U8(5), m, Y12, K3)
			off += 32
		default:
			VPCMPUW(U8(5), m, X12, K3)
			off += 16
		}
		KMOVD(K3, R13L)
		POPCNTL(R13L, R13L)
		ADDL(R13L, R12L)
	}
	// The count comes first: the next window's loads wait for it, and
	// the comparisons below do not.
	for c := 0; c < fastK; c++ {
		compareChunk(Mem{Base: RCX, Disp: 16 * c})
	}
	LEAQ(Mem{Base: RCX, Index: R12, Scale: 2}, RCX)
	CMPL(R12L, U32(8*fastK))
	JE(LabelRef("fast"))
	JMP(LabelRef("reduce"))
}
