// Package simjointest holds what the tests of package simjoin and of its
// GPU engines share: a brute-force reference join that decides in
// rational arithmetic, independently of simjoin's integer comparisons,
// the comparison of a join's pairs with it, random collections with many
// similar pairs, and the real data sets with Mann et al.'s exact counts.
//
// It does not import package simjoin, so that simjoin's own tests can use
// it: measures are named by their strings or passed as a Measure, and
// Join and ComparePairs take any pair type laid out as simjoin.Pair.
package simjointest

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// SimilarRat decides in rational arithmetic whether sets of sizes a and b
// sharing c elements are similar under measure (jaccard, cosine, dice or
// overlap) at the threshold num/den, exactly for any sizes (big.Int: the
// squares of cosine overflow 64 bits past 2^32). Empty sets and disjoint
// ones never are.
func SimilarRat(measure string, num, den uint64, c, a, b int) bool {
	if a == 0 || b == 0 || c == 0 {
		return false
	}
	th := new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))
	C, A, B := big.NewInt(int64(c)), big.NewInt(int64(a)), big.NewInt(int64(b))
	var sim *big.Rat
	switch measure {
	case "jaccard":
		sim = new(big.Rat).SetFrac(C, new(big.Int).Sub(new(big.Int).Add(A, B), C))
	case "cosine":
		// c/sqrt(ab) >= t  <=>  c²/(ab) >= t², all of it positive
		sim = new(big.Rat).SetFrac(new(big.Int).Mul(C, C), new(big.Int).Mul(A, B))
		th.Mul(th, th)
	case "dice":
		sim = new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(2), C), new(big.Int).Add(A, B))
	case "overlap":
		sim = new(big.Rat).SetInt(C)
	default:
		panic("simjointest: no measure " + measure)
	}
	return sim.Cmp(th) >= 0
}

// Pair is a similar pair of the reference: set I of r, set J of s (I < J
// in a self-join), sharing Overlap elements.
type Pair struct{ I, J, Overlap uint32 }

