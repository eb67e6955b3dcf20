package synth

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/xsect/xsect/internal/radix"
)

// gen is one random stream: a PCG and this package's samplers on it.
type gen struct {
	src      rand.PCG
	spare    float64 // the polar method makes normals in pairs
	hasSpare bool
}

// newRNG returns stream number stream of the generator seeded with seed:
// stream 0 draws the set sizes, stream i+1 the elements of set i.
func newRNG(seed, stream uint64) *gen {
	g := &gen{}
	g.src.Seed(mix64(seed), mix64(stream+0x6a09e667f3bcc909))
	return g
}

// mix64 is SplitMix64's finaliser, a bijection that scrambles its input.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method.
func (g *gen) below(n uint64) uint64 {
	hi, lo := bits.Mul64(g.src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(g.src.Uint64(), n)
		}
	}
	return hi
}

// float returns a uniform float64 in [0, 1), a multiple of 2^-53.
func (g *gen) float() float64 {
	return float64(g.src.Uint64()>>11) * 0x1p-53
}

// normal returns a standard normal deviate (Marsaglia's polar method).
func (g *gen) normal() float64 {
	if g.hasSpare {
		g.hasSpare = false
		return g.spare
	}
	for {
		u := 2*g.float() - 1
		v := 2*g.float() - 1
		s := float64(u*u) + float64(v*v)
		if s >= 1 || s == 0 {
			continue
		}
		m := math.Sqrt(float64(-2*detLog(s)) / s) // Sqrt is correctly rounded everywhere
		g.spare, g.hasSpare = float64(v*m), true
		return float64(u * m)
	}
}

// zipfSampler draws ranks in [1, n] with P(r) proportional to r^-s, s > 0.
// The head, ranks 1 to 2^headBits (most of the draws), comes from an alias
// table (Walker, Vose: one random word, one lookup); the tail from
// rejection-inversion (Hörmann and Derflinger, "Rejection-inversion to
// generate variates from monotone discrete distributions", 1996), whose
// logarithm and exponential per draw dominate the cost. The two parts are
// mixed by their masses under the rejection envelope, and a rejected tail
// draw starts over, so that the result is exact.
type zipfSampler struct {
	n, s     float64
	headBits uint
	head     float64  // 2^headBits
	table    []uint64 // per head rank - 1: acceptance threshold << 16 | alias
	pHead    float64  // probability of drawing from the table
	hT, hN   float64  // the tail's envelope: H(T + 0.5), H(n + 0.5)
	sq       float64  // acceptance shortcut
}

const zipfHeadBits = 16

func newZipf(n uint64, s float64) zipfSampler {
	z := zipfSampler{n: float64(n), s: s}
	z.headBits = uint(min(zipfHeadBits, bits.Len64(n)-1))
	head := 1 << z.headBits
	z.head = float64(head)
	z.hT = z.hIntegral(float64(head) + 0.5)
	z.hN = z.hIntegral(z.n + 0.5)
	z.sq = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))

	// Vose's alias method over the head's weights, in a fixed order.
	w := make([]float64, head)
	sum := 0.0
	for r := range w {
		w[r] = z.h(float64(r + 1))
		sum += w[r]
	}
	z.pHead = sum / (sum + (z.hN - z.hT))
	var small, large []int
	for r := range w {
		w[r] = float64(w[r]*float64(head)) / sum
		if w[r] < 1 {
			small = append(small, r)
		} else {
			large = append(large, r)
		}
	}
	z.table = make([]uint64, head)
	const one = 1 << 48
	for len(small) > 0 && len(large) > 0 {
		l, g := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		z.table[l] = uint64(float64(w[l]*one))<<16 | uint64(g)
		w[g] = (w[g] + w[l]) - 1
		if w[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	// What is left has probability 1 up to rounding: itself always.
	for _, r := range append(small, large...) {
		z.table[r] = uint64(one-1)<<16 | uint64(r)
	}
	return z
}

// h is the unnormalised density x^-s.
func (z *zipfSampler) h(x float64) float64 { return detExp(float64(-z.s * detLog(x))) }

// hIntegral is H(x) = (x^(1-s) - 1) / (1-s), an antiderivative of h (log x
// at s = 1).
func (z *zipfSampler) hIntegral(x float64) float64 {
	lx := detLog(x)
	return float64(helper2(float64((1-z.s)*lx)) * lx)
}

// hIntegralInverse is the inverse of H.
func (z *zipfSampler) hIntegralInverse(x float64) float64 {
	t := float64(x * (1 - z.s))
	if t < -1 { // rounding; H's range keeps t >= -1
		t = -1
	}
	return detExp(float64(helper1(t) * x))
}

// helper1 is log1p(x)/x, continuous at 0.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return detLog1p(x) / x
	}
	return 1 - float64(x*(0.5-float64(x*(1.0/3-float64(0.25*x)))))
}

