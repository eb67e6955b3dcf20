package batmap

import (
	"math/bits"

	"github.com/xsect/xsect/internal/par"
)

// perms holds the three permutations π_1, π_2, π_3 of the universe [0, m)
// that every batmap of a collection shares (section III-A). Each is a
// bijection of [0, 2^k), k = ⌈log2 m⌉, made of multiply-add and xor-shift
// rounds, restricted to [0, m) by cycle walking: values at or above m are
// mapped again until they fall below m, which keeps it a permutation and
// costs under two rounds on average.
type perms struct {
	m     uint64
	mask  uint64
	shift uint
	mul   [3][3]uint64 // odd multipliers
	add   [3][3]uint64
	// table[t][x] caches π_t(x) when the universe is small enough.
	table [3][]uint32
}

func newPerms(m uint64, seed uint64) *perms {
	if m == 0 {
		m = 1
	}
	k := uint(bits.Len64(m - 1))
	p := &perms{m: m, mask: 1<<k - 1, shift: max((k+1)/2, 1)}
	s := seed ^ 0x6a09e667f3bcc909
	for t := range 3 {
		for r := range 3 {
			p.mul[t][r] = splitmix(&s) | 1
			p.add[t][r] = splitmix(&s)
		}
	}
	return p
}

// splitmix is SplitMix64, for deriving the permutations' keys from a seed.
func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// round is one bijection of [0, 2^k): each step (multiplying by an odd
// number, adding, xoring with a right shift of itself) is invertible modulo
// 2^k. The xor-shifts make the low bits, which choose hash positions,
// depend on the high bits.
func (p *perms) round(t int, x uint64) uint64 {
	for r := range 3 {
		x = (x*p.mul[t][r] + p.add[t][r]) & p.mask
		x ^= x >> p.shift
	}
	return x
}

// pi returns π_t(x) for x < m.
func (p *perms) pi(t int, x uint32) uint32 {
	if tab := p.table[t]; tab != nil {
		return tab[x]
	}
	return p.compute(t, uint64(x))
}

func (p *perms) compute(t int, x uint64) uint32 {
	x = p.round(t, x)
	for x >= p.m {
		x = p.round(t, x)
	}
	return uint32(x)
}

// tabulate caches the three permutations, computing them on threads
// goroutines.
func (p *perms) tabulate(threads int) {
	m := int(p.m)
	for t := range 3 {
		p.table[t] = make([]uint32, m)
	}
	const grain = 1 << 14
	par.Each((m+grain-1)/grain, threads, func(c int) {
		lo, hi := c*grain, min((c+1)*grain, m)
		for t := range 3 {
			tab := p.table[t]
			for x := lo; x < hi; x++ {
				tab[x] = p.compute(t, uint64(x))
			}
		}
	})
}
