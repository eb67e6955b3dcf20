// Command simjoin generates the amd64 assembly of package
// github.com/xsect/xsect/internal/simjoin: the filters' hottest loops. The
// walk of one prefix list by a probe with the positional filter, PairJoin's
// walk of one pair list, the bounds over a probe's candidates (one kernel
// per bitmap width, for PPJoin's kind and PairJoin's), and the prefetches of
// what a probe will read next. They are plain x86-64 (conditional moves,
// POPCNT, PREFETCHT0; no vector instructions): what they gain over the
// compiled Go loops is that every value they need stays in a register, where
// the compiler spills half of them to the stack, and that the caches are
// asked for what comes next.
//
// Run it through go generate in the simjoin package:
//
//	go run -C ../../asm ./simjoin -out ../internal/simjoin/kernel_amd64.s -stubs ../internal/simjoin/kernel_stubs_amd64.go -pkg simjoin
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/xsect/xsect/asm/internal/x86"
)

func main() {
	ConstraintExpr("amd64,!purego")
	genWalk()
	genWalkPairs()
	genPrefetch()
	genPrefetchHeads()
	for _, w := range []int{1, 2, 4, 8} {
		genFilter(w)
		genFilterPairs(w)
	}
	Generate()
}

// The layouts of package simjoin's types that the kernel reads and writes.
const (
	entrySize = 12 // entry{id, pos, size uint32}
	candSize  = 8  // cand{q, j uint32}
	pruned    = 1 << 31
)

func genWalk() {
	TEXT("walkPositionalAMD64", NOSPLIT, "func(ent *uint32, n int, stop uint32, cnt *uint32, cands *uint64, need *uint32, touched *uint32, aq uint32, q uint32) (walked int, added int)")
	Doc("walkPositionalAMD64 is walkPositional over ent[0:n] (see there), with",
		"touched pointing where the next new candidate goes; it returns the",
		"entries walked and the candidates added.")
	ent := x86.LoadGP("ent")
	n := x86.LoadGP("n")
	cnt := x86.LoadGP("cnt")
	cands := x86.LoadGP("cands")
	need := x86.LoadGP("need")
	touched := x86.LoadGP("touched")
	q := x86.LoadGP("q") // zero-extended: the low half of each cand written
	stop, aq := x86.Arg("stop"), x86.Arg("aq")

	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	y := GP64()
	MOVL(Mem{Base: ent}, y.As32())
	CMPL(y.As32(), stop)
	JAE(LabelRef("done"))
	// t = b - jy, and cands[y] = cand{q, jy}.
	t := GP32()
	MOVL(Mem{Base: ent, Disp: 8}, t)
	jy := GP64()
	MOVL(Mem{Base: ent, Disp: 4}, jy.As32())
	SUBL(jy.As32(), t)
	SHLQ(U8(32), jy)
	ORQ(q, jy)
	MOVQ(jy, Mem{Base: cands, Index: y, Scale: candSize})
	// t = c + min(aq, b - jy): the common elements counted and the most
	// that can follow on the shorter side.
	CMPL(t, aq)
	CMOVLHI(aq, t)
	c := GP32()
	MOVL(Mem{Base: cnt, Index: y, Scale: 4}, c)
	ADDL(c, t)
	// next = c+1 if t reaches need[b]; else c|pruned if c != 0; else 0.
	next := GP32()
	MOVL(c, next)
	ORL(U32(pruned), next)
	TESTL(c, c)
	CMOVLEQ(c, next)
	INCL(c)
	b := GP64()
	MOVL(Mem{Base: ent, Disp: 8}, b.As32())
	CMPL(t, Mem{Base: need, Index: b, Scale: 4})
	CMOVLCC(c, next)
	MOVL(next, Mem{Base: cnt, Index: y, Scale: 4})
	// touched gets y at its end, which moves on only for a new candidate
	// that passed: then and only then is next 1.
	MOVL(y.As32(), Mem{Base: touched})
	adv := GP64()
	LEAQ(Mem{Base: touched, Disp: 4}, adv)
	CMPL(next, U8(1))
	CMOVQEQ(adv, touched)
	ADDQ(U8(entrySize), ent)
	DECQ(n)
	JNZ(LabelRef("loop"))

	Label("done")
	returnWalk(ent, touched)
}

