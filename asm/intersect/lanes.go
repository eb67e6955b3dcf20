package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

// The lane kernels serve the middle ratios as the skip kernels do, without
// their unpredictable branches. The smaller set a is cut into four
// contiguous lanes, each with a lower bound in b found by the caller, and
// the loop takes one value of each lane in turn, so that the four
// dependency chains overlap. For a value x of a lane at p, one predictable
// branch checks that b[p+w-1] >= x (w, the window, a few times the expected
// distance between consecutive values of a in b); then a branch-free binary
// search with CMOVs narrows the window to 16 values and one AVX-512 compare
// counts those below x: p moves to the lower bound of x, and x is a match
// when b[p] == x. When the window does not reach x, the lane skips b by
// whole windows (the rare branch).
//
// The kernels stop when a lane would need a window past the end of b, or
// when lane 0 reaches state.end, and write each lane's position back; the
// caller finishes the lanes with the skip kernels.
//
// The state (intersect.laneState, passed as [13]int) is four indexes into a, four into b, four
// into dst (intersect) and the end of lane 0, all ints. The intersect
// kernels write each lane's matches at its own index of dst; the caller
// closes the gaps.
//
// Registers:
//
//	SI, DI, R8, R9     the lanes' next value of a
//	R10, R11, R12, R13 the lanes' positions in b
//	AX                 x
//	BX                 the binary search's base
//	CX                 temporary
//	DX                 matches (count), or a second temporary (intersect)
//	R14                state
//	R15                end of lane 0 in a

const lanes = 4

type laneKernel struct {
	name      string
	window    int
	intersect bool
}