// helper2 is expm1(x)/x, continuous at 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return detExpm1(x) / x
	}
	return 1 + float64(float64(x*0.5)*(1+float64(float64(x/3)*(1+float64(0.25*x)))))
}

func (z *zipfSampler) sample(g *gen) uint64 {
	for {
		if z.pHead == 1 || g.float() < z.pHead {
			x := g.src.Uint64()
			r := x >> (64 - z.headBits) // 0 when headBits is 0
			e := z.table[r]
			if x&(1<<48-1) >= e>>16 {
				r = e & 0xffff
			}
			return r + 1
		}
		u := z.hT + float64(g.float()*(z.hN-z.hT))
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k <= z.head {
			k = z.head + 1 // rounding at the boundary
		}
		if k > z.n {
			k = z.n
		}
		if k-x <= z.sq || u >= z.hIntegral(k+0.5)-z.h(k) {
			return uint64(k)
		}
	}
}

// perm is a pseudo-random permutation of [0, n): a bijection of the
// smallest power-of-two range holding n (odd multiplications and xor-shifts
// modulo 2^b), walked until it lands in [0, n) ("cycle walking": a
// bijection of the subrange). Zipf ranks go through it to become elements.
type perm struct {
	n, mask uint64
	shift   uint
	mul     [3]uint64
	add     uint64
}

func newPerm(n, seed uint64) perm {
	b := bits.Len64(n - 1)
	p := perm{n: n, mask: 1<<b - 1, shift: uint(b+1) / 2}
	for i := range p.mul {
		p.mul[i] = mix64(seed^uint64(i+1)*0x2545f4914f6cdd1d) | 1
	}
	p.add = mix64(seed ^ 0x5851f42d4c957f2d)
	return p
}

func (p *perm) apply(x uint64) uint64 {
	for {
		x = (x*p.mul[0] + p.add) & p.mask
		x ^= x >> p.shift
		x = (x * p.mul[1]) & p.mask
		x ^= x >> p.shift
		x = (x * p.mul[2]) & p.mask
		x ^= x >> p.shift
		if x < p.n {
			return x
		}
	}
}

// drawer fills sets for one Config.
type drawer struct {
	dist      Dist
	u         uint64 // universe
	useBitmap bool   // else a hash set tells drawn elements apart
	zipf      zipfSampler
	perm      perm
	mu, sigma float64 // Normal, in elements
	uf        float64 // the universe as a float64
}

// maxDraws bounds the draws for a set of n under Normal and Zipf; uniform
// sets never need it (at most 2 draws per element on average).
func maxDraws(n int) int { return 64*n + 1024 }

func newDrawer(cfg Config) *drawer {
	d := &drawer{dist: cfg.Dist, u: cfg.Universe, uf: float64(cfg.Universe)}
	_, hi := cfg.sizeRange()
	d.useBitmap = d.u <= 1<<26 || d.u/8 <= 32*uint64(hi) ||
		cfg.Dist == Uniform && uint64(hi) > d.u/2 // the complement needs one
	switch cfg.Dist {
	case Normal:
		d.mu = d.uf / 2
		d.sigma = float64(cfg.Sigma * d.uf)
	case Zipf:
		d.zipf = newZipf(d.u, cfg.ZipfS)
		d.perm = newPerm(d.u, mix64(cfg.Seed^0x7a69_7066)) // "zipf"
	}
	return d
}

func (d *drawer) bitmapBytes() uint64 {
	if !d.useBitmap {
		return 0
	}
	return (d.u + 63) / 64 * 8
}

// scratch is one worker's memory, reused from set to set.
type scratch struct {
	bitmap []uint64 // over the universe, all zero between sets
	table  []uint64 // hash set of key+1, 0 for empty
	tmp    []uint32 // radix sort scratch
}

func (d *drawer) newScratch(maxSize int) *scratch {
	s := &scratch{tmp: make([]uint32, maxSize)}
	if d.useBitmap {
		s.bitmap = make([]uint64, (d.u+63)/64)
	}
	return s
}