// returnWalk returns a walk's counts from where its pointers ended: the
// entries walked, (ent - ent0) / 12, an exact division (a multiply by the
// inverse of 3 modulo 2^64 after the shift by 2), and the candidates
// added, (touched - touched0) / 4.
func returnWalk(ent, touched reg.GPVirtual) {
	SUBQ(x86.LoadGP("ent"), ent)
	SHRQ(U8(2), ent)
	inv := GP64()
	MOVQ(U64(0xAAAAAAAAAAAAAAAB), inv)
	IMULQ(inv, ent)
	Store(ent, ReturnIndex(0))
	SUBQ(x86.LoadGP("touched"), touched)
	SHRQ(U8(2), touched)
	Store(touched, ReturnIndex(1))
	RET()
}

func genWalkPairs() {
	TEXT("walkPairsAMD64", NOSPLIT, "func(ent *uint32, n int, stop uint32, pcnt *uint32, base uint32, need *uint32, touched *uint32, rest uint32, first uint32) (walked int, added int)")
	Doc("walkPairsAMD64 is walkPairs over ent[0:n] (see there), with touched",
		"pointing where the next new candidate goes; it returns the entries",
		"walked and the candidates added.")
	ent := x86.LoadGP("ent")
	n := x86.LoadGP("n")
	pcnt := x86.LoadGP("pcnt")
	need := x86.LoadGP("need")
	touched := x86.LoadGP("touched")
	stop, base, rest, first := x86.Arg("stop"), x86.Arg("base"), x86.Arg("rest"), x86.Arg("first")

	TESTQ(n, n)
	JZ(LabelRef("pdone"))
	Label("ploop")
	y := GP32()
	MOVL(Mem{Base: ent}, y)
	CMPL(y, stop)
	JAE(LabelRef("pdone"))
	i := GP64()
	MOVL(y, i.As32())
	SUBL(base, i.As32())
	// The position of the pair's second element in the record, and its
	// size: pos = jy | size<<8.
	jy, b := GP32(), GP64()
	MOVL(Mem{Base: ent, Disp: 4}, jy)
	MOVL(jy, b.As32())
	ANDL(U32(0xff), jy)
	SHRL(U8(8), b.As32())
	// t = 2 + min(rest, b-1-jy): the common elements if this is the first
	// pair met, the most.
	t := GP32()
	LEAL(Mem{Base: b, Disp: -1}, t)
	SUBL(jy, t)
	CMPL(t, rest)
	CMOVLHI(rest, t)
	ADDL(U8(2), t)
	// next = first|jy if that reaches need[b], else 0: a new candidate, or
	// none; but a unit met before counts one pair more, whatever.
	ORL(first, jy)
	zero := GP32()
	XORL(zero, zero)
	CMPL(t, Mem{Base: need, Index: b, Scale: 4})
	CMOVLCS(zero, jy)
	c := GP32()
	MOVL(Mem{Base: pcnt, Index: i, Scale: 4}, c)
	inc := GP32()
	LEAL(Mem{Base: c.As64(), Disp: 1 << 16}, inc)
	TESTL(c, c)
	CMOVLNE(inc, jy)
	MOVL(jy, Mem{Base: pcnt, Index: i, Scale: 4})
	// touched gets y at its end, which moves on only for a unit not met
	// before that passed.
	MOVL(y, Mem{Base: touched})
	adv := GP64()
	LEAQ(Mem{Base: touched, Disp: 4}, adv)
	TESTL(c, c)
	CMOVQNE(touched, adv)
	TESTL(jy, jy)
	CMOVQNE(adv, touched)
	ADDQ(U8(entrySize), ent)
	DECQ(n)
	JNZ(LabelRef("ploop"))

	Label("pdone")
	returnWalk(ent, touched)
}

