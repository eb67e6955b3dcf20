package simjoin

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strings"
)

// Measure is a set similarity function.
type Measure int

// The measures. For sets r and s with c = |r ∩ s|: Jaccard c / |r ∪ s|,
// Cosine c / sqrt(|r|·|s|), Dice 2c / (|r| + |s|), Overlap c.
const (
	Jaccard Measure = iota
	Cosine
	Dice
	Overlap
)

var measureNames = [...]string{"jaccard", "cosine", "dice", "overlap"}

// String returns the measure's name in lower case, as ParseMeasure reads it.
func (m Measure) String() string {
	if m < 0 || int(m) >= len(measureNames) {
		return fmt.Sprintf("Measure(%d)", int(m))
	}
	return measureNames[m]
}

// ParseMeasure returns the measure called s: jaccard, cosine, dice or
// overlap, in any case.
func ParseMeasure(s string) (Measure, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for m, n := range measureNames {
		if n == name {
			return Measure(m), nil
		}
	}
	return 0, fmt.Errorf("simjoin: unknown measure %q (jaccard, cosine, dice or overlap)", s)
}

// maxDen bounds a threshold's reduced denominator: with it and set sizes
// below 2^32, every comparison at the threshold fits in 128 bits.
const maxDen = 1 << 32

// Threshold is an exact similarity threshold Num/Den, in lowest terms: in
// (0, 1] for Jaccard, Cosine and Dice, a positive integer (Den 1) for
// Overlap. A pair is similar when its similarity is at least Num/Den,
// decided in integer arithmetic: a pair exactly at the threshold is
// similar.
type Threshold struct {
	Measure  Measure
	Num, Den uint64
}

// ParseThreshold reads s exactly for measure m: a decimal ("0.9" is
// 9/10, ".85", "1", "9e-1") or a fraction ("2/3"). Jaccard, Cosine and
// Dice take a value in (0, 1], Overlap a positive integer; the reduced
// denominator must be below 2^32 (nine decimal places are always
// enough).
func ParseThreshold(m Measure, s string) (Threshold, error) {
	if m < Jaccard || m > Overlap {
		return Threshold{}, fmt.Errorf("simjoin: unknown measure %d", int(m))
	}
	t := strings.TrimSpace(s)
	// big.Rat also reads hexadecimal and other forms; a threshold is
	// written in decimal.
	if t == "" || strings.Trim(t, "0123456789./eE+-") != "" || strings.Count(t, "/") > 1 {
		return Threshold{}, fmt.Errorf("simjoin: threshold %q is not a decimal number or a fraction", s)
	}
	if i := strings.IndexAny(t, "eE"); i >= 0 && len(t)-i > 6 {
		return Threshold{}, fmt.Errorf("simjoin: threshold %q has too large an exponent", s)
	}
	var r big.Rat
	if _, ok := r.SetString(t); !ok {
		return Threshold{}, fmt.Errorf("simjoin: threshold %q is not a decimal number or a fraction", s)
	}
	if r.Sign() <= 0 {
		return Threshold{}, fmt.Errorf("simjoin: threshold %q is not positive", s)
	}
	if m == Overlap {
		if !r.IsInt() || !r.Num().IsUint64() || r.Num().Uint64() >= maxDen {
			return Threshold{}, fmt.Errorf("simjoin: overlap threshold %q is not an integer from 1 to 2^32-1", s)
		}
		return Threshold{Measure: m, Num: r.Num().Uint64(), Den: 1}, nil
	}
	if r.Cmp(big.NewRat(1, 1)) > 0 {
		return Threshold{}, fmt.Errorf("simjoin: %s threshold %q is above 1", m, s)
	}
	if !r.Denom().IsUint64() || r.Denom().Uint64() >= maxDen {
		return Threshold{}, fmt.Errorf("simjoin: threshold %q has too many digits (its denominator must be below 2^32)", s)
	}
	return Threshold{Measure: m, Num: r.Num().Uint64(), Den: r.Denom().Uint64()}, nil
}

// Validate reports whether t is a threshold ParseThreshold could return.
func (t Threshold) Validate() error {
	switch {
	case t.Measure < Jaccard || t.Measure > Overlap:
		return fmt.Errorf("simjoin: unknown measure %d", int(t.Measure))
	case t.Num == 0 || t.Den == 0:
		return fmt.Errorf("simjoin: threshold %d/%d is not positive", t.Num, t.Den)
	case t.Measure == Overlap && (t.Den != 1 || t.Num >= maxDen):
		return fmt.Errorf("simjoin: overlap threshold %d/%d is not an integer from 1 to 2^32-1", t.Num, t.Den)
	case t.Measure != Overlap && (t.Num > t.Den || t.Den >= maxDen):
		return fmt.Errorf("simjoin: %s threshold %d/%d is not in (0, 1] with a denominator below 2^32", t.Measure, t.Num, t.Den)
	}
	return nil
}

// Float returns the threshold as a float64.
func (t Threshold) Float() float64 { return float64(t.Num) / float64(t.Den) }

// String returns the threshold as Num/Den, or Num when Den is 1.
func (t Threshold) String() string {
	if t.Den == 1 {
		return fmt.Sprint(t.Num)
	}
	return fmt.Sprintf("%d/%d", t.Num, t.Den)
}

