package batmap

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/xsect/xsect/intersect"
)

// CountWords compares two batmaps of one layout entry by entry and returns
// the number of elements they have in common, the failed elements of
// either not included. The longer batmap's length must be a multiple of
// the shorter's (the shorter is wrapped), and both a whole number of
// 64-bit words.
//
// An entry pair counts when its element bits are equal and one of its
// indicator bits is set; empty entries (0) never count. This is the
// branch-free formula of section III-A, applied to 64 bits at a time:
//
//	p  = ((x ^ y) | hi) - lo      // indicator bit 0 iff element bits equal
//	p' = ^p & (x | y) & hi         // ... and one indicator bit is set
//
// where hi holds the indicator bit of every entry and lo the lowest bit.
func CountWords(a, b []uint32, entryBits int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return 0
	}
	if len(a)%len(b) != 0 || len(b)%2 != 0 {
		panic(fmt.Sprintf("batmap: CountWords of %d and %d words: want even lengths, one a multiple of the other", len(a), len(b)))
	}
	hi, lo := masks(entryBits)
	a64, b64 := as64(a), as64(b)
	if a64 == nil || b64 == nil {
		return countWrap32(a, b, uint32(hi), uint32(lo))
	}
	return countWrap(a64, b64, kernelFor(entryBits))
}

// as64 views an 8-byte aligned []uint32 of even length as []uint64, or
// returns nil.
func as64(w []uint32) []uint64 {
	if len(w) == 0 || uintptr(unsafe.Pointer(&w[0]))%8 != 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&w[0])), len(w)/2)
}

// countWrap counts wide against narrow, narrow repeated.
func countWrap(wide, narrow []uint64, k *kernel) int {
	n := 0
	for off := 0; off < len(wide); off += len(narrow) {
		n += k.one(wide[off:off+len(narrow)], narrow)
	}
	return n
}

// countWrap32 is countWrap on unaligned input.
func countWrap32(wide, narrow []uint32, hi, lo uint32) int {
	n := 0
	for off := 0; off < len(wide); off += len(narrow) {
		a := wide[off : off+len(narrow)]
		for i, y := range narrow {
			x := a[i]
			p := ((x ^ y) | hi) - lo
			n += bits.OnesCount32(^p & (x | y) & hi)
		}
	}
	return n
}

// countGeneric returns the matches of a and b, of equal length.
func countGeneric(a, b []uint64, hi, lo uint64) int {
	b = b[:len(a)]
	var n0, n1, n2, n3 int
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x0, x1, x2, x3 := a[i], a[i+1], a[i+2], a[i+3]
		y0, y1, y2, y3 := b[i], b[i+1], b[i+2], b[i+3]
		n0 += bits.OnesCount64(^(((x0 ^ y0) | hi) - lo) & (x0 | y0) & hi)
		n1 += bits.OnesCount64(^(((x1 ^ y1) | hi) - lo) & (x1 | y1) & hi)
		n2 += bits.OnesCount64(^(((x2 ^ y2) | hi) - lo) & (x2 | y2) & hi)
		n3 += bits.OnesCount64(^(((x3 ^ y3) | hi) - lo) & (x3 | y3) & hi)
	}
	for ; i < len(a); i++ {
		x, y := a[i], b[i]
		n0 += bits.OnesCount64(^(((x ^ y) | hi) - lo) & (x | y) & hi)
	}
	return n0 + n1 + n2 + n3
}

// count4Generic counts one wide chunk a against four narrow batmaps of
// its length at once, loading each word of a once.
func count4Generic(a, b0, b1, b2, b3 []uint64, hi, lo uint64) (n0, n1, n2, n3 int) {
	b0, b1, b2, b3 = b0[:len(a)], b1[:len(a)], b2[:len(a)], b3[:len(a)]
	for i, x := range a {
		y0, y1, y2, y3 := b0[i], b1[i], b2[i], b3[i]
		n0 += bits.OnesCount64(^(((x ^ y0) | hi) - lo) & (x | y0) & hi)
		n1 += bits.OnesCount64(^(((x ^ y1) | hi) - lo) & (x | y1) & hi)
		n2 += bits.OnesCount64(^(((x ^ y2) | hi) - lo) & (x | y2) & hi)
		n3 += bits.OnesCount64(^(((x ^ y3) | hi) - lo) & (x | y3) & hi)
	}
	return
}

