package twolevel

import "github.com/xsect/xsect/internal/sorted"

// The portable method: a merge over the headers and, for each pair of groups
// with the same upper half, a branch-free merge of the lower halves (or
// galloping, when one group is much smaller). It is the reference the SIMD
// method is checked against and the fallback on every CPU.

// pairs walks the pairs of groups of a and b that share their upper half.
type pairs struct {
	a, b       *Set
	i, j       int // next header of a and of b
	aoff, boff int // offset in lows of group i of a and of group j of b
}

// next returns the upper half (in place, low 16 bits zero) and the lower
// halves of the next pair of groups with the same upper half; ok is false
// when there is none.
func (p *pairs) next() (hi uint32, la, lb []uint16, ok bool) {
	ah, bh := p.a.hdr, p.b.hdr
	i, j, aoff, boff := p.i, p.j, p.aoff, p.boff
	for i < len(ah) && j < len(bh) {
		x, y := ah[i], bh[j]
		switch {
		case x>>16 == y>>16:
			na, nb := int(x&0xffff)+1, int(y&0xffff)+1
			la, lb = p.a.lows[aoff:aoff+na], p.b.lows[boff:boff+nb]
			p.i, p.j, p.aoff, p.boff = i+1, j+1, aoff+na, boff+nb
			return x &^ 0xffff, la, lb, true
		case x < y: // the upper halves differ, so x < y compares them
			aoff += int(x&0xffff) + 1
			i++
		default:
			boff += int(y&0xffff) + 1
			j++
		}
	}
	p.i, p.j, p.aoff, p.boff = i, j, aoff, boff
	return 0, nil, nil, false
}

func countGeneric(a, b *Set) int {
	p := pairs{a: a, b: b}
	n := 0
	for {
		_, la, lb, ok := p.next()
		if !ok {
			return n
		}
		n += count16(la, lb)
	}
}

func intersectGeneric(dst []uint32, a, b *Set) []uint32 {
	p := pairs{a: a, b: b}
	var tmp []uint16
	for {
		hi, la, lb, ok := p.next()
		if !ok {
			return dst
		}
		tmp = intersect16(tmp[:0], la, lb)
		for _, lo := range tmp {
			dst = append(dst, hi|uint32(lo))
		}
	}
}

func intersectSetGeneric(a, b *Set) *Set {
	p := pairs{a: a, b: b}
	out := &Set{}
	for {
		hi, la, lb, ok := p.next()
		if !ok {
			return out
		}
		n := len(out.lows)
		out.lows = intersect16(out.lows, la, lb)
		if k := len(out.lows) - n; k > 0 {
			out.hdr = append(out.hdr, hi|uint32(k-1))
		}
	}
}

// gallopRatio16 is the size ratio of two groups beyond which galloping from
// the smaller one beats merging.
const gallopRatio16 = 32

// count16 returns |a ∩ b| for strictly increasing a and b.
func count16(a, b []uint16) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a)*gallopRatio16 < len(b) {
		return sorted.CountGallop(a, b)
	}
	return sorted.CountBranchless(a, b)
}

// intersect16 appends a ∩ b to dst for strictly increasing a and b.
func intersect16(dst, a, b []uint16) []uint16 {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a)*gallopRatio16 < len(b) {
		return sorted.IntersectGallop(dst, a, b)
	}
	return sorted.IntersectBranchless(dst, a, b)
}
