package simjoin

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseThreshold(t *testing.T) {
	cases := []struct {
		m        Measure
		in       string
		num, den uint64
		err      string
	}{
		{Jaccard, "0.9", 9, 10, ""},
		{Jaccard, ".85", 17, 20, ""},
		{Jaccard, "1", 1, 1, ""},
		{Jaccard, "1.000", 1, 1, ""},
		{Jaccard, "9e-1", 9, 10, ""},
		{Jaccard, "2/3", 2, 3, ""},
		{Jaccard, " 0.5 ", 1, 2, ""},
		{Cosine, "0.123456789", 123456789, 1000000000, ""},
		{Dice, "0.8", 4, 5, ""},
		{Overlap, "3", 3, 1, ""},
		{Overlap, "6/2", 3, 1, ""},
		{Jaccard, "0", 0, 0, "not positive"},
		{Jaccard, "-0.5", 0, 0, "not positive"},
		{Jaccard, "1.5", 0, 0, "above 1"},
		{Jaccard, "1.0000000001", 0, 0, "above 1"},
		{Jaccard, "0.1234567891", 0, 0, "too many digits"},
		{Jaccard, "x", 0, 0, "not a decimal"},
		{Jaccard, "", 0, 0, "not a decimal"},
		{Jaccard, "0x1p-1", 0, 0, "not a decimal"},
		{Jaccard, "NaN", 0, 0, "not a decimal"},
		{Jaccard, "1/0", 0, 0, "not a decimal"},
		{Jaccard, "1/2/3", 0, 0, "not a decimal"},
		{Jaccard, "1e-1000000000", 0, 0, "exponent"},
		{Overlap, "0.5", 0, 0, "not an integer"},
		{Overlap, "0", 0, 0, "not positive"},
		{Overlap, "4294967296", 0, 0, "not an integer"},
		{Overlap, "4294967295", 4294967295, 1, ""},
	}
	for _, tc := range cases {
		th, err := ParseThreshold(tc.m, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: %v, %v; want error with %q", tc.m, tc.in, th, err, tc.err)
			}
			continue
		}
		if err != nil || th.Num != tc.num || th.Den != tc.den || th.Measure != tc.m {
			t.Errorf("%s %q: %+v, %v; want %d/%d", tc.m, tc.in, th, err, tc.num, tc.den)
		}
	}
}

// FuzzParseThreshold: whatever ParseThreshold accepts is valid, equals
// the number that big.Rat reads, and reads back from its String.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"0.9", "1", "2/3", "9e-1", ".5", "7", "0.123456789", "1e9", "-1", "x"} {
		f.Add(uint8(0), s)
		f.Add(uint8(3), s)
	}
	f.Fuzz(func(t *testing.T, m uint8, s string) {
		measure := Measure(m % 4)
		th, err := ParseThreshold(measure, s)
		if err != nil {
			return
		}
		if err := th.Validate(); err != nil {
			t.Fatalf("%q: %+v does not validate: %v", s, th, err)
		}
		var r big.Rat
		if _, ok := r.SetString(strings.TrimSpace(s)); !ok {
			t.Fatalf("%q accepted, but big.Rat cannot read it", s)
		}
		if r.Cmp(new(big.Rat).SetFrac(new(big.Int).SetUint64(th.Num), new(big.Int).SetUint64(th.Den))) != 0 {
			t.Fatalf("%q read as %s", s, th)
		}
		back, err := ParseThreshold(measure, th.String())
		if err != nil || back != th {
			t.Fatalf("%q: String %q reads back as %+v, %v", s, th.String(), back, err)
		}
	})
}

// thresholdsForTest are the thresholds whose bounds are checked against
// the rational reference: round values, the ones Mann et al.'s floating
// point gets wrong, and random fractions.
func thresholdsForTest() []Threshold {
	var ts []Threshold
	for _, m := range []Measure{Jaccard, Cosine, Dice} {
		for _, s := range []string{"1", "0.95", "0.9", "0.8", "0.75", "0.7", "0.6", "0.5", "1/3", "0.1", "1/1000", "999999999/1000000000"} {
			th, _ := ParseThreshold(m, s)
			ts = append(ts, th)
		}
		rng := rand.New(rand.NewPCG(uint64(m), 7))
		for range 8 {
			den := 1 + rng.Uint64N(1000)
			ts = append(ts, Threshold{Measure: m, Num: 1 + rng.Uint64N(den), Den: den})
		}
	}
	for _, k := range []uint64{1, 2, 5, 17} {
		ts = append(ts, Threshold{Measure: Overlap, Num: k, Den: 1})
	}
	return ts
}

