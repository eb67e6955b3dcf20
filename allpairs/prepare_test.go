package allpairs

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/sets"
)

// selectSetsRef is the definition: a stable sort of the ids by decreasing
// size, cut to largest, back in id order.
func selectSetsRef(c *sets.Collection, dropEmpty bool, largest int) []uint32 {
	ids := []uint32{}
	for i := 0; i < c.Len(); i++ {
		if !dropEmpty || c.SetLen(i) != 0 {
			ids = append(ids, uint32(i))
		}
	}
	if largest > 0 && largest < len(ids) {
		slices.SortStableFunc(ids, func(a, b uint32) int { return cmp.Compare(c.SetLen(int(b)), c.SetLen(int(a))) })
		ids = ids[:largest]
		slices.Sort(ids)
	}
	return ids
}

func TestSelectSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 400; trial++ {
		k := rng.IntN(300)
		maxSize := 1 + rng.IntN(1<<uint(rng.IntN(12)))
		c := sets.New()
		for i := 0; i < k; i++ {
			n := rng.IntN(maxSize + 1)
			if trial%3 == 0 {
				n = rng.IntN(4) // many ties and empty sets
			}
			s := make([]uint32, n)
			for j := range s {
				s[j] = uint32(j)
			}
			c.Add(s)
		}
		for _, dropEmpty := range []bool{false, true} {
			for _, largest := range []int{0, 1, 2, 3, k / 3, k / 2, k - 1, k, k + 1, rng.IntN(k + 2)} {
				got := selectSets(c, dropEmpty, largest)
				want := selectSetsRef(c, dropEmpty, largest)
				if !slices.Equal(got, want) {
					t.Fatalf("k=%d dropEmpty=%v largest=%d: got %v, want %v", k, dropEmpty, largest, got, want)
				}
			}
		}
	}
}

func TestNthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		a := make([]int, 1+rng.IntN(100))
		for i := range a {
			a[i] = rng.IntN(1 + rng.IntN(50))
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		r := 1 + rng.IntN(len(a))
		if got, want := nthLargest(slices.Clone(a), r), sorted[len(a)-r]; got != want {
			t.Fatalf("%v r=%d: got %d, want %d", a, r, got, want)
		}
	}
}

// TestCountDF checks the document frequencies of every counting path (one
// worker or several, private arrays or blocks of values) against a plain
// count, on sets that span many blocks and sets that span none.
func TestCountDF(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []struct{ k, avg, size int }{
		{0, 0, 10}, {1, 0, 10}, {3, 1, 1}, {50, 100, 1000},
		{40, 20000, 5*dfBlock + 17}, {300, 3000, 3 * dfBlock}, {7, 60000, 2*dfBlock - 1},
	}
	for _, sh := range shapes {
		c := sets.New()
		for i := 0; i < sh.k; i++ {
			n := rng.IntN(2*sh.avg + 1)
			m := map[uint32]bool{}
			if i == 0 && sh.size > 1 {
				m[0], m[uint32(sh.size-1)] = true, true // both ends
			}
			for len(m) < min(n, sh.size) {
				m[uint32(rng.IntN(sh.size))] = true
			}
			s := make([]uint32, 0, len(m))
			for v := range m {
				s = append(s, v)
			}
			c.AddUnsorted(s)
		}
		want := make([]uint32, sh.size)
		for i := 0; i < c.Len(); i++ {
			for _, v := range c.Set(i) {
				want[v]++
			}
		}
		odd := []uint32{} // every other set, through ids
		for i := 1; i < c.Len(); i += 2 {
			odd = append(odd, uint32(i))
		}
		wantOdd := make([]uint32, sh.size)
		for _, i := range odd {
			for _, v := range c.Set(int(i)) {
				wantOdd[v]++
			}
		}
		for _, threads := range []int{1, 2, 3, 8} {
			if got := countDF(threads, c, nil, sh.size); !slices.Equal(got, want) {
				t.Fatalf("%+v threads %d: countDF differs", sh, threads)
			}
			if got := countDF(threads, c, odd, sh.size); !slices.Equal(got, wantOdd) {
				t.Fatalf("%+v threads %d: countDF of odd sets differs", sh, threads)
			}
			got := slices.Clone(wantOdd)
			addDF(threads, got, c.Len(), c.Set)
			for v := range got {
				if got[v] != want[v]+wantOdd[v] {
					t.Fatalf("%+v threads %d: addDF differs at %d", sh, threads, v)
				}
			}
			got = make([]uint32, sh.size)
			addDFBlocked(threads, got, c.Len(), c.Set, int64(len(c.Elements)))
			if !slices.Equal(got, want) {
				t.Fatalf("%+v threads %d: addDFBlocked differs", sh, threads)
			}
		}
	}
}

func TestHeavyColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, u := range []int{0, 1, 1000, 1<<20 + 3} {
		dr, ds := make([]uint32, u), make([]uint32, u)
		for e := range dr {
			dr[e], ds[e] = uint32(rng.IntN(20)), uint32(rng.IntN(20))
		}
		for _, self := range []bool{false, true} {
			for _, theta := range []int64{-1, 0, 50, 150, 1000} {
				var want []uint32
				var wantSaved int64
				for e := range dr {
					w := int64(dr[e]) * int64(ds[e])
					if self {
						w = int64(dr[e]) * (int64(dr[e]) - 1) / 2
					}
					if w > theta {
						want = append(want, uint32(e))
						wantSaved += w
					}
				}
				for _, threads := range []int{1, 2, 5} {
					got := []uint32{}
					for range 2 { // the second time reusing the storage
						var saved int64
						got, saved = heavyColumns(threads, dr, ds, self, theta, got[:0])
						if !slices.Equal(got, want) || saved != wantSaved {
							t.Fatalf("u=%d self=%v theta=%d threads=%d: %d columns (saved %d), want %d (saved %d)",
								u, self, theta, threads, len(got), saved, len(want), wantSaved)
						}
					}
				}
			}
		}
	}
}