func (k laneKernel) generate() {
	if k.intersect {
		TEXT(k.name, NOSPLIT, "func(dst *uint32, a, b []uint32, state *[13]int) int")
		Doc(fmt.Sprintf("%s is %s writing each lane's matches to dst at", k.name, "countLanes"),
			"state's dst indexes, which it advances. It returns 0.")
	} else {
		TEXT(k.name, NOSPLIT, "func(a, b []uint32, state *[13]int) int")
		Doc(fmt.Sprintf("%s counts the matches of a in b, four lanes of a at a", k.name),
			fmt.Sprintf("time, each searching a window of %d values of b (AVX-512).", k.window),
			"It advances state to where each lane stopped.")
	}
	Pragma("noescape")
	L := func(s string) string { return k.name + "_" + s }
	w := k.window
	as := []GPPhysical{RSI, RDI, R8, R9}
	ps := []GPPhysical{R10, R11, R12, R13}
	limit := AllocLocal(8)
	var dst Mem
	if k.intersect {
		dst = AllocLocal(8)
	}

	Load(Param("state"), R14)
	Load(Param("a").Base(), RAX)
	Load(Param("b").Base(), RBX)
	for l := range lanes {
		MOVQ(Mem{Base: R14, Disp: 8 * l}, as[l])
		LEAQ(Mem{Base: RAX, Index: as[l], Scale: 4}, as[l])
		MOVQ(Mem{Base: R14, Disp: 32 + 8*l}, ps[l])
		LEAQ(Mem{Base: RBX, Index: ps[l], Scale: 4}, ps[l])
	}
	MOVQ(Mem{Base: R14, Disp: 96}, R15)
	LEAQ(Mem{Base: RAX, Index: R15, Scale: 4}, R15)
	// The last position from which a whole window lies in b.
	Load(Param("b").Len(), RCX)
	LEAQ(Mem{Base: RBX, Index: RCX, Scale: 4, Disp: -4 * w}, RCX)
	MOVQ(RCX, limit)
	if k.intersect {
		Load(Param("dst"), RCX)
		MOVQ(RCX, dst)
		for l := range lanes {
			MOVQ(Mem{Base: R14, Disp: 64 + 8*l}, RDX)
			LEAQ(Mem{Base: RCX, Index: RDX, Scale: 4}, RDX)
			MOVQ(RDX, Mem{Base: R14, Disp: 64 + 8*l})
		}
	} else {
		XORL(EDX, EDX)
	}

	x86.AlignLoop()
	Label(L("loop"))
	CMPQ(RSI, R15)
	JAE(LabelRef(L("done")))
	for l := range lanes {
		a, p := as[l], ps[l]
		CMPQ(p, limit) // the last search may have left p past it
		JA(LabelRef(L("done")))
		MOVL(Mem{Base: a}, EAX)
		CMPL(Mem{Base: p, Disp: 4*w - 4}, EAX)
		JB(LabelRef(L(fmt.Sprint("far", l))))
		Label(L(fmt.Sprint("near", l)))
		MOVQ(p, RBX)
		for h := w / 2; h >= 16; h /= 2 {
			LEAQ(Mem{Base: RBX, Disp: 4 * h}, RCX)
			CMPL(Mem{Base: RBX, Disp: 4*h - 4}, EAX)
			CMOVQCS(RCX, RBX)
		}
		VPBROADCASTD(Mem{Base: a}, Z0)
		VPCMPUD(U8(6), Mem{Base: RBX}, Z0, K1) // b < x
		KMOVW(K1, ECX)
		POPCNTL(ECX, ECX)
		LEAQ(Mem{Base: RBX, Index: RCX, Scale: 4}, p)
		if k.intersect {
			MOVQ(Mem{Base: R14, Disp: 64 + 8*l}, RCX)
			MOVL(EAX, Mem{Base: RCX})
			XORL(EDX, EDX)
			CMPL(Mem{Base: p}, EAX)
			SETEQ(DL)
			LEAQ(Mem{Base: RCX, Index: RDX, Scale: 4}, RCX)
			MOVQ(RCX, Mem{Base: R14, Disp: 64 + 8*l})
		} else {
			XORL(ECX, ECX)
			CMPL(Mem{Base: p}, EAX)
			SETEQ(CL)
			ADDQ(RCX, RDX)
		}
		ADDQ(U8(4), a)
	}
	JMP(LabelRef(L("loop")))

	// x lies beyond the window: skip whole windows while it does.
	for l := range lanes {
		p := ps[l]
		Label(L(fmt.Sprint("far", l)))
		LEAQ(Mem{Base: p, Disp: 4 * w}, RCX)
		CMPQ(RCX, limit)
		JA(LabelRef(L("done")))
		MOVQ(RCX, p)
		CMPL(Mem{Base: p, Disp: 4*w - 4}, EAX)
		JB(LabelRef(L(fmt.Sprint("far", l))))
		JMP(LabelRef(L(fmt.Sprint("near", l))))
	}

	Label(L("done"))
	Load(Param("a").Base(), RAX)
	Load(Param("b").Base(), RBX)
	for l := range lanes {
		SUBQ(RAX, as[l])
		SHRQ(U8(2), as[l])
		MOVQ(as[l], Mem{Base: R14, Disp: 8 * l})
		SUBQ(RBX, ps[l])
		SHRQ(U8(2), ps[l])
		MOVQ(ps[l], Mem{Base: R14, Disp: 32 + 8*l})
	}
	if k.intersect {
		MOVQ(dst, RCX)
		for l := range lanes {
			MOVQ(Mem{Base: R14, Disp: 64 + 8*l}, RDX)
			SUBQ(RCX, RDX)
			SHRQ(U8(2), RDX)
			MOVQ(RDX, Mem{Base: R14, Disp: 64 + 8*l})
		}
		XORL(EDX, EDX)
	}
	Store(RDX, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func genLaneKernels() {
	// A window of 32 values (two cache lines, one CMOV step): see the
	// README for the other windows measured.
	laneKernel{name: "countLanes", window: 32}.generate()
	laneKernel{name: "intersectLanes", window: 32, intersect: true}.generate()
}