// Count returns |S_i ∩ S_j| for the sets with ids i and j, exactly: the
// batmap comparison plus the elements that failed in either.
func (b *Batmaps) Count(i, j int) int {
	p, q := b.Position(i), b.Position(j)
	if i == j {
		return int(b.Sizes[p])
	}
	return b.countPos(p, q)
}

// countPos is Count by positions.
func (b *Batmaps) countPos(p, q int) int {
	bp, bq := b.batmap64(p), b.batmap64(q)
	if len(bp) < len(bq) {
		bp, bq = bq, bp
	}
	n := countWrap(bp, bq, kernelFor(b.Layout.EntryBits))
	if b.FailOffsets[p] != b.FailOffsets[p+1] || b.FailOffsets[q] != b.FailOffsets[q+1] {
		n += b.correction(p, q)
	}
	return n
}

// Correction returns what comparing the batmaps at positions p and q
// (CountWords) misses of |S_p ∩ S_q|: the failed elements of each that the
// other's batmap holds, and those failed in both. It is 0 unless p or q
// has failed elements (FailedAt), and at most their number. GPU kernels
// compare batmaps and leave this to the host.
func (b *Batmaps) Correction(p, q int) int {
	if b.FailOffsets[p] == b.FailOffsets[p+1] && b.FailOffsets[q] == b.FailOffsets[q+1] {
		return 0
	}
	return b.correction(p, q)
}

// correction returns what the batmap comparison of positions p and q
// misses: the failed elements of each that the other's batmap holds, and
// those failed in both.
func (b *Batmaps) correction(p, q int) int {
	fp, fq := b.FailedAt(p), b.FailedAt(q)
	n := 0
	for _, x := range fp {
		if b.holds(q, x) {
			n++
		}
	}
	for _, x := range fq {
		if b.holds(p, x) {
			n++
		}
	}
	// Failed in both: the failed lists are strictly increasing.
	return n + intersect.Count(fp, fq)
}

// holds reports whether batmap k stores x. x is stored in two of its three
// positions, so looking at two of them suffices; an entry equal to x's
// code at x's position can only be x.
func (b *Batmaps) holds(k int, x uint32) bool {
	if uint64(x) >= b.Layout.Universe {
		return false
	}
	l := b.Layout
	w := b.Batmap(k)
	r := uint32(len(w) * 32 / l.EntryBits / 3)
	codeMask := uint32(1)<<(l.EntryBits-1) - 1
	for t := range 2 {
		p := l.perms.pi(t, x)
		i := l.index(t, p%r)
		var e uint32
		switch l.EntryBits {
		case 8:
			e = w[i>>2] >> (8 * (i & 3))
		case 16:
			e = w[i>>1] >> (16 * (i & 1))
		default:
			e = w[i]
		}
		if e&codeMask == l.code(p) {
			return true
		}
	}
	return false
}

// Contains reports whether x is an element of set id.
func (b *Batmaps) Contains(id int, x uint32) bool {
	k := b.Position(id)
	if b.holds(k, x) {
		return true
	}
	f := b.FailedAt(k)
	lo, hi := 0, len(f)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(f) && f[lo] == x
}

// kernel compares batmaps of one entry width: one wide slice against one
// narrow slice, or against four at once, reading len(a) words of each.
type kernel struct {
	one  func(a, b []uint64) int
	four func(a, b0, b1, b2, b3 []uint64) (n0, n1, n2, n3 int)
}

// kernels holds the kernels for 8-, 16- and 32-bit entries;
// count_amd64.go replaces them when the CPU has AVX-512.
var kernels = [3]kernel{genericKernel(8), genericKernel(16), genericKernel(32)}

// kernelName names the kernels in use, for Explain.
var kernelName = "go-swar64"

func genericKernel(entryBits int) kernel {
	hi, lo := masks(entryBits)
	return kernel{
		one: func(a, b []uint64) int { return countGeneric(a, b, hi, lo) },
		four: func(a, b0, b1, b2, b3 []uint64) (int, int, int, int) {
			return count4Generic(a, b0, b1, b2, b3, hi, lo)
		},
	}
}

func kernelFor(entryBits int) *kernel {
	switch entryBits {
	case 8:
		return &kernels[0]
	case 16:
		return &kernels[1]
	}
	return &kernels[2]
}

// Kernel names the CPU kernel that compares batmaps: "go-swar64" (portable
// Go, 64 bits a step) or "avx512".
func Kernel() string { return kernelName }
