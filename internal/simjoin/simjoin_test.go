package simjoin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

var algorithms = []string{"allpairs", "ppjoin", "groupjoin", "pairjoin"}

func mustThreshold(t testing.TB, m Measure, s string) Threshold {
	t.Helper()
	th, err := ParseThreshold(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// check runs every algorithm on r × s (s nil: a self-join) with and
// without Distinct, on one and three threads, and compares Collect and
// Count with the reference.
func check(t *testing.T, name string, r, s *sets.Collection, th Threshold) {
	t.Helper()
	for _, distinct := range []bool{false, true} {
		want := reference(r, s, th, distinct)
		for _, alg := range algorithms {
			for _, threads := range []int{1, 3} {
				opt := Options{Threshold: th, Technique: alg, Device: "cpu", Threads: threads, Distinct: distinct}
				if threads == 3 {
					opt.stampUniverse = 1 // long remainders by the kernels
				}
				tag := fmt.Sprintf("%s %s %s distinct=%v threads=%d", name, th.Measure, th, distinct, threads)
				pl, err := NewPlan(r, s, opt)
				if err != nil {
					t.Fatalf("%s: NewPlan: %v", tag, err)
				}
				got, err := pl.Collect(context.Background())
				if err != nil {
					t.Fatalf("%s: Collect: %v", tag, err)
				}
				simjointest.ComparePairs(t, tag+" "+alg, got, want)
				pl, err = NewPlan(r, s, opt)
				if err != nil {
					t.Fatal(err)
				}
				n, err := pl.Count(context.Background())
				if err != nil || n != int64(len(want)) {
					t.Fatalf("%s %s: Count = %d, %v; want %d", tag, alg, n, err, len(want))
				}
			}
		}
	}
}

var randomThresholds = map[Measure][]string{
	Jaccard: {"0.5", "0.7", "0.8", "0.9", "1", "1/3", "0.123456789"},
	Cosine:  {"0.5", "0.75", "0.9", "1", "2/3"},
	Dice:    {"0.5", "0.8", "0.95", "1"},
	Overlap: {"1", "2", "3", "7"},
}

func TestRandomSelfJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		c := simjointest.Random(rng, 150+rng.IntN(150), 3+round*4, 30+rng.IntN(200))
		for m, ths := range randomThresholds {
			for _, s := range ths {
				check(t, fmt.Sprintf("round %d", round), c, nil, mustThreshold(t, m, s))
			}
		}
	}
}

// TestLargerRandom: enough sets that preparation spreads over threads.
func TestLargerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := simjointest.Random(rng, 6000, 6, 400)
	for _, th := range []Threshold{mustThreshold(t, Jaccard, "0.6"), mustThreshold(t, Cosine, "0.8"), mustThreshold(t, Overlap, "2")} {
		check(t, "larger", c, nil, th)
	}
}

func TestRandomCrossJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 5 {
		u := 30 + rng.IntN(200)
		r := simjointest.Random(rng, 100+rng.IntN(150), 3+round*4, u)
		s := simjointest.Random(rng, 100+rng.IntN(150), 3+round*3, u+rng.IntN(20))
		for m, ths := range randomThresholds {
			for _, th := range ths {
				check(t, fmt.Sprintf("round %d", round), r, s, mustThreshold(t, m, th))
			}
		}
	}
}