func genPrefetch() {
	TEXT("prefetchUnitsAMD64", NOSPLIT, "func(ids *uint32, n int, info *uint32, bits *uint64, words int)")
	Doc("prefetchUnitsAMD64 asks the caches for the info (12 bytes each) and the",
		"bitmap (words each) of the units ids[0:n].")
	ids := x86.LoadGP("ids")
	n := x86.LoadGP("n")
	info := x86.LoadGP("info")
	bits := x86.LoadGP("bits")
	stride := x86.LoadGP("words")
	SHLQ(U8(3), stride) // bytes per bitmap
	TESTQ(n, n)
	JZ(LabelRef("fdone"))
	Label("floop")
	y := GP64()
	MOVL(Mem{Base: ids}, y.As32())
	off := GP64()
	LEAQ(Mem{Base: y, Index: y, Scale: 2}, off)
	PREFETCHT0(Mem{Base: info, Index: off, Scale: 4})
	IMULQ(stride, y)
	PREFETCHT0(Mem{Base: bits, Index: y, Scale: 1})
	ADDQ(U8(4), ids)
	DECQ(n)
	JNZ(LabelRef("floop"))
	Label("fdone")
	RET()
}

func genPrefetchHeads() {
	TEXT("prefetchHeadsAMD64", NOSPLIT, "func(elems *uint32, n int, lists *uint64, ent *uint32)")
	Doc("prefetchHeadsAMD64 asks the caches for the next entry of the list of",
		"each of elems[0:n]: ent[lists[e].k] (spans of 8 bytes, entries of 12).")
	elems := x86.LoadGP("elems")
	n := x86.LoadGP("n")
	lists := x86.LoadGP("lists")
	ent := x86.LoadGP("ent")
	TESTQ(n, n)
	JZ(LabelRef("hdone"))
	Label("hloop")
	e := GP64()
	MOVL(Mem{Base: elems}, e.As32())
	k := GP64()
	MOVL(Mem{Base: lists, Index: e, Scale: 8}, k.As32())
	LEAQ(Mem{Base: k, Index: k, Scale: 2}, k)
	PREFETCHT0(Mem{Base: ent, Index: k, Scale: 4})
	ADDQ(U8(4), elems)
	DECQ(n)
	JNZ(LabelRef("hloop"))
	Label("hdone")
	RET()
}

