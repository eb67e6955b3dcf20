// Package simjointest holds what the tests of package simjoin and of its
// GPU engines share: a brute-force reference that decides in rational
// arithmetic, independently of simjoin's integer comparisons, and the real
// data sets with Mann et al.'s exact counts.
//
// It does not import package simjoin, so that simjoin's own tests can use
// it: measures are named by their strings and pairs are this package's.
package simjointest

import (
	"fmt"
	"math/big"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// SimilarRat decides in rational arithmetic whether sets of sizes a and b
// sharing c elements are similar under measure (jaccard, cosine, dice or
// overlap) at the threshold num/den. Empty sets and disjoint ones never
// are.
func SimilarRat(measure string, num, den uint64, c, a, b int) bool {
	if a == 0 || b == 0 || c == 0 {
		return false
	}
	th := new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))
	var sim *big.Rat
	switch measure {
	case "jaccard":
		sim = big.NewRat(int64(c), int64(a+b-c))
	case "cosine":
		// c/sqrt(ab) >= t  <=>  c²/(ab) >= t², all of it positive
		sim = big.NewRat(int64(c)*int64(c), int64(a)*int64(b))
		th.Mul(th, th)
	case "dice":
		sim = big.NewRat(2*int64(c), int64(a+b))
	case "overlap":
		sim = big.NewRat(int64(c), 1)
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