// Reached reports exactly whether two sets of sizes a and b sharing c
// elements are similar: their similarity is at least the threshold. Empty
// sets are never similar.
func (t Threshold) Reached(c, a, b uint32) bool {
	if c == 0 || c > a || c > b {
		return false
	}
	n, d := t.Num, t.Den
	C, A, B := uint64(c), uint64(a), uint64(b)
	switch t.Measure {
	case Jaccard:
		// c / (a+b-c) >= n/d  <=>  c·d >= n·(a+b-c)
		return geq128(C, d, n, A+B-C)
	case Cosine:
		// c / sqrt(a·b) >= n/d  <=>  c²·d² >= n²·a·b
		return geq128(C*d, C*d, n*n, A*B)
	case Dice:
		// 2c / (a+b) >= n/d  <=>  2c·d >= n·(a+b)
		return geq128(2*C, d, n, A+B)
	}
	return C >= n
}

// geq128 reports whether x·y >= u·v, in 128-bit arithmetic.
func geq128(x, y, u, v uint64) bool {
	hi1, lo1 := bits.Mul64(x, y)
	hi2, lo2 := bits.Mul64(u, v)
	return hi1 > hi2 || hi1 == hi2 && lo1 >= lo2
}

// Similarity returns the similarity of two sets of sizes a and b sharing
// c elements, as the nearest float64 for Jaccard and Dice (and within an
// ulp or two for Cosine); for Overlap it is c.
func (m Measure) Similarity(c, a, b uint32) float64 {
	C, A, B := float64(c), float64(a), float64(b)
	switch m {
	case Jaccard:
		return C / float64(uint64(a)+uint64(b)-uint64(c))
	case Cosine:
		return C / math.Sqrt(A*B)
	case Dice:
		return 2 * C / (A + B)
	}
	return C
}

// MinOverlap returns the least overlap that makes sets of sizes a and b
// similar, or min(a, b)+1 when none does. It is exact: Reached(c, a, b)
// holds exactly for c in [MinOverlap(a, b), min(a, b)].
func (t Threshold) MinOverlap(a, b uint32) uint32 {
	m := min(a, b)
	if m == 0 {
		return 1
	}
	// A float guess, then exact steps: the guess is off by at most one
	// or two.
	x := t.Float()
	A, B := float64(a), float64(b)
	var g float64
	switch t.Measure {
	case Jaccard:
		g = x * (A + B) / (1 + x)
	case Cosine:
		g = x * math.Sqrt(A*B)
	case Dice:
		g = x * (A + B) / 2
	default:
		g = float64(t.Num)
	}
	c := uint32(min(max(math.Ceil(g), 1), float64(m)+1))
	for c > 1 && t.Reached(c-1, a, b) {
		c--
	}
	for c <= m && !t.Reached(c, a, b) {
		c++
	}
	return c
}

// MinSize returns the least size b <= a of a set that can be similar to a
// set of size a (when it is a subset), or a+1 when there is none.
func (t Threshold) MinSize(a uint32) uint32 {
	if a == 0 {
		return 1
	}
	x := t.Float()
	A := float64(a)
	var g float64
	switch t.Measure {
	case Jaccard:
		g = x * A
	case Cosine:
		g = x * x * A
	case Dice:
		g = x * A / (2 - x)
	default:
		g = float64(t.Num)
	}
	b := uint32(min(max(math.Ceil(g), 1), A+1))
	for b > 1 && t.Reached(b-1, a, b-1) {
		b--
	}
	for b <= a && !t.Reached(b, a, b) {
		b++
	}
	return b
}

// MaxSize returns the largest size b >= a of a set that can be similar to
// a set of size a (when it is a superset), at most 2^32-1; a-1 when there
// is none.
func (t Threshold) MaxSize(a uint32) uint32 {
	if a == 0 {
		return 0
	}
	if t.Measure == Overlap {
		if uint64(a) < t.Num {
			return a - 1
		}
		return math.MaxUint32
	}
	x := t.Float()
	A := float64(a)
	var g float64
	switch t.Measure {
	case Jaccard:
		g = A / x
	case Cosine:
		g = A / (x * x)
	case Dice:
		g = A * (2 - x) / x
	}
	b := uint64(min(max(math.Floor(g), A-1), math.MaxUint32))
	for b < math.MaxUint32 && t.Reached(a, a, uint32(b+1)) {
		b++
	}
	for b >= uint64(a) && !t.Reached(a, a, uint32(b)) {
		b--
	}
	return uint32(b)
}

// ProbePrefix returns how many of the first (rarest) elements of a set of
// size a must hold a common element with any set it is similar to, whatever
// the other's size: a - MinOverlap(a, MinSize(a)) + 1, which overlap filters
// call the probing prefix. 0 means that such a set is similar to none.
func (t Threshold) ProbePrefix(a uint32) uint32 {
	lo := t.MinSize(a)
	if lo > a {
		return 0
	}
	return a - t.MinOverlap(a, lo) + 1
}

// IndexPrefix is ProbePrefix for partners at least as large as the set:
// a - MinOverlap(a, a) + 1, what a self-join that probes sets in order of
// size indexes.
func (t Threshold) IndexPrefix(a uint32) uint32 {
	c := t.MinOverlap(a, a)
	if c > a {
		return 0
	}
	return a - c + 1
}