// draw returns one key: an element (Uniform, Normal) or a rank - 1 (Zipf).
// ok is false for a Normal draw outside the universe.
func (d *drawer) draw(g *gen) (key uint64, ok bool) {
	switch d.dist {
	case Uniform:
		return g.below(d.u), true
	case Normal:
		x := d.mu + float64(d.sigma*g.normal())
		if x >= 0 && x < d.uf {
			return uint64(x), true // x >= 0: truncation is floor
		}
		return 0, false
	default:
		return d.zipf.sample(g) - 1, true
	}
}

// fill writes a set of len(dst) distinct elements into dst, sorted.
func (d *drawer) fill(dst []uint32, g *gen, s *scratch) error {
	n := len(dst)
	switch {
	case n == 0:
		return nil
	case uint64(n) == d.u:
		for i := range dst {
			dst[i] = uint32(i)
		}
		return nil
	case d.dist == Uniform && uint64(n) > d.u/2:
		d.fillComplement(dst, g, s)
		return nil
	}
	sorted, err := d.drawDistinct(dst, g, s)
	if err != nil || sorted {
		return err
	}
	if d.dist == Zipf {
		for i, k := range dst {
			dst[i] = uint32(d.perm.apply(uint64(k)))
		}
	}
	radix.Sort(dst, s.tmp)
	return nil
}

// drawDistinct fills dst with distinct keys in the order they are first
// drawn. If the keys are elements and the bitmap is small enough to scan,
// it writes them sorted instead and says so.
func (d *drawer) drawDistinct(dst []uint32, g *gen, s *scratch) (sorted bool, err error) {
	n := len(dst)
	limit := math.MaxInt
	if d.dist != Uniform {
		limit = maxDraws(n)
	}
	got, draws := 0, 0
	if d.useBitmap {
		bm := s.bitmap
		for got < n && draws < limit {
			draws++
			k, ok := d.draw(g)
			if !ok {
				continue
			}
			w, b := k>>6, uint64(1)<<(k&63)
			if bm[w]&b != 0 {
				continue
			}
			bm[w] |= b
			dst[got] = uint32(k)
			got++
		}
		// Scanning the bitmap costs a word of it per 64 elements of the
		// universe; sorting the set, some nanoseconds per element.
		if got == n && d.dist != Zipf && d.u/64 <= 8*uint64(n) {
			j := 0
			for w, x := range bm {
				if x == 0 {
					continue
				}
				bm[w] = 0
				for x != 0 {
					dst[j] = uint32(w*64 + bits.TrailingZeros64(x))
					x &= x - 1
					j++
				}
			}
			return true, nil
		}
		for _, k := range dst[:got] {
			bm[k>>6] = 0
		}
	} else {
		size := 1 << bits.Len(uint(2*n-1)) // load factor at most 1/2
		if cap(s.table) < size {
			s.table = make([]uint64, size)
		}
		t := s.table[:size]
		clear(t)
		shift := 64 - uint(bits.Len(uint(size-1)))
		for got < n && draws < limit {
			draws++
			k, ok := d.draw(g)
			if !ok {
				continue
			}
			h := (k * 0x9e3779b97f4a7c15) >> shift
			for t[h] != 0 && t[h] != k+1 {
				h = (h + 1) & uint64(size-1)
			}
			if t[h] != 0 {
				continue
			}
			t[h] = k + 1
			dst[got] = uint32(k)
			got++
		}
	}
	if got < n {
		what := fmt.Sprintf("zipf with exponent %.3g over %d elements", d.zipf.s, d.u)
		hint := "lower AvgSize or ZipfS"
		if d.dist == Normal {
			what = fmt.Sprintf("normal with sigma %.3g elements over %d", d.sigma, d.u)
			hint = "lower AvgSize or raise Sigma (or lower it, if most draws fall outside the universe)"
		}
		return false, fmt.Errorf("%s: %d draws gave only %d distinct elements of the %d wanted; the distribution does not reach enough elements: %s",
			what, draws, got, n, hint)
	}
	return false, nil
}

// fillComplement makes a dense uniform set: it draws the universe - n
// elements left out, then writes the others in order.
func (d *drawer) fillComplement(dst []uint32, g *gen, s *scratch) {
	bm := s.bitmap
	for out := d.u - uint64(len(dst)); out > 0; {
		k := g.below(d.u)
		w, b := k>>6, uint64(1)<<(k&63)
		if bm[w]&b == 0 {
			bm[w] |= b
			out--
		}
	}
	j := 0
	for w := range bm {
		in := ^bm[w]
		bm[w] = 0
		if rest := d.u - uint64(w)*64; rest < 64 {
			in &= 1<<rest - 1 // past the universe's end
		}
		for in != 0 {
			dst[j] = uint32(w*64 + bits.TrailingZeros64(in))
			in &= in - 1
			j++
		}
	}
}