// Reference joins r × s (s nil: a self-join) by brute force: the overlap
// of every pair of sets that share an element, counted through a map from
// elements to the sets holding them, decided by similar (sizes a of r's
// set, b of s's). With distinct, each group of equal sets is its smallest
// id only. The pairs come sorted by I, then J.
func Reference(r, s *sets.Collection, similar func(c, a, b int) bool, distinct bool) []Pair {
	self := s == nil
	if self {
		s = r
	}
	keepR, keepS := Keep(r, distinct), Keep(s, distinct)
	holders := map[uint32][]int{}
	for j := 0; j < s.Len(); j++ {
		if keepS[j] {
			for _, e := range s.Set(j) {
				holders[e] = append(holders[e], j)
			}
		}
	}
	var out []Pair
	for i := 0; i < r.Len(); i++ {
		if !keepR[i] {
			continue
		}
		common := map[int]int{}
		for _, e := range r.Set(i) {
			for _, j := range holders[e] {
				common[j]++
			}
		}
		for j, c := range common {
			if self && j <= i {
				continue
			}
			if similar(c, r.SetLen(i), s.SetLen(j)) {
				out = append(out, Pair{I: uint32(i), J: uint32(j), Overlap: uint32(c)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Pair) int {
		if a.I != b.I {
			return int(a.I) - int(b.I)
		}
		return int(a.J) - int(b.J)
	})
	return out
}

// SimPair is the layout of simjoin.Pair, which this package cannot name:
// Join and ComparePairs take any pair type laid out so.
type SimPair = struct {
	I, J, Overlap uint32
	Similarity    float64
}

// Measure is what Join asks of simjoin.Measure: its name, for SimilarRat,
// and the similarity its pairs carry.
type Measure interface {
	String() string
	Similarity(c, a, b uint32) float64
}

// Join is the join that simjoin's engines, CPU and GPU, are checked
// against: Reference decided by SimilarRat under m at the threshold
// num/den, each pair carrying its similarity under m. With distinct, each
// group of equal sets is its smallest id only.
func Join[P ~SimPair](r, s *sets.Collection, m Measure, num, den uint64, distinct bool) []P {
	name := m.String()
	ref := Reference(r, s, func(c, a, b int) bool { return SimilarRat(name, num, den, c, a, b) }, distinct)
	if s == nil {
		s = r
	}
	out := make([]P, len(ref))
	for k, p := range ref {
		a, b := r.SetLen(int(p.I)), s.SetLen(int(p.J))
		out[k] = P(SimPair{I: p.I, J: p.J, Overlap: p.Overlap, Similarity: m.Similarity(p.Overlap, uint32(a), uint32(b))})
	}
	return out
}

// ComparePairs fails tb, tagged with tag, unless got and want are the
// same pairs in the same order, saying which pairs differ, are missing or
// are extra (the first few of each).
func ComparePairs[P ~SimPair](tb testing.TB, tag string, got, want []P) {
	tb.Helper()
	if slices.Equal(got, want) {
		return
	}
	type key struct{ i, j uint32 }
	gm, wm := map[key]SimPair{}, map[key]SimPair{}
	for _, p := range got {
		q := SimPair(p)
		gm[key{q.I, q.J}] = q
	}
	for _, p := range want {
		q := SimPair(p)
		wm[key{q.I, q.J}] = q
	}
	shown := 0
	for k, w := range wm {
		if g, ok := gm[k]; !ok || g != w {
			if shown++; shown <= 5 {
				tb.Errorf("%s: pair (%d, %d): got %+v (found %v), want %+v", tag, k.i, k.j, g, ok, w)
			}
		}
	}
	for k, g := range gm {
		if _, ok := wm[k]; !ok {
			if shown++; shown <= 10 {
				tb.Errorf("%s: extra pair %+v", tag, g)
			}
		}
	}
	tb.Fatalf("%s: %d pairs, want %d", tag, len(got), len(want))
}

// Random returns n sets with sizes up to maxSize over a universe whose
// elements are drawn with a skew (low values are frequent), some of them
// repeated, some empty, some near copies of others: so that many pairs
// are similar at every threshold.
func Random(rng *rand.Rand, n, maxSize, universe int) *sets.Collection {
	c := sets.New()
	var made [][]uint32
	for range n {
		var s []uint32
		switch x := rng.IntN(10); {
		case x == 0:
			// empty
		case x <= 2 && len(made) > 0:
			// A near copy of an earlier set: a few elements changed.
			s = slices.Clone(made[rng.IntN(len(made))])
			for range rng.IntN(3) {
				if len(s) > 0 && rng.IntN(2) == 0 {
					s = slices.Delete(s, 0, 1)
				} else {
					s = append(s, uint32(rng.IntN(universe)))
				}
			}
		case x == 3 && len(made) > 0:
			s = slices.Clone(made[rng.IntN(len(made))])
		default:
			size := 1 + rng.IntN(maxSize)
			for range size {
				// A skewed draw: the square of a uniform value.
				f := rng.Float64()
				s = append(s, uint32(f*f*float64(universe)))
			}
		}
		s = sets.Normalize(s)
		made = append(made, s)
		c.Add(s)
	}
	return c
}

// Keep reports, for each set of c, whether a distinct join keeps it: the
// first of its equals (every set without distinct).
func Keep(c *sets.Collection, distinct bool) []bool {
	keep := make([]bool, c.Len())
	seen := map[string]bool{}
	for i := range keep {
		key := fmt.Sprint(c.Set(i))
		keep[i] = !distinct || !seen[key]
		seen[key] = true
	}
	return keep
}

// Data is a real data set of ../shared/NOTES.md with the pairs that Mann
// et al.'s code finds in it, equal sets counted once, at Jaccard
// Thresholds (every count exact, the pairs at the threshold that their
// floating point loses included).
type Data struct {
	Name, File string
	Pairs      [4]int64
	// Large marks the data sets too slow for -short at the low
	// thresholds.
	Large bool
	// Issue marks the five data sets of the issue's speed targets.
	Issue bool
}

// Thresholds are the Jaccard thresholds of Data.Pairs.
var Thresholds = [4]string{"0.5", "0.7", "0.9", "0.95"}

// MannData are the real data sets.
var MannData = []Data{
	{"BMS2", "fimi/BMS2.dat", [4]int64{152883, 7773, 72, 3}, false, true},
	{"retail", "fimi/retail.dat", [4]int64{432274, 3675, 0, 0}, false, true},
	{"kosarak", "fimi/kosarak_head36682.dat", [4]int64{907966, 5288, 10, 4}, false, true},
	{"tags-math-sx", "hypergraphs/tags-math-sx.dedup.sets", [4]int64{5158665, 132756, 0, 0}, true, true},
	{"threads-math-sx", "hypergraphs/threads-math-sx.dedup.sets", [4]int64{774283, 501, 0, 0}, true, false},
	{"congress-bills", "hypergraphs/congress-bills.dedup.sets", [4]int64{128637, 8869, 741, 108}, true, false},
	{"soc-Epinions1", "graphs/soc-Epinions1.adj", [4]int64{11476, 254, 1, 0}, false, false},
	{"gcide", "ir/gcide/gcide.docs.sets.gz", [4]int64{188703, 1757, 71, 20}, true, true},
}

// IssueData returns the five data sets of the issue's speed targets.
func IssueData() []Data {
	var ds []Data
	for _, d := range MannData {
		if d.Issue {
			ds = append(ds, d)
		}
	}
	return ds
}

var loaded sync.Map // file -> *sets.Collection

// Load returns the real data set in file (relative to ../shared/data, as
// settest.SharedData), loaded once per process, or skips the test or
// benchmark when the shared data are not there.
func Load(tb testing.TB, file string) *sets.Collection {
	tb.Helper()
	if c, ok := loaded.Load(file); ok {
		return c.(*sets.Collection)
	}
	c, err := setio.Load(settest.SharedData(tb, file))
	if err != nil {
		tb.Fatal(err)
	}
	loaded.Store(file, c)
	return c
}
