package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

// The search kernels intersect a small set with a much larger one. Instead
// of galloping from one probe to the next, which chains every memory access
// of every probe into one long dependency, they run independent
// branch-free binary searches for 16 probes at once, one per lane, with
// VPGATHERDD loading the 16 keys of a level. Several batches of 16 run
// interleaved so that the gathers of one batch hide the latency of another.
//
// Every search is over all of b: with n = len(b), for every lane
//
//	base = 0
//	while n > 1: half = n/2; if b[base+half] <= x { base += half }; n -= half
//	match iff b[base] == x
//
// keeps "the last value <= x is in b[base : base+n]" and reads only
// indices below len(b). n and half are the same for every lane, so one
// loop drives all of them.
//
// Where len(b) is a power of two (or near one), every half of the first
// levels is a multiple of 1024 values, and every lane's reads of those
// levels fall in one set of the L1 cache (and of L2), evicting each other.
// With spread > 0, a level whose n is at least 4096 takes half = n/2 - off
// instead, off moving by spread values (a multiple of 16: whole lines) from
// level to level, modulo 1024: the invariant holds for any half <= n/2, and
// the levels' reads land in other sets. It costs at most a level more.
//
// Registers:
//
//	SI       b
//	DI       next probes in a
//	R8       probes left
//	BX       len(b), to restart each batch's n
//	CX, DX   n and half
//	R9       matches written (intersect)
//	R10      dst (intersect)
//	R11-R13  temporaries
//	R14, R15 the level's offset off and spread
//	AX       half - off

type searchKernel struct {
	name      string
	batches   int // batches of 16 probes searched together
	intersect bool
}

func (k searchKernel) generate() {
	if k.intersect {
		TEXT(k.name, NOSPLIT, "func(dst *uint32, a, b []uint32, spread int) int")
		Doc(fmt.Sprintf("%s writes a ∩ b to dst and returns its size (AVX-512).", k.name),
			"len(b) < 2^31; dst must have room for len(a)+16 values. spread: as countSearch's.")
	} else {
		TEXT(k.name, NOSPLIT, "func(a, b []uint32, spread int) int")
		Doc(fmt.Sprintf("%s returns |a ∩ b| by batched binary searches of the values", k.name),
			"of a in b (AVX-512). len(b) < 2^31. spread (0, or a multiple of 16 below 1024)",
			"moves the levels' splits off multiples of 1024 values where n >= 4096.")
	}
	Pragma("noescape")
	L := func(s string) string { return k.name + "_" + s }
	g := k.batches
	xs := []VecPhysical{Z0, Z1, Z2, Z3}[:g]    // probes
	bases := []VecPhysical{Z4, Z5, Z6, Z7}[:g] // search positions
	ts := []VecPhysical{Z8, Z9, Z10, Z11}[:g]  // base + half
	keys := []VecPhysical{Z12, Z13, Z14, Z15}[:g]
	valid := []Register{K4, K5, K6, K7}[:g] // probe lanes in range
	H := Z16                                // half, broadcast

	Load(Param("a").Base(), RDI)
	Load(Param("a").Len(), R8)
	Load(Param("b").Base(), RSI)
	Load(Param("b").Len(), RBX)
	Load(Param("spread"), R15)
	if k.intersect {
		Load(Param("dst"), R10)
		XORL(R9L, R9L)
	} else {
		VPXORD(Z30, Z30, Z30)
		VPTERNLOGD(U8(0xff), Z31, Z31, Z31)
	}
	TESTQ(R8, R8)
	JZ(LabelRef(L("done")))
	TESTQ(RBX, RBX)
	JZ(LabelRef(L("done")))

	x86.AlignLoop()
	Label(L("batch"))
	// Lanes beyond len(a) are masked off the probe loads and the result.
	for i := range g {
		MOVQ(R8, R11)
		SUBQ(U32(16*i), R11)
		MOVL(U32(0), R12L)
		CMOVQLT(R12, R11) // signed: the count may be negative
		MOVL(U32(16), R12L)
		CMPQ(R11, R12)
		CMOVQGT(R12, R11)
		MOVL(U32(0xffff), R13L)
		BZHIL(R11L, R13L, R13L)
		KMOVW(R13L, valid[i])
		VMOVDQU32_Z(Mem{Base: RDI, Disp: 64 * i}, valid[i], xs[i])
		VPXORD(bases[i], bases[i], bases[i])
	}
	MOVQ(RBX, RCX)
	XORL(R14L, R14L)
	CMPQ(RCX, U8(1))
	JBE(LabelRef(L("last")))

	Label(L("level"))
	MOVQ(RCX, RDX)
	SHRQ(U8(1), RDX)
	ADDQ(R15, R14)
	ANDQ(U32(1023), R14)
	MOVQ(RDX, RAX)
	SUBQ(R14, RAX)
	CMPQ(RCX, U32(4096))
	CMOVQCC(RAX, RDX) // n >= 4096: half -= off
	SUBQ(RDX, RCX)
	VPBROADCASTD(EDX, H)
	for i := range g {
		VPADDD(H, bases[i], ts[i])
		KXNORW(K1, K1, K1)
		VPGATHERDD(Mem{Base: RSI, Index: ts[i], Scale: 4}, K1, keys[i])
	}
	for i := range g {
		VPCMPUD(U8(2), xs[i], keys[i], K2) // key <= x
		VMOVDQA32(ts[i], K2, bases[i])
	}
	CMPQ(RCX, U8(1))
	JA(LabelRef(L("level")))

	Label(L("last"))
	for i := range g {
		KXNORW(K1, K1, K1)
		VPGATHERDD(Mem{Base: RSI, Index: bases[i], Scale: 4}, K1, keys[i])
	}
	for i := range g {
		VPCMPEQD(xs[i], keys[i], valid[i], K2)
		if k.intersect {
			VPCOMPRESSD_Z(xs[i], K2, ts[i])
			VMOVDQU32(ts[i], Mem{Base: R10, Index: R9, Scale: 4})
			KMOVW(K2, R11L)
			POPCNTL(R11L, R11L)
			ADDQ(R11, R9)
		} else {
			VPSUBD(Z31, Z30, K2, Z30)
		}
	}
	ADDQ(U32(64*g), RDI)
	SUBQ(U32(16*g), R8)
	JG(LabelRef(L("batch")))

	Label(L("done"))
	if k.intersect {
		Store(R9, ReturnIndex(0))
	} else {
		XORL(EDX, EDX)
		reduceZ(Z30)
		Store(RDX, ReturnIndex(0))
	}
	VZEROUPPER()
	RET()
}

// genSearchKernels emits the search kernels with four batches (64 probes)
// in flight, which hides the latency of the gathers better than one or two
// (README.md).
func genSearchKernels() {
	searchKernel{name: "countSearch", batches: 4}.generate()
	searchKernel{name: "intersectSearch", batches: 4, intersect: true}.generate()
}