// genFilter emits the filter of a probe's candidates for bitmaps of w
// words (unitInfo is {off, size, last uint32}: 12 bytes).
func genFilter(w int) {
	name := fmt.Sprintf("filterCands%dAMD64", w)
	TEXT(name, NOSPLIT, "func(ids *uint32, n int, cnt *uint32, cands *uint64, info *uint32, bits *uint64, need *uint32, pfx *uint32, idxPrefix *uint32, xr *uint32, a uint32, positional uint32, xbits *[8]uint64, out *uint32) int")
	Doc(name + " is filterCands (see there) for bitmaps of " + fmt.Sprint(w) + " words. It needs POPCNT.")
	ids := x86.LoadGP("ids")
	n := x86.LoadGP("n")
	cnt := x86.LoadGP("cnt")
	cands := x86.LoadGP("cands")
	info := x86.LoadGP("info")
	out := x86.LoadGP("out")
	need, pfx, idxPrefix, xr, a, positional := x86.Arg("need"), x86.Arg("pfx"), x86.Arg("idxPrefix"), x86.Arg("xr"), x86.Arg("a"), x86.Arg("positional")
	bits, xbits := x86.Arg("bits"), x86.Arg("xbits")
	// The end of ids, in a stack slot: every register is needed.
	end := AllocLocal(8)
	{
		e := GP64()
		LEAQ(Mem{Base: ids, Index: n, Scale: 4}, e)
		MOVQ(e, end)
	}
	TESTQ(n, n)
	JZ(LabelRef("cdone" + fmt.Sprint(w)))
	loop, next := "cloop"+fmt.Sprint(w), "cnext"+fmt.Sprint(w)
	Label(loop)
	y, c := GP64(), GP32()
	MOVL(Mem{Base: ids}, y.As32())
	MOVL(Mem{Base: cnt, Index: y, Scale: 4}, c)
	MOVL(U32(0), Mem{Base: cnt, Index: y, Scale: 4})
	TESTL(U32(pruned), c)
	JNZ(LabelRef(next))
	// b and last from info[y].
	b, last := GP64(), GP32()
	{
		t := GP64()
		LEAQ(Mem{Base: y, Index: y, Scale: 2}, t)
		MOVL(Mem{Base: info, Index: t, Scale: 4, Disp: 4}, b.As32())
		MOVL(Mem{Base: info, Index: t, Scale: 4, Disp: 8}, last)
	}
	// xs = pfx[b] and ys = positional ? cand.j+1 : c, unless the probe's
	// prefix for b ends past the unit's indexing prefix (xr[pb-1] > last):
	// then xs = cand.q+1 and ys = idxPrefix[b].
	xs := GP64()
	{
		tp := GP64()
		MOVQ(pfx, tp)
		MOVL(Mem{Base: tp, Index: b, Scale: 4}, xs.As32())
	}
	flag := GP32()
	{
		i, tp := GP64(), GP64()
		MOVL(xs.As32(), i.As32())
		SUBL(U8(1), i.As32())
		zero := GP32()
		XORL(zero, zero)
		CMOVLCS(zero, i.As32()) // pb = 0: element 0, never read in practice
		MOVQ(xr, tp)
		MOVL(Mem{Base: tp, Index: i, Scale: 4}, flag)
		CMPL(flag, last)
		SETHI(flag.As8())
		MOVBLZX(flag.As8(), flag)
	}
	cd := GP64()
	MOVQ(Mem{Base: cands, Index: y, Scale: 8}, cd)
	ys := GP32()
	MOVL(c, ys)
	{
		j := GP64()
		MOVQ(cd, j)
		SHRQ(U8(32), j)
		INCL(j.As32())
		CMPL(positional, U8(0))
		CMOVLNE(j.As32(), ys)
	}
	MOVL(cd.As32(), cd.As32()) // q, zero-extended
	INCL(cd.As32())
	ysA := GP32()
	{
		tp := GP64()
		MOVQ(idxPrefix, tp)
		MOVL(Mem{Base: tp, Index: b, Scale: 4}, ysA)
	}
	TESTL(flag, flag)
	CMOVLNE(cd.As32(), xs.As32())
	CMOVLNE(ysA, ys)
	nd := GP32()
	{
		tp := GP64()
		MOVQ(need, tp)
		MOVL(Mem{Base: tp, Index: b, Scale: 4}, nd)
	}
	// The positional bound: c + min(a - xs, b - ys) >= nd.
	{
		t1, t2 := GP32(), GP32()
		MOVL(a, t1)
		SUBL(xs.As32(), t1)
		MOVL(b.As32(), t2)
		SUBL(ys, t2)
		CMPL(t1, t2)
		CMOVLHI(t2, t1)
		ADDL(c, t1)
		CMPL(t1, nd)
		JCS(LabelRef(next))
	}
	// The bitmap bound reaches nd.
	CMPL(bitBound(y, b, w, bits, xbits, a), nd)
	JCS(LabelRef(next))
	MOVL(y.As32(), Mem{Base: out})
	MOVL(c, Mem{Base: out, Disp: 4})
	MOVL(xs.As32(), Mem{Base: out, Disp: 8})
	MOVL(ys, Mem{Base: out, Disp: 12})
	ADDQ(U8(16), out)
	Label(next)
	ADDQ(U8(4), ids)
	CMPQ(ids, end)
	JB(LabelRef(loop))
	Label("cdone" + fmt.Sprint(w))
	SUBQ(x86.LoadGP("out"), out)
	SHRQ(U8(4), out)
	Store(out, ReturnIndex(0))
	RET()
}

