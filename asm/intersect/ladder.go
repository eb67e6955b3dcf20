package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

// The ladder kernels serve the middle ratios (about 1:18 to 1:7000). For
// each value x of a they skip b by a ladder of strides, the first near
// the expected distance between consecutive values of a in b and each next
// one a quarter of the one before (the last may be a third or a half): at each rung, a loop moves
// that rung's position on by its stride while the last value of the
// stride's block is below x. The last rung leaves a block of 32 or 64
// values that holds x's lower bound; one CMOV step narrows 64 to 32, and
// two VPCMPEQD compare x with the 32 values.
//
// Each rung keeps its own position, at least the one of the rung above
// and a multiple of its stride, so that a coarse rung's blocks are the
// same from probe to probe (their last values stay in cache) and its loop
// does not wait for the finer rungs. A rung that moves has gone past the
// finer rungs' positions, which start again from its own: set on the way
// out of its loop, so that a probe whose rungs do not move runs no
// instruction for them. The caller cuts b to a multiple of
// the first stride and a to the values at most b's last: no loop can then
// run past the end of b, and the loops need no bound checks (one branch
// an iteration).
//
// Registers:
//
//	SI, AX           next value of a, end of a
//	DI, R12, R13, R14  the rungs' positions in b
//	R9               x
//	R10, R11         the search, temporary
//	DX               matches so far (counted or written)
//	CX               dst (intersect)
//	R8, BX           values queued to be written (intersect)
//	R15, R14 or R10  their matches, 0 or 1 (intersect)
type ladderKernel struct {
	name      string
	strides   []int // longest first; each a multiple of the next, the last 32 or 64
	intersect bool
	// cmov raises each finer rung's position to the rung above's by a
	// CMOV at every probe instead of resetting it on the rung above's
	// way out of its loop.
	cmov bool
}