// TestBounds checks MinOverlap, MinSize, MaxSize and the prefixes against
// the rational reference for every pair of sizes up to 48.
func TestBounds(t *testing.T) {
	const maxN = 48
	for _, th := range thresholdsForTest() {
		for a := 1; a <= maxN; a++ {
			for b := 1; b <= maxN; b++ {
				want := min(a, b) + 1
				for c := 1; c <= min(a, b); c++ {
					if similarRat(th, c, a, b) {
						want = c
						break
					}
				}
				if got := th.MinOverlap(uint32(a), uint32(b)); int(got) != want {
					t.Fatalf("%s %s: MinOverlap(%d, %d) = %d, want %d", th.Measure, th, a, b, got, want)
				}
				for _, c := range []int{0, want - 1, want, want + 1, min(a, b)} {
					if c < 0 || c > min(a, b) {
						continue
					}
					if th.Reached(uint32(c), uint32(a), uint32(b)) != similarRat(th, c, a, b) {
						t.Fatalf("%s %s: Reached(%d, %d, %d) disagrees with the reference", th.Measure, th, c, a, b)
					}
				}
			}
			minSize := a + 1
			for b := 1; b <= a; b++ {
				if similarRat(th, b, a, b) {
					minSize = b
					break
				}
			}
			if got := th.MinSize(uint32(a)); int(got) != minSize {
				t.Fatalf("%s %s: MinSize(%d) = %d, want %d", th.Measure, th, a, got, minSize)
			}
			// MaxSize, where it is small enough to search.
			if got := th.MaxSize(uint32(a)); got < 4*maxN {
				maxSize := a - 1
				for b := a; b < 8*maxN; b++ {
					if similarRat(th, a, a, b) {
						maxSize = b
					}
				}
				if int(got) != maxSize {
					t.Fatalf("%s %s: MaxSize(%d) = %d, want %d", th.Measure, th, a, got, maxSize)
				}
			} else if th.Measure != Overlap && !similarRat(th, a, a, 4*maxN) {
				t.Fatalf("%s %s: MaxSize(%d) = %d, but size %d is not similar", th.Measure, th, a, got, 4*maxN)
			}
			// The prefixes: a - (least overlap with any partner) + 1.
			least := a + 1
			for b := minSize; b <= a; b++ {
				least = min(least, int(th.MinOverlap(uint32(a), uint32(b))))
			}
			probe := 0
			if least <= a {
				probe = a - least + 1
			}
			if got := th.ProbePrefix(uint32(a)); int(got) != probe {
				t.Fatalf("%s %s: ProbePrefix(%d) = %d, want %d", th.Measure, th, a, got, probe)
			}
			index := 0
			if c := int(th.MinOverlap(uint32(a), uint32(a))); c <= a {
				index = a - c + 1
			}
			if got := th.IndexPrefix(uint32(a)); int(got) != index {
				t.Fatalf("%s %s: IndexPrefix(%d) = %d, want %d", th.Measure, th, a, got, index)
			}
		}
	}
}

// TestBoundsLarge checks the bounds at sizes where products overflow 64
// bits, against the rational reference (exact at any size).
func TestBoundsLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, th := range thresholdsForTest() {
		for range 50 {
			a := uint32(1 + rng.Uint64N(1<<32-1))
			b := uint32(1 + rng.Uint64N(1<<32-1))
			c := th.MinOverlap(a, b)
			if c <= min(a, b) && (!similarRat(th, int(c), int(a), int(b)) || c > 1 && similarRat(th, int(c-1), int(a), int(b))) {
				t.Fatalf("%s %s: MinOverlap(%d, %d) = %d is not the least", th.Measure, th, a, b, c)
			}
			if c > min(a, b) && similarRat(th, int(min(a, b)), int(a), int(b)) {
				t.Fatalf("%s %s: MinOverlap(%d, %d) says none, but %d is", th.Measure, th, a, b, min(a, b))
			}
		}
	}
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		m       Measure
		c, a, b uint32
		want    float64
	}{
		{Jaccard, 18, 19, 19, 0.9},
		{Jaccard, 28, 31, 32, 0.8},
		{Cosine, 4, 4, 16, 0.5},
		{Dice, 4, 5, 5, 0.8},
		{Overlap, 7, 9, 12, 7},
	}
	for _, tc := range cases {
		if got := tc.m.Similarity(tc.c, tc.a, tc.b); got != tc.want {
			t.Errorf("%s Similarity(%d, %d, %d) = %v, want %v", tc.m, tc.c, tc.a, tc.b, got, tc.want)
		}
	}
}