// genFilterPairs emits the filter of a probe's PairJoin candidates for
// bitmaps of w words.
func genFilterPairs(w int) {
	name := fmt.Sprintf("filterPairs%dAMD64", w)
	TEXT(name, NOSPLIT, "func(ids *uint32, n int, pcnt *uint32, base uint32, info *uint32, bits *uint64, need *uint32, a uint32, exact uint32, xbits *[8]uint64, out *uint32) int")
	Doc(name + " is filterPairs (see there) for bitmaps of " + fmt.Sprint(w) + " words. It needs POPCNT.")
	suffix := fmt.Sprint("p", w)
	ids := x86.LoadGP("ids")
	n := x86.LoadGP("n")
	pcnt := x86.LoadGP("pcnt")
	info := x86.LoadGP("info")
	out := x86.LoadGP("out")
	base, bits, need, a, exact, xbits := x86.Arg("base"), x86.Arg("bits"), x86.Arg("need"), x86.Arg("a"), x86.Arg("exact"), x86.Arg("xbits")
	TESTQ(n, n)
	JZ(LabelRef("done" + suffix))
	Label("loop" + suffix)
	y, i, c := GP64(), GP64(), GP32()
	MOVL(Mem{Base: ids}, y.As32())
	MOVL(y.As32(), i.As32())
	SUBL(base, i.As32())
	MOVL(Mem{Base: pcnt, Index: i, Scale: 4}, c)
	MOVL(U32(0), Mem{Base: pcnt, Index: i, Scale: 4})
	b, nd := GP64(), GP32()
	{
		t := GP64()
		LEAQ(Mem{Base: y, Index: y, Scale: 2}, t)
		MOVL(Mem{Base: info, Index: t, Scale: 4, Disp: 4}, b.As32())
		MOVQ(need, t)
		MOVL(Mem{Base: t, Index: b, Scale: 4}, nd)
	}
	// direct: not exact, and the pairs met show nd common elements:
	// nd <= 2 or nd(nd-1)/2 <= hits.
	direct := GP32()
	{
		h, t := GP32(), GP32()
		MOVL(c, h)
		SHRL(U8(16), h)
		LEAL(Mem{Base: nd.As64(), Disp: -1}, t)
		IMULL(nd, t)
		SHRL(U8(1), t)
		XORL(direct, direct)
		CMPL(t, h)
		SETLS(direct.As8())
		one := GP32()
		MOVL(U32(1), one)
		CMPL(nd, U8(2))
		CMOVLLS(one, direct)
		CMPL(exact, U8(0))
		MOVL(U32(0), one)
		CMOVLNE(one, direct)
	}
	// keep: direct, or the bitmap bound reaches nd.
	keep := GP32()
	{
		bound := bitBound(y, b, w, bits, xbits, a)
		XORL(keep, keep)
		CMPL(bound, nd)
		SETCC(keep.As8())
		ORL(direct, keep)
	}
	MOVL(y.As32(), Mem{Base: out})
	MOVL(c, Mem{Base: out, Disp: 4})
	MOVL(direct, Mem{Base: out, Disp: 8})
	{
		adv := GP64()
		LEAQ(Mem{Base: out, Disp: 16}, adv)
		TESTL(keep, keep)
		CMOVQNE(adv, out)
	}
	ADDQ(U8(4), ids)
	DECQ(n)
	JNZ(LabelRef("loop" + suffix))
	Label("done" + suffix)
	SUBQ(x86.LoadGP("out"), out)
	SHRQ(U8(4), out)
	Store(out, ReturnIndex(0))
	RET()
}

// bitBound returns a register holding the bitmap bound of unit y, of
// size b, and the probe, of size a: (a + b - popcount(x xor y)) / 2 over
// the probe's bitmap xbits and the unit's (bits + y·8w), of w words.
func bitBound(y, b reg.GPVirtual, w int, bits, xbits, a Mem) reg.GPVirtual {
	off, tp, d, t := GP64(), GP64(), GP64(), GP64()
	MOVQ(y, off)
	SHLQ(U8(uint8(3+log2(w))), off)
	MOVQ(bits, tp)
	ADDQ(off, tp)
	xb := GP64()
	MOVQ(xbits, xb)
	XORL(d.As32(), d.As32())
	for i := 0; i < w; i++ {
		MOVQ(Mem{Base: xb, Disp: 8 * i}, t)
		XORQ(Mem{Base: tp, Disp: 8 * i}, t)
		POPCNTQ(t, t)
		ADDQ(t, d)
	}
	MOVL(a, t.As32())
	ADDL(b.As32(), t.As32())
	SUBL(d.As32(), t.As32())
	SHRL(U8(1), t.As32())
	return t.As32().(reg.GPVirtual)
}

func log2(w int) int {
	l := 0
	for 1<<l < w {
		l++
	}
	return l
}
