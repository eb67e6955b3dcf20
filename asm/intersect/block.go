package main

import (
	"github.com/xsect/xsect/asm/internal/x86"

	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The block kernels implement the speculative block comparison of
// Schlegel, Willhalm and Lehner, "Fast Sorted-Set Intersection using SIMD
// Instructions": load a block of w values from each set, compare all w*w
// pairs at once, then advance the set whose block ends with
// the smaller value (both when the ends are equal). Strictly increasing
// inputs make every match appear in exactly one block pair, and the output
// comes out sorted because the matched values of each a block are written
// in lane order.
//
// The loop is branch-free: the advance is two CMOVs on the block maxima, so
// its speed does not depend on how the two sets interleave. The kernels
// stop when either set has fewer than w values left and return how far they
// got; the caller finishes the tails with a scalar method.
//
// Registers shared by every block kernel:
//
//	SI, DI   current a and b block
//	AX, BX   last full block of a and of b
//	DX       number of matches so far (counted or written)
//	CX       dst (intersect kernels)
//	R8, R9   free for the bodies
//	R10-R13  temporaries of the loop (and of the final reduction)

type blockKernel struct {
	name      string
	doc       []string
	width     int  // values per block
	unroll    int  // steps per window of the unrolled loop; 1: none
	intersect bool // write the matches to dst instead of counting them
	setup     func()
	body      func() // compare the blocks at (SI) and (DI)
	finish    func() // add what the body accumulated to DX

	// A pipelined intersect kernel keeps the matches of a window in
	// registers and stores them depth windows later: stage(set, t) keeps
	// those of step t in register set `set`, flush(set, t) stores them.
	depth        int
	stage, flush func(set, t int)
	clear        func() // no pending matches in any set
}

// loadPair loads the arguments as the block and skip kernels keep them: a
// in SI and AX (base, length), b in DI and BX, dst in CX; no matches in DX.
func loadPair(intersect bool) {
	Load(Param("a").Base(), RSI)
	Load(Param("a").Len(), RAX)
	Load(Param("b").Base(), RDI)
	Load(Param("b").Len(), RBX)
	if intersect {
		Load(Param("dst"), RCX)
	}
	XORL(EDX, EDX)
}

func retAddr(name string) Mem {
	b, err := Return(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

func (k blockKernel) generate() {
	if k.intersect {
		TEXT(k.name, NOSPLIT, "func(dst *uint32, a, b []uint32) (n, i, j int)")
	} else {
		TEXT(k.name, NOSPLIT, "func(a, b []uint32) (n, i, j int)")
	}
	Doc(k.doc...)
	Pragma("noescape")
	w, u := k.width, k.unroll
	L := func(s string) string { return k.name + "_" + s }
	loadPair(k.intersect)
	CMPQ(RAX, U32(w))
	JB(LabelRef(L("end")))
	CMPQ(RBX, U32(w))
	JB(LabelRef(L("end")))
	if k.setup != nil {
		k.setup()
	}
	if u <= 1 {
		LEAQ(Mem{Base: RSI, Index: RAX, Scale: 4, Disp: -4 * w}, RAX)
		LEAQ(Mem{Base: RDI, Index: RBX, Scale: 4, Disp: -4 * w}, RBX)
	} else {
		k.window(L)
		// Back from the window loop: the last full blocks are u-1 blocks
		// past the last windows.
		Label(L("single"))
		MOVQ(retAddr("i"), RAX)
		MOVQ(retAddr("j"), RBX)
		ADDQ(U32(4*w*(u-1)), RAX)
		ADDQ(U32(4*w*(u-1)), RBX)
		CMPQ(RSI, RAX)
		JA(LabelRef(L("done")))
		CMPQ(RDI, RBX)
		JA(LabelRef(L("done")))
	}

	x86.AlignLoop()
	Label(L("loop"))
	// The loop-carried chain: load the block maxima, compare, CMOV.
	MOVL(Mem{Base: RSI, Disp: 4*w - 4}, R10L)
	MOVL(Mem{Base: RDI, Disp: 4*w - 4}, R11L)
	k.body()
	LEAQ(Mem{Base: RSI, Disp: 4 * w}, R12)
	LEAQ(Mem{Base: RDI, Disp: 4 * w}, R13)
	CMPL(R10L, R11L)
	CMOVQLS(R12, RSI) // max(a block) <= max(b block): next a block
	CMOVQCC(R13, RDI) // max(a block) >= max(b block): next b block
	CMPQ(RSI, RAX)
	JA(LabelRef(L("done")))
	CMPQ(RDI, RBX)
	JBE(LabelRef(L("loop")))

	Label(L("done"))
	if k.finish != nil {
		k.finish()
	}
	VZEROUPPER()
	Label(L("end"))
	Load(Param("a").Base(), R8)
	Load(Param("b").Base(), R9)
	SUBQ(R8, RSI)
	SHRQ(U8(2), RSI)
	SUBQ(R9, RDI)
	SHRQ(U8(2), RDI)
	Store(RDX, Return("n"))
	Store(RSI, Return("i"))
	Store(RDI, Return("j"))
	RET()
}

// window emits the unrolled loop: u steps per iteration while both sets
// have u full blocks left. The chain of one step is a compare and a CMOV
// instead of a load, a compare and a CMOV: the maxima of the u blocks
// ahead are loaded at the start of the window, and each step selects the
// next ones with CMOVs. On entry AX and BX hold len(a) and len(b); the
// last window starts are kept in the i and j result slots.
func (k blockKernel) window(L func(string) string) {
	w, u := k.width, k.unroll
	regs := []Register{R10, R11, R12, R13, R14, R15, RAX, RBX, R8, R9}
	if k.intersect {
		regs = []Register{R10, R11, R12, R13, R14, R15, RAX, RBX} // R8, R9: body
	}
	if 2*u+2 > len(regs) {
		panic(fmt.Sprintf("%s: unroll %d needs too many registers", k.name, u))
	}
	va, vb := regs[:u], regs[u:2*u]
	ta, tb := regs[2*u], regs[2*u+1]
	// The last window starts; below the base when a set is shorter than a
	// window, which the first test catches (Go pointers are far above 4w*u).
	LEAQ(Mem{Base: RSI, Index: RAX, Scale: 4, Disp: -4 * w * u}, RAX)
	LEAQ(Mem{Base: RDI, Index: RBX, Scale: 4, Disp: -4 * w * u}, RBX)
	MOVQ(RAX, retAddr("i"))
	MOVQ(RBX, retAddr("j"))
	CMPQ(RSI, RAX)
	JA(LabelRef(L("single")))
	CMPQ(RDI, RBX)
	JA(LabelRef(L("single")))
	if k.stage == nil {
		x86.AlignLoop()
		Label(L("window"))
		k.windowBody(va, vb, ta, tb, -1)
		CMPQ(RSI, retAddr("i"))
		JA(LabelRef(L("single")))
		CMPQ(RDI, retAddr("j"))
		JBE(LabelRef(L("window")))
		return
	}
	// Pipelined: the loop body is depth windows, window c staging its
	// matches into register set c after storing those that set held since
	// depth windows ago. The stores of a window come after the loads of
	// the next window's maxima, and their addresses (which depend on the
	// popcounts of the matches) are long known when the loads after them
	// issue: Zen 5 holds a load back until the addresses of older stores
	// are known.
	d := k.depth
	k.clear()
	x86.AlignLoop()
	Label(L("window"))
	for c := 0; c < d; c++ {
		k.windowBody(va, vb, ta, tb, c)
		CMPQ(RSI, retAddr("i"))
		JA(LabelRef(L(fmt.Sprintf("flush%d", c))))
		CMPQ(RDI, retAddr("j"))
		if c == d-1 {
			JBE(LabelRef(L("window")))
		} else {
			JA(LabelRef(L(fmt.Sprintf("flush%d", c))))
		}
	}
	for c := d - 1; c >= 0; c-- {
		// Leaving after window c: the sets staged after it, in order of age
		// (c+1, ..., d-1, 0, ..., c) still hold matches; the older ones
		// staged nothing yet when the kernel left within the first d
		// windows, and clear made them empty.
		Label(L(fmt.Sprintf("flush%d", c)))
		for i := 1; i <= d; i++ {
			set := (c + i) % d
			for t := 0; t < u; t++ {
				k.flush(set, t)
			}
		}
		JMP(LabelRef(L("single")))
	}
}

// windowBody emits one window of u steps; set is the register set a
// pipelined kernel stages into (-1: not pipelined).
func (k blockKernel) windowBody(va, vb []Register, ta, tb Register, set int) {
	w, u := k.width, k.unroll
	for m := 0; m < u; m++ {
		MOVL(Mem{Base: RSI, Disp: 4*w*(m+1) - 4}, va[m].(GPPhysical).As32())
		MOVL(Mem{Base: RDI, Disp: 4*w*(m+1) - 4}, vb[m].(GPPhysical).As32())
	}
	if set >= 0 {
		for t := 0; t < u; t++ {
			k.flush(set, t)
		}
	}
	for t := 0; t < u; t++ {
		if set >= 0 {
			k.stage(set, t)
		} else {
			k.body()
		}
		LEAQ(Mem{Base: RSI, Disp: 4 * w}, ta)
		LEAQ(Mem{Base: RDI, Disp: 4 * w}, tb)
		CMPL(va[0].(GPPhysical).As32(), vb[0].(GPPhysical).As32())
		// Shift the maxima of the set that advances by one block.
		for m := 0; m+1 < u-t; m++ {
			CMOVLLS(va[m+1].(GPPhysical).As32(), va[m].(GPPhysical).As32())
			CMOVLCC(vb[m+1].(GPPhysical).As32(), vb[m].(GPPhysical).As32())
		}
		CMOVQLS(ta, RSI)
		CMOVQCC(tb, RDI)
	}
}

// reduceZ adds the 16 uint32 lanes of z to DX, in 64 bits. It clobbers Z28,
// Z29 and R10.
func reduceZ(z VecPhysical) {
	VEXTRACTI64X4(U8(1), z, Y29)
	VPMOVZXDQ(z.AsY(), Z28)
	VPMOVZXDQ(Y29, Z29)
	VPADDQ(Z28, Z29, Z28)
	VEXTRACTI64X4(U8(1), Z28, Y29)
	VPADDQ(Y28, Y29, Y28)
	VEXTRACTI32X4(U8(1), Y28, X29)
	VPADDQ(X28, X29, X28)
	VPSHUFD(U8(0x4e), X28, X29)
	VPADDQ(X28, X29, X28)
	VMOVQ(X28, R10)
	ADDQ(R10, RDX)
}

// reduceY adds the 8 uint32 lanes of y to DX. It clobbers Y13, Y14 and R10.
func reduceY(y VecPhysical) {
	VEXTRACTI128(U8(1), y, X14)
	VPMOVZXDQ(y.AsX(), Y13)
	VPMOVZXDQ(X14, Y14)
	VPADDQ(Y13, Y14, Y13)
	VEXTRACTI128(U8(1), Y13, X14)
	VPADDQ(X13, X14, X13)
	VPSHUFD(U8(0x4e), X13, X14)
	VPADDQ(X13, X14, X13)
	VMOVQ(X13, R10)
	ADDQ(R10, RDX)
}

// ---- AVX2: 8x8 blocks ----

// avx2Matches leaves in Y1 the all-ones lanes of the a block (loaded into
// Y0) that equal some value of the b block at (DI). Each b value is
// broadcast from memory (a load, no shuffle) and compared with all of a;
// on Zen 5 this beats comparing against the eight rotations of the b
// block (VPSHUFD and VPERM2I128; README.md).
func avx2Matches() {
	VMOVDQU(Mem{Base: RSI}, Y0)
	ys := []VecPhysical{Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8}
	for t, y := range ys {
		VPBROADCASTD(Mem{Base: RDI, Disp: 4 * t}, y)
		VPCMPEQD(y, Y0, y)
	}
	VPOR(Y1, Y2, Y1)
	VPOR(Y3, Y4, Y3)
	VPOR(Y5, Y6, Y5)
	VPOR(Y7, Y8, Y7)
	VPOR(Y1, Y3, Y1)
	VPOR(Y5, Y7, Y5)
	VPOR(Y1, Y5, Y1)
}

func avx2Count() blockKernel {
	return blockKernel{
		name: "countAVX2",
		doc: []string{
			"countAVX2 counts the matches of a and b in blocks of 8 values (AVX2)",
			"and returns the count and where it stopped: a[i:] or b[j:] has fewer",
			"than 8 values.",
		},
		width:  8,
		unroll: 3,
		setup:  func() { VPXOR(Y15, Y15, Y15) },
		body: func() {
			avx2Matches()
			VPSUBD(Y1, Y15, Y15) // a match lane is -1
		},
		finish: func() { reduceY(Y15) },
	}
}

func avx2Intersect() blockKernel {
	return blockKernel{
		name: "intersectAVX2",
		doc: []string{
			"intersectAVX2 is countAVX2 writing the matches to dst, which must have",
			"room for 8 values past the last match.",
		},
		width:     8,
		unroll:    3,
		intersect: true,
		setup:     func() { LEAQ(compress8, R8) },
		body: func() {
			avx2Matches()
			VMOVMSKPS(Y1, R9L)
			// Shuffle-table compress: row m of the table holds the indices
			// of m's set bits.
			VPMOVZXBD(Mem{Base: R8, Index: R9, Scale: 8}, Y2)
			VPERMD(Y0, Y2, Y3)
			VMOVDQU(Y3, Mem{Base: RCX, Index: RDX, Scale: 4})
			POPCNTL(R9L, R9L)
			ADDQ(R9, RDX)
		},
	}
}

var compress8 Mem

// compressTable8 emits the 256x8-byte table of lane indices for the AVX2
// shuffle-table compress.
func compressTable8() {
	compress8 = GLOBL("compress8", RODATA|NOPTR)
	for m := 0; m < 256; m++ {
		var row uint64 // little-endian bytes: the set bits' indices in order
		n := 0
		for l := 0; l < 8; l++ {
			if m&(1<<l) != 0 {
				row |= uint64(l) << (8 * n)
				n++
			}
		}
		DATA(8*m, U64(row))
	}
}

// ---- AVX-512: 16x16 blocks ----

// An emulation computes VP2INTERSECTD's first mask: the lanes of the a
// block (in Z0) that equal some value of the b block at (DI). The
// emulations leave it in K1, the native instruction in K2.
type emulation int

const (
	// emuXorMin xors a with each of the 16 b values (broadcast from
	// memory) and takes the unsigned minimum of the 16 results: a lane is
	// zero where a value matched. Only plain vector ALU operations, which
	// Zen 5 runs on four pipes: the fastest emulation there (README.md has
	// the figures of the others).
	emuXorMin emulation = iota
	// emuHybrid does 10 of the 16 b values with chained masked not-equal
	// compares and 6 with xor and minimum. Intel cores (Sapphire Rapids)
	// compare into masks on one port but xor and min on two; the split
	// balances them, and 10 compares measured best of 6 to 16 (README.md).
	emuHybrid
	// emuNative is VP2INTERSECTD.
	emuNative
)

// avx512Matches compares the a block at (SI) with the b block at (DI).
func avx512Matches(e emulation) Register {
	VMOVDQU32(Mem{Base: RSI}, Z0)
	b := func(t int) Mem { return Mem{Base: RDI, Disp: 4 * t} }
	switch e {
	case emuXorMin:
		zs := []VecPhysical{Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8}
		for t := 0; t < 8; t++ {
			VPXORD_BCST(b(t), Z0, zs[t])
		}
		for t := 8; t < 16; t++ {
			VPXORD_BCST(b(t), Z0, Z9)
			VPMINUD(Z9, zs[t%8], zs[t%8])
		}
		VPMINUD(Z1, Z2, Z1)
		VPMINUD(Z3, Z4, Z3)
		VPMINUD(Z5, Z6, Z5)
		VPMINUD(Z7, Z8, Z7)
		VPMINUD(Z1, Z3, Z1)
		VPMINUD(Z5, Z7, Z5)
		VPMINUD(Z1, Z5, Z1)
		VPTESTNMD(Z1, Z1, K1)
		return K1
	case emuHybrid:
		const compares = 10
		// Two chains of masked compares: K1 and K2 keep the lanes that
		// differ from every b value so far.
		ks := []Register{K1, K2}
		for t := 0; t < compares; t++ {
			if t < 2 {
				VPCMPD_BCST(U8(4), b(t), Z0, ks[t]) // 4: not equal
			} else {
				VPCMPD_BCST(U8(4), b(t), Z0, ks[t%2], ks[t%2])
			}
		}
		zs := []VecPhysical{Z1, Z2, Z3, Z4}
		for t := compares; t < 16; t++ {
			if i := t - compares; i < 4 {
				VPXORD_BCST(b(t), Z0, zs[i])
			} else {
				VPXORD_BCST(b(t), Z0, Z9)
				VPMINUD(Z9, zs[i%4], zs[i%4])
			}
		}
		VPMINUD(Z1, Z2, Z1)
		VPMINUD(Z3, Z4, Z3)
		VPMINUD(Z1, Z3, Z1)
		KANDW(K1, K2, K1)
		VPTESTMD(Z1, Z1, K1, K1) // differs from all 16 b values
		KNOTW(K1, K1)
		return K1
	case emuNative:
		x86.VP2INTERSECTD(Mem{Base: RDI}, Z0, K2)
		return K2
	}
	panic("unknown emulation")
}

func avx512Count(name string, e emulation, doc ...string) blockKernel {
	return blockKernel{
		name:   name,
		doc:    doc,
		width:  16,
		unroll: 3,
		setup: func() {
			VPXORD(Z30, Z30, Z30)
			VPTERNLOGD(U8(0xff), Z31, Z31, Z31) // -1 in every lane
		},
		body: func() {
			k := avx512Matches(e)
			VPSUBD(Z31, Z30, k, Z30) // +1 in every matching lane
		},
		finish: func() { reduceZ(Z30) },
	}
}

// avx512Intersect writes the matching lanes of a with VPCOMPRESSD into a
// register (to memory it is microcoded on Zen 4, and no faster on Zen 5)
// and a full 16-lane store. In the unrolled loop it stores two windows
// late: Zen 5 holds loads back until the addresses of older stores are
// known, and the address of a store depends on the popcount of all the
// matches before it, so storing at once nearly doubles the time
// (README.md).
func avx512Intersect(name string, e emulation, doc ...string) blockKernel {
	const unroll, depth = 3, 2
	zp := []VecPhysical{Z10, Z11, Z12, Z13, Z14, Z15}
	kp := []Register{K0, K3, K4, K5, K6, K7} // the emulations use K1 and K2
	if e == emuNative {
		kp[1] = K1 // VP2INTERSECTD writes K2 and K3
	}
	return blockKernel{
		name:      name,
		doc:       doc,
		width:     16,
		unroll:    unroll,
		depth:     depth,
		intersect: true,
		body: func() {
			k := avx512Matches(e)
			VPCOMPRESSD_Z(Z0, k, Z1)
			VMOVDQU32(Z1, Mem{Base: RCX, Index: RDX, Scale: 4})
			KMOVW(k, R8L)
			POPCNTL(R8L, R8L)
			ADDQ(R8, RDX)
		},
		clear: func() {
			for _, r := range kp {
				KXORW(r, r, r)
			}
		},
		stage: func(set, t int) {
			k := avx512Matches(e)
			VPCOMPRESSD_Z(Z0, k, zp[set*unroll+t])
			KMOVW(k, kp[set*unroll+t])
		},
		flush: func(set, t int) {
			KMOVW(kp[set*unroll+t], R8L)
			POPCNTL(R8L, R8L)
			VMOVDQU32(zp[set*unroll+t], Mem{Base: RCX, Index: RDX, Scale: 4})
			ADDQ(R8, RDX)
		},
	}
}

func genBlockKernels() {
	compressTable8()
	const (
		stop  = "and returns the count and where it stopped: a[i:] or b[j:] has fewer than 16 values."
		slack = "dst must have room for 16 values past the last match."
	)
	for _, k := range []blockKernel{
		avx2Count(),
		avx2Intersect(),
		avx512Count("countAVX512XorMin", emuXorMin,
			"countAVX512XorMin counts the matches of a and b in blocks of 16 values", "(AVX-512, xor-and-minimum emulation of VP2INTERSECTD)", stop),
		avx512Intersect("intersectAVX512XorMin", emuXorMin,
			"intersectAVX512XorMin is countAVX512XorMin writing the matches to dst.", slack),
		avx512Count("countAVX512Hybrid", emuHybrid,
			"countAVX512Hybrid counts the matches of a and b in blocks of 16 values", "(AVX-512, compare-and-xor emulation of VP2INTERSECTD)", stop),
		avx512Intersect("intersectAVX512Hybrid", emuHybrid,
			"intersectAVX512Hybrid is countAVX512Hybrid writing the matches to dst.", slack),
		avx512Count("countVP2Intersect", emuNative,
			"countVP2Intersect counts the matches of a and b in blocks of 16 values", "with VP2INTERSECTD", stop),
		avx512Intersect("intersectVP2Intersect", emuNative,
			"intersectVP2Intersect is countVP2Intersect writing the matches to dst.", slack),
	} {
		k.generate()
	}
}
