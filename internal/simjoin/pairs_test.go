package simjoin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// TestPairJoinSizes: PairJoin with every split between records indexed by
// pairs and by elements (pairMax from 1, none by pairs, to beyond every
// size) finds the reference's pairs, self-join and R × S, with and without
// Distinct, on several threads.
func TestPairJoinSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for round := range 4 {
		u := 20 + rng.IntN(100)
		r := simjointest.Random(rng, 200+rng.IntN(200), 4+round*3, u)
		s := simjointest.Random(rng, 150+rng.IntN(100), 4+round*2, u)
		for m, ths := range randomThresholds {
			for _, ts := range ths {
				th := mustThreshold(t, m, ts)
				for _, distinct := range []bool{false, true} {
					for _, side := range [][2]*sets.Collection{{r, nil}, {r, s}} {
						rs, ss := side[0], side[1]
						want := reference(rs, ss, th, distinct)
						for _, pairMax := range []int{1, 2, 3, 5, 8, 1 << 20} {
							for _, threads := range []int{1, 3} {
								opt := Options{Threshold: th, Technique: "pairjoin", Threads: threads, Distinct: distinct, pairMax: pairMax}
								tag := fmt.Sprintf("round %d %s %s distinct=%v cross=%v pairMax=%d threads=%d", round, m, ts, distinct, ss != nil, pairMax, threads)
								got, err := collect(rs, ss, opt)
								if err != nil {
									t.Fatal(err)
								}
								simjointest.ComparePairs(t, tag, got, want)
								pl, err := NewPlan(rs, ss, opt)
								if err != nil {
									t.Fatal(err)
								}
								n, err := pl.Count(context.Background())
								if err != nil || n != int64(len(want)) {
									t.Fatalf("%s: Count = %d, %v; want %d", tag, n, err, len(want))
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestPairBounds: the prefixes of a pair join are never longer than what
// preparation sorts (the probing prefix and one more element), the sizes
// indexed by pairs have pair prefixes, and a probe walks pair lists only
// for partners indexed by pairs.
func TestPairBounds(t *testing.T) {
	for m, ths := range randomThresholds {
		for _, ts := range ths {
			th := mustThreshold(t, m, ts)
			for _, self := range []bool{true, false} {
				for _, pairMax := range []uint32{1, 4, 16, 200} {
					p := &Problem{Self: self, Threshold: th, R: &Side{MaxSize: 60}, S: &Side{MaxSize: 60}}
					b := newBounds(th, 60)
					pb := newPairBounds(p, b, pairMax)
					for s := uint32(1); s <= 60; s++ {
						sorted := min(th.ProbePrefix(s)+1, s)
						if pb.prefix2[s] > sorted || pb.probe2[s] > sorted || pb.probe1[s] > th.ProbePrefix(s) {
							t.Fatalf("%s %s self=%v max %d size %d: prefixes %d, %d, %d beyond %d sorted", m, ts, self, pairMax, s, pb.prefix2[s], pb.probe2[s], pb.probe1[s], sorted)
						}
						inPairs := pb.lo <= s && s <= pb.hi
						if inPairs != (pb.prefix2[s] > 0) || inPairs && pb.prefix2[s] < 2 {
							t.Fatalf("%s %s self=%v max %d size %d: pair prefix %d, range [%d, %d]", m, ts, self, pairMax, s, pb.prefix2[s], pb.lo, pb.hi)
						}
						if pb.probe2[s] > 0 && (pb.from2[s] < pb.lo || pb.from2[s] > pb.hi || pb.probe2[s] < 2 || pb.probe2[s] > maxPairPrefix) || pb.hi > maxPairSize && pb.lo <= pb.hi {
							t.Fatalf("%s %s self=%v max %d size %d: pair probe %d from %d, range [%d, %d]", m, ts, self, pairMax, s, pb.probe2[s], pb.from2[s], pb.lo, pb.hi)
						}
					}
				}
			}
		}
	}
}

func TestPairsShared(t *testing.T) {
	for m := uint32(2); m < 40; m++ {
		h := m * (m - 1) / 2
		if got := pairsShared(h); got != m {
			t.Errorf("pairsShared(%d) = %d, want %d", h, got, m)
		}
		if got := pairsShared(h + m - 1); got != m {
			t.Errorf("pairsShared(%d) = %d, want %d", h+m-1, got, m)
		}
	}
}

// TestPairIndexParts: the pair index built by several goroutines, each on
// a run of records, equals the one built by one, directory and lists.
func TestPairIndexParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	c := simjointest.Random(rng, 16000, 16, 60)
	for _, ts := range []string{"0.5", "0.7"} {
		p, err := newProblem(c, nil, Options{Threshold: mustThreshold(t, Jaccard, ts), Distinct: true}, 1, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		pb := pairBoundsOf(p)
		us := recordUnits(p.R)
		want := buildPairIndex(1, us, p.Universe, p.Unique, pb)
		if len(want.ent) < 1<<14 {
			t.Fatalf("t=%s: %d pairs, too few to split", ts, len(want.ent))
		}
		for _, threads := range []int{2, 3, 7} {
			got := buildPairIndex(threads, us, p.Universe, p.Unique, pb)
			if !slices.Equal(got.first, want.first) || !slices.Equal(got.second, want.second) ||
				!slices.Equal(got.start, want.start) || !slices.Equal(got.ent, want.ent) {
				t.Fatalf("t=%s, %d threads: the pair index differs from one thread's", ts, threads)
			}
		}
	}
}
