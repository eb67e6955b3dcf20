package allpairs

import (
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// index is an inverted index: the sets holding element e are
// post[start[e]:start[e+1]], in increasing order. For a self-join it may
// also keep, for every element occurrence (parallel to the collection's
// Elements), the position of its set in the element's list: the sets before
// it are exactly the ones it pairs with as the larger id, a prefix found
// without a search.
type index struct {
	start []uint32 // universe+1 offsets into post
	post  []uint32
	rank  []uint32 // only if built with ranks; parallel to the indexed collection's Elements
}

// list returns the sets holding e.
func (x *index) list(e uint32) []uint32 { return x.post[x.start[e]:x.start[e+1]] }

// before returns, for occurrence q (an index into Elements) of element e,
// the sets before the occurrence's own set.
func (x *index) before(e, q uint32) []uint32 {
	s := x.start[e]
	return x.post[s : s+x.rank[q]]
}

// Above this many elements in the universe, placing each occurrence
// straight into its list misses the caches on every write, and the index is
// built in two passes through buckets of radixSpan elements instead.
const (
	radixMinUniverse = 1 << 21
	radixSpan        = 1 << 15 // 128 KiB of list heads per bucket
)

// radixChunk is the number of occurrences per round of the bucketed build:
// 64 MiB of scratch.
const radixChunk = 1 << 23

// buildIndex indexes the sets of c (a collection or a view of one), with
// ranks if withRank; df holds the document frequencies.
func buildIndex(threads int, c *sets.Collection, universe int, df []uint32, withRank bool) *index {
	x := &index{start: make([]uint32, universe+1)}
	var n uint32
	for e, d := range df {
		x.start[e] = n
		n += d
	}
	x.start[universe] = n
	x.post = make([]uint32, n)
	if withRank {
		x.rank = make([]uint32, len(c.Elements))
	}
	if !withRank && universe >= radixMinUniverse && n >= uint32(radixChunk/8) {
		x.fillRadix(threads, c, radixChunk)
		return x
	}
	x.fillDirect(threads, c, universe, withRank)
	return x
}

// fillDirect places every occurrence into its list. Workers fill disjoint
// ranges of sets: each gets, per element, a slot range after those of the
// workers before it, so the lists come out sorted without a merge.
func (x *index) fillDirect(threads int, c *sets.Collection, universe int, withRank bool) {
	workers := threads
	if len(c.Elements) < 1<<17 || int64(universe)*4*int64(workers) > 256<<20 {
		workers = 1
	}
	bounds := splitEven(c.Offsets, workers)
	// fill[w][e] is worker w's next slot for e.
	fill := make([][]uint32, workers)
	fill[0] = slices.Clone(x.start[:universe])
	if workers > 1 {
		counts := make([][]uint32, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers-1; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				cnt := make([]uint32, universe)
				lo, hi := c.Offsets[bounds[w]], c.Offsets[bounds[w+1]]
				for _, e := range c.Elements[lo:hi] {
					cnt[e]++
				}
				counts[w] = cnt
			}(w)
		}
		wg.Wait()
		for w := 1; w < workers; w++ {
			f := counts[w-1] // reuse the counts array as the next fill array
			prev := fill[w-1]
			for e := range f {
				f[e] += prev[e]
			}
			fill[w] = f
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			f := fill[w]
			for i := bounds[w]; i < bounds[w+1]; i++ {
				lo, hi := c.Offsets[i], c.Offsets[i+1]
				for q := lo; q < hi; q++ {
					e := c.Elements[q]
					pos := f[e]
					f[e]++
					x.post[pos] = uint32(i)
					if withRank {
						x.rank[q] = pos - x.start[e]
					}
				}
			}
		}(w)
	}
	wg.Wait()
}

// fillRadix builds the lists in rounds of about chunk occurrences
// (whole sets, in order). In each round, workers first move their
// occurrences, as (element, set) pairs, into buckets of radixSpan elements,
// in order; then each bucket is placed into its lists, whose heads fit in
// L2. Both passes write sequentially or within a cache-sized window.
func (x *index) fillRadix(threads int, c *sets.Collection, chunk int) {
	universe := len(x.start) - 1
	buckets := (universe + radixSpan - 1) / radixSpan
	fill := slices.Clone(x.start[:universe])
	k := c.Len()
	tmp := make([]uint64, min(uint64(chunk), c.Offsets[k]-c.Offsets[0]))
	bstart := make([]uint32, buckets+1) // bucket offsets within the round
	for i0 := 0; i0 < k; {
		// The sets of this round.
		i1 := i0 + 1
		for i1 < k && c.Offsets[i1+1]-c.Offsets[i0] <= uint64(len(tmp)) {
			i1++
		}
		if c.Offsets[i1]-c.Offsets[i0] > uint64(len(tmp)) {
			tmp = make([]uint64, c.Offsets[i1]-c.Offsets[i0]) // one huge set
		}
		workers := max(1, min(threads, (i1-i0)/4))
		bounds := make([]int, workers+1)
		sub := &sets.Collection{Offsets: c.Offsets[i0 : i1+1], Elements: c.Elements}
		for w, b := range splitEven(sub.Offsets, workers) {
			bounds[w] = i0 + b
		}
		// Count each worker's occurrences per bucket.
		counts := make([][]uint32, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				cnt := make([]uint32, buckets)
				for _, e := range c.Elements[c.Offsets[bounds[w]]:c.Offsets[bounds[w+1]]] {
					cnt[e/radixSpan]++
				}
				counts[w] = cnt
			}(w)
		}
		wg.Wait()
		var off uint32
		for b := 0; b < buckets; b++ {
			bstart[b] = off
			for w := 0; w < workers; w++ {
				n := counts[w][b]
				counts[w][b] = off // now worker w's next slot in bucket b
				off += n
			}
		}
		bstart[buckets] = off
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				next := counts[w]
				for i := bounds[w]; i < bounds[w+1]; i++ {
					for _, e := range c.Set(i) {
						b := e / radixSpan
						tmp[next[b]] = uint64(e)<<32 | uint64(i)
						next[b]++
					}
				}
			}(w)
		}
		wg.Wait()
		par.Each(buckets, threads, func(b int) {
			for _, t := range tmp[bstart[b]:bstart[b+1]] {
				e := uint32(t >> 32)
				x.post[fill[e]] = uint32(t)
				fill[e]++
			}
		})
		i0 = i1
	}
}

// lowerBound returns the first position in the increasing list with a value
// >= v.
func lowerBound(list []uint32, v uint32) int {
	i, _ := slices.BinarySearch(list, v)
	return i
}