func (k ladderKernel) generate() {
	last := k.strides[len(k.strides)-1]
	if k.intersect {
		TEXT(k.name, NOSPLIT, "func(dst *uint32, a, b []uint32) (n, j int)")
		Doc(fmt.Sprintf("%s is %s writing the matches to dst,", k.name, "count"+k.name[len("intersect"):]),
			"which must have room for one value past the last match.")
	} else {
		TEXT(k.name, NOSPLIT, "func(a, b []uint32) (n, j int)")
		Doc(fmt.Sprintf("%s counts the matches of a in b, skipping b by strides", k.name),
			fmt.Sprintf("of %v values, then comparing with 32 values (AVX-512).", k.strides),
			fmt.Sprintf("len(b) must be a multiple of %d and every value of a at most", k.strides[0]),
			"b's last. It returns the count and j: b[:j] is below a's last value.")
	}
	Pragma("noescape")
	L := func(s string) string { return k.name + "_" + s }
	ps := []GPPhysical{RDI, R12, R13, R14}

	Load(Param("a").Base(), RSI)
	Load(Param("a").Len(), RAX)
	Load(Param("b").Base(), RDI)
	if k.intersect {
		Load(Param("dst"), RCX)
	}
	XORL(EDX, EDX)
	// Intersect stores each probe's value storeDelay probes late, at the
	// count of the probes before it: a store whose address waited for the
	// probe's own compare held up the next probes' loads (README).
	// xq and fq queue the values and their matches (0 or 1), youngest first.
	xq, fq := []GPPhysical{R8, RBX}, []GPPhysical{R15, R14}
	if len(k.strides) == 4 {
		if last == 64 {
			panic("ladder: four rungs and a CMOV step leave no register for the store queue")
		}
		fq[1] = R10 // R14 is a rung's; R10 is free without the CMOV step to 32
	}
	if k.intersect {
		for _, f := range fq {
			XORL(f.As32(), f.As32())
		}
	}
	LEAQ(Mem{Base: RSI, Index: RAX, Scale: 4}, RAX)
	for _, p := range ps[1:len(k.strides)] {
		MOVQ(RDI, p)
	}

	CMPQ(RSI, RAX)
	JAE(LabelRef(L("done")))
	x86.AlignLoop()
	Label(L("probe"))
	MOVL(Mem{Base: RSI}, R9L)
	for l, n := range k.strides {
		p := ps[l]
		if l > 0 && k.cmov {
			CMPQ(p, ps[l-1])
			CMOVQCS(ps[l-1], p)
		}
		loop, next := L(fmt.Sprint("skip", l)), L(fmt.Sprint("rung", l+1))
		CMPL(Mem{Base: p, Disp: 4*n - 4}, R9L)
		JAE(LabelRef(next))
		Label(loop)
		ADDQ(U32(4*n), p)
		CMPL(Mem{Base: p, Disp: 4*n - 4}, R9L)
		JB(LabelRef(loop))
		if !k.cmov {
			// The rung moved past the finer rungs' positions: they
			// start again from its own.
			for _, f := range ps[l+1 : len(k.strides)] {
				MOVQ(p, f)
			}
		}
		Label(next)
	}
	q := ps[len(k.strides)-1]
	if last == 64 {
		MOVQ(q, R10)
		LEAQ(Mem{Base: R10, Disp: 128}, R11)
		CMPL(Mem{Base: R10, Disp: 124}, R9L)
		CMOVQCS(R11, R10)
		q = R10
	}
	VPBROADCASTD(R9L, Z0)
	VPCMPEQD(Mem{Base: q}, Z0, K1)
	VPCMPEQD(Mem{Base: q, Disp: 64}, Z0, K2)
	XORL(R11L, R11L)
	KORTESTW(K1, K2)
	SETNE(R11B)
	if k.intersect {
		// Stored whether or not it matched: no branch to mispredict.
		d := storeDelay - 1
		MOVL(xq[d].As32(), Mem{Base: RCX, Index: RDX, Scale: 4})
		ADDQ(fq[d], RDX)
		for ; d > 0; d-- {
			MOVQ(fq[d-1], fq[d])
			MOVL(xq[d-1].As32(), xq[d].As32())
		}
		MOVQ(R11, fq[0])
		MOVL(R9L, xq[0].As32())
	} else {
		ADDQ(R11, RDX)
	}
	ADDQ(U8(4), RSI)
	CMPQ(RSI, RAX)
	JB(LabelRef(L("probe")))

	Label(L("done"))
	if k.intersect {
		// The values still queued; before the first probes' the matches
		// are 0 and the values stored past the end.
		for d := storeDelay - 1; d >= 0; d-- {
			MOVL(xq[d].As32(), Mem{Base: RCX, Index: RDX, Scale: 4})
			ADDQ(fq[d], RDX)
		}
	}
	Store(RDX, ReturnIndex(0))
	p := ps[len(k.strides)-1]
	Load(Param("b").Base(), R10)
	SUBQ(R10, p)
	SHRQ(U8(2), p)
	Store(p, ReturnIndex(1))
	VZEROUPPER()
	RET()
}

// storeDelay is how many probes late Intersect stores a value (at most 2,
// the queues' length).
const storeDelay = 2

// ladders are the ladder kernels' strides, by the size ratios they serve
// (intersect.ladders): a first stride near the ratio, then mostly
// quarters. See the README for the shapes measured.
var ladders = []struct {
	strides []int
	cmov    bool
}{
	{[]int{64, 32}, false},
	{[]int{128, 32}, false},
	{[]int{256, 64, 32}, false},
	{[]int{384, 96, 32}, false},
	{[]int{768, 192, 64}, false},
	{[]int{1536, 384, 96, 32}, true}, // the resets were slower here (README)
}

func genLadderKernels() {
	for _, l := range ladders {
		s := l.strides
		ladderKernel{name: fmt.Sprint("countLadder", s[0]), strides: s, cmov: l.cmov}.generate()
		ladderKernel{name: fmt.Sprint("intersectLadder", s[0]), strides: s, intersect: true, cmov: l.cmov}.generate()
	}
}
