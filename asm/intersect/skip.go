package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

// The skip kernels serve the middle ratios (about 1:16 to 1:1000), where a
// block comparison reads every value of the larger set b although most blocks
// hold no value of a, and the batched binary searches of search-simd pay ~20
// levels of gathers a probe although consecutive probes lie only a few
// hundred values apart. They take Lemire, Boytsov and Kurz's "v3" scheme
// ("SIMD Compression and the Intersection of Sorted Integers") to AVX-512:
// for each value x of a, skip b by 512 values while b[p+511] < x, then by 64
// while b[p+63] < x, and compare x with the 64 values b[p:p+64] in four
// vector compares. The skips are predictable branches on one scalar load
// each; what is left is one compare of a cache-resident block a probe.
//
// The kernels stop when b has fewer than 64 values left at p and return how
// far they got, as the block kernels do; the caller finishes the tails.
//
// Registers:
//
//	SI, AX   next value of a, end of a
//	DI       p: the current 64-value block of b
//	BX       last start of a whole 64-value block of b
//	R8       last start of a whole 512-value block (below b: none)
//	R9       x
//	DX       matches so far (counted or written)
//	CX       dst (intersect)
//	R10      temporary

type skipKernel struct {
	name      string
	intersect bool
}

func (k skipKernel) generate() {
	if k.intersect {
		TEXT(k.name, NOSPLIT, "func(dst *uint32, a, b []uint32) (n, i, j int)")
		Doc(fmt.Sprintf("%s is %s writing the matches to dst,", k.name, "countSkip"),
			"which must have room for one value past the last match.")
	} else {
		TEXT(k.name, NOSPLIT, "func(a, b []uint32) (n, i, j int)")
		Doc(fmt.Sprintf("%s counts the matches of a in b by skipping b in", k.name),
			"blocks of 512 and 64 values and comparing each value of a with a",
			"64-value block (AVX-512). It returns the count and where it stopped:",
			"a[i:] is done or b[j:] has fewer than 64 values.")
	}
	Pragma("noescape")
	L := func(s string) string { return k.name + "_" + s }

	loadPair(k.intersect)
	LEAQ(Mem{Base: RSI, Index: RAX, Scale: 4}, RAX)
	SHLQ(U8(2), RBX)
	ADDQ(RDI, RBX)
	LEAQ(Mem{Base: RBX, Disp: -2048}, R8)
	SUBQ(U32(256), RBX)
	CMPQ(RBX, RDI)
	JB(LabelRef(L("done"))) // fewer than 64 values in b

	x86.AlignLoop()
	Label(L("probe"))
	CMPQ(RSI, RAX)
	JAE(LabelRef(L("done")))
	MOVL(Mem{Base: RSI}, R9L)
	VPBROADCASTD(R9L, Z0)

	skip(L("far"), R8, 512, L("near"), L("near"))
	skip(L("near"), RBX, 64, L("done"), L("compare"))

	Label(L("compare"))
	VPCMPEQD(Mem{Base: RDI}, Z0, K1)
	VPCMPEQD(Mem{Base: RDI, Disp: 64}, Z0, K2)
	VPCMPEQD(Mem{Base: RDI, Disp: 128}, Z0, K3)
	VPCMPEQD(Mem{Base: RDI, Disp: 192}, Z0, K4)
	KORW(K1, K2, K1)
	KORW(K3, K4, K3)
	KORTESTW(K1, K3)
	SETNE(R10B)
	MOVBQZX(R10B, R10)
	if k.intersect {
		// Stored whether or not it matched: no branch to mispredict.
		MOVL(R9L, Mem{Base: RCX, Index: RDX, Scale: 4})
	}
	ADDQ(R10, RDX)
	ADDQ(U8(4), RSI)
	JMP(LabelRef(L("probe")))

	Label(L("done"))
	Store(RDX, ReturnIndex(0))
	Load(Param("a").Base(), R10)
	SUBQ(R10, RSI)
	SHRQ(U8(2), RSI)
	Store(RSI, ReturnIndex(1))
	Load(Param("b").Base(), R10)
	SUBQ(R10, RDI)
	SHRQ(U8(2), RDI)
	Store(RDI, ReturnIndex(2))
	VZEROUPPER()
	RET()
}

// skip emits the loop at label that moves p (DI) on by blocks of n values
// while the block's last value is below x (R9): to past once p is beyond
// last, the last start of a whole block; to found once the block may hold
// x.
func skip(label string, last GPPhysical, n int, past, found string) {
	Label(label)
	CMPQ(RDI, last)
	JA(LabelRef(past))
	CMPL(Mem{Base: RDI, Disp: 4*n - 4}, R9L)
	JAE(LabelRef(found))
	ADDQ(U32(4*n), RDI)
	JMP(LabelRef(label))
}

func genSkipKernels() {
	skipKernel{name: "countSkip"}.generate()
	skipKernel{name: "intersectSkip", intersect: true}.generate()
}