// TestAtThreshold joins pairs of sets placed exactly at the threshold and
// one common element below it, for many sizes: every pair at the threshold
// must be found, and none below.
func TestAtThreshold(t *testing.T) {
	cases := []struct {
		m  Measure
		th string
	}{
		{Jaccard, "0.9"}, {Jaccard, "0.8"}, {Jaccard, "0.5"}, {Jaccard, "0.7"},
		{Cosine, "0.5"}, {Cosine, "0.8"}, {Cosine, "0.9"},
		{Dice, "0.8"}, {Dice, "0.9"}, {Dice, "0.5"},
		{Overlap, "1"}, {Overlap, "3"}, {Overlap, "10"},
	}
	for _, tc := range cases {
		th := mustThreshold(t, tc.m, tc.th)
		r, s := sets.New(), sets.New()
		next := uint32(0)
		fresh := func(n int) []uint32 {
			out := make([]uint32, n)
			for i := range out {
				out[i] = next
				next++
			}
			return out
		}
		found := 0
		for a := 1; a <= 32; a++ {
			for b := a; b <= a+20; b++ {
				c := int(th.MinOverlap(uint32(a), uint32(b)))
				if c > a {
					continue
				}
				// The reference agrees that c is the least overlap.
				if !similarRat(th, c, a, b) || similarRat(th, c-1, a, b) {
					t.Fatalf("%s %s: MinOverlap(%d, %d) = %d is not the least overlap", tc.m, tc.th, a, b, c)
				}
				found++
				for _, k := range []int{c, c - 1} {
					if k < 0 {
						continue
					}
					common := fresh(k)
					x := append(slices.Clone(common), fresh(a-k)...)
					y := append(slices.Clone(common), fresh(b-k)...)
					r.AddUnsorted(x)
					s.AddUnsorted(y)
				}
			}
		}
		if found == 0 {
			t.Fatalf("%s %s: no size pair reaches the threshold", tc.m, tc.th)
		}
		// Self-join of everything, and R × S.
		all := sets.New()
		for i := 0; i < r.Len(); i++ {
			all.Add(r.Set(i))
			all.Add(s.Set(i))
		}
		check(t, "at threshold", all, nil, th)
		check(t, "at threshold R x S", r, s, th)
	}
}

// TestMannLosses are the pairs that Mann et al.'s floating-point bounds
// lose: two 19-element sets sharing 18 at Jaccard 0.9, sizes 31 and 32
// sharing 28 at 0.8.
func TestMannLosses(t *testing.T) {
	for _, tc := range []struct {
		th         string
		a, b, c    int
		similarity float64
	}{
		{"0.9", 19, 19, 18, 0.9},
		{"0.8", 31, 32, 28, 0.8},
	} {
		x := make([]uint32, 0, tc.a)
		y := make([]uint32, 0, tc.b)
		for i := 0; i < tc.c; i++ {
			x = append(x, uint32(i))
			y = append(y, uint32(i))
		}
		for i := 0; len(x) < tc.a; i++ {
			x = append(x, uint32(1000+i))
		}
		for i := 0; len(y) < tc.b; i++ {
			y = append(y, uint32(2000+i))
		}
		c := sets.FromSets(x, y)
		for _, alg := range algorithms {
			got, err := collect(c, nil, Options{Threshold: mustThreshold(t, Jaccard, tc.th), Technique: alg})
			if err != nil {
				t.Fatal(err)
			}
			want := []Pair{{0, 1, uint32(tc.c), tc.similarity}}
			if !slices.Equal(got, want) {
				t.Errorf("%s at %s: %v, want %v", alg, tc.th, got, want)
			}
		}
	}
}

func collect(r, s *sets.Collection, opt Options) ([]Pair, error) {
	pl, err := NewPlan(r, s, opt)
	if err != nil {
		return nil, err
	}
	return pl.Collect(context.Background())
}

// TestAdversarial: empty sets and collections, single elements, identical
// sets, the extreme element values.
func TestAdversarial(t *testing.T) {
	big := uint32(math.MaxUint32)
	inputs := map[string][][]uint32{
		"no sets":        {},
		"one set":        {{1, 2, 3}},
		"only empty":     {{}, {}, {}},
		"empty and not":  {{}, {5}, {}, {5}, {}},
		"singletons":     {{0}, {0}, {1}, {big}, {big}, {0, big}},
		"identical":      {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}},
		"extremes":       {{0, big}, {0, big}, {0, 1, big}, {big - 1, big}, {0}, {big}},
		"nested":         {{1}, {1, 2}, {1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6}},
		"one large":      {seq(0, 500), seq(0, 499), seq(1, 500), seq(250, 750), {7}},
		"long and equal": {seq(0, 300), seq(0, 300), seq(100, 400)},
	}
	for name, in := range inputs {
		c := sets.FromSets(in...)
		for m, ths := range randomThresholds {
			for _, s := range ths {
				th := mustThreshold(t, m, s)
				check(t, name, c, nil, th)
				check(t, name+" R x S", c, sets.FromSets(in[len(in)/2:]...), th)
			}
		}
	}
}

func seq(lo, hi uint32) []uint32 {
	var s []uint32
	for v := lo; v < hi; v++ {
		s = append(s, v)
	}
	return s
}
