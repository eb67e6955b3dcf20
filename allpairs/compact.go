package allpairs

import (
	"slices"
	"sync"

	"github.com/xsect/xsect/sets"
)

// Engines index arrays by element (inverted lists, bitmaps, matrix
// columns), so elements must lie in a small range [0, Universe). When the
// values are dense already (at least half of [0, max] occurs) they are kept
// as they are, and the caller's sets are used without a copy; otherwise each
// value is renumbered to its rank among the distinct values, which keeps
// every set strictly increasing (ranks preserve order) and intersections
// unchanged.

// compactPair returns the selected sets of r and s (s may be nil) over a
// common element range, the document frequency of every element in each,
// the size of the range and the number of distinct elements.
func compactPair(threads int, r *sets.Collection, rids []uint32, s *sets.Collection, sids []uint32) (rc *sets.Collection, dfr []uint32, idRange, distinct int, sc *sets.Collection, dfs []uint32) {
	var maxV uint32
	var n int64
	scan := func(c *sets.Collection, ids []uint32) {
		for _, id := range ids {
			set := c.Set(int(id))
			if len(set) > 0 {
				maxV = max(maxV, set[len(set)-1])
			}
			n += int64(len(set))
		}
	}
	scan(r, rids)
	if s != nil {
		scan(s, sids)
	}
	if n == 0 {
		rc = copySets(r, rids)
		if s != nil {
			sc = copySets(s, sids)
		}
		return rc, nil, 0, 0, sc, nil
	}
	if uint64(maxV) > 4*uint64(n)+1<<22 {
		return compactSparse(threads, r, rids, s, sids, n)
	}
	size := int(maxV) + 1
	dfr = countDF(threads, r, rids, size)
	if s != nil {
		dfs = countDF(threads, s, sids, size)
	}
	for e := range dfr {
		if dfr[e] != 0 || (dfs != nil && dfs[e] != 0) {
			distinct++
		}
	}
	if 2*distinct >= size {
		rc = copySets(r, rids)
		if s != nil {
			sc = copySets(s, sids)
		}
		return rc, dfr, size, distinct, sc, dfs
	}
	// Renumber: the table maps a value to its rank.
	rank := make([]uint32, size)
	u := uint32(0)
	for v := range rank {
		if dfr[v] != 0 || (dfs != nil && dfs[v] != 0) {
			rank[v] = u
			dfr[u] = dfr[v]
			if dfs != nil {
				dfs[u] = dfs[v]
			}
			u++
		}
	}
	dfr = dfr[:distinct:distinct]
	if dfs != nil {
		dfs = dfs[:distinct:distinct]
	}
	byTable := func(dst, src []uint32) {
		for i, v := range src {
			dst[i] = rank[v]
		}
	}
	rc = renumber(threads, r, rids, byTable)
	if s != nil {
		sc = renumber(threads, s, sids, byTable)
	}
	return rc, dfr, distinct, distinct, sc, dfs
}

// compactSparse renumbers values that are too sparse for a table over
// [0, max], through the sorted distinct values.
func compactSparse(threads int, r *sets.Collection, rids []uint32, s *sets.Collection, sids []uint32, n int64) (rc *sets.Collection, dfr []uint32, idRange, distinct int, sc *sets.Collection, dfs []uint32) {
	all := make([]uint32, 0, n)
	gather := func(c *sets.Collection, ids []uint32) {
		for _, id := range ids {
			all = append(all, c.Set(int(id))...)
		}
	}
	gather(r, rids)
	if s != nil {
		gather(s, sids)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	rank := func(dst, src []uint32) {
		for i, v := range src {
			r, _ := slices.BinarySearch(all, v)
			dst[i] = uint32(r)
		}
	}
	u := len(all)
	rc = renumber(threads, r, rids, rank)
	dfr = countDF(threads, rc, nil, u)
	if s != nil {
		sc = renumber(threads, s, sids, rank)
		dfs = countDF(threads, sc, nil, u)
	}
	return rc, dfr, u, u, sc, dfs
}

// identity reports whether ids selects every set of c.
func identity(c *sets.Collection, ids []uint32) bool { return len(ids) == c.Len() }

// copySets returns the selected sets: c itself when all are selected.
func copySets(c *sets.Collection, ids []uint32) *sets.Collection {
	if identity(c, ids) {
		return c
	}
	out := &sets.Collection{Offsets: make([]uint64, len(ids)+1)}
	for x, id := range ids {
		out.Offsets[x+1] = out.Offsets[x] + uint64(c.SetLen(int(id)))
	}
	out.Elements = make([]uint32, out.Offsets[len(ids)])
	for x, id := range ids {
		copy(out.Elements[out.Offsets[x]:], c.Set(int(id)))
	}
	return out
}

// countDF counts, for every value below size, the selected sets (all if ids
// is nil) that hold it. Workers count into private arrays when those are
// small enough, and the arrays are summed.
func countDF(threads int, c *sets.Collection, ids []uint32, size int) []uint32 {
	k := c.Len()
	if ids != nil {
		k = len(ids)
	}
	set := func(x int) []uint32 {
		if ids == nil {
			return c.Set(x)
		}
		return c.Set(int(ids[x]))
	}
	var n int64
	for x := 0; x < k; x++ {
		n += int64(len(set(x)))
	}
	if blockedDFPays(k, size, n) {
		df := make([]uint32, size)
		addDFBlocked(threads, df, k, set, n)
		return df
	}
	workers := threads
	if n < 1<<18 || int64(size)*4*int64(workers) > 256<<20 {
		workers = 1
	}
	df := make([]uint32, size)
	private := make([][]uint32, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			d := df
			if w > 0 {
				d = make([]uint32, size)
				private[w] = d
			}
			for x := w * k / workers; x < (w+1)*k/workers; x++ {
				for _, v := range set(x) {
					d[v]++
				}
			}
		}(w)
	}
	wg.Wait()
	for _, d := range private[1:] {
		for e, n := range d {
			df[e] += n
		}
	}
	return df
}

// dfBlock is the number of counters of countDFBlocked's blocks: 512 KiB,
// which stay in a core's L2 cache.
const dfBlock = 1 << 13

// addDF adds to df[v], for every element v of the k sets that set returns,
// one: what countDF does, into an array that already holds counts.
func addDF(threads int, df []uint32, k int, set func(int) []uint32) {
	var n int64
	for x := 0; x < k; x++ {
		n += int64(len(set(x)))
	}
	if blockedDFPays(k, len(df), n) {
		addDFBlocked(threads, df, k, set, n)
		return
	}
	for x := 0; x < k; x++ {
		for _, v := range set(x) {
			df[v]++
		}
	}
}

// blockedDFPays reports whether addDFBlocked should count the n elements of
// k sets into size counters: when the counters span several blocks, and
// the sets are long enough that visiting each once per block costs little.
func blockedDFPays(k, size int, n int64) bool {
	blocks := (size + dfBlock - 1) / dfBlock
	return blocks > 1 && int64(blocks)*int64(k) <= n/8
}

// addDFBlocked is addDF for counter arrays well over the caches. A set's
// elements increase, so counting set after set sweeps the whole array once
// per set, missing the cache at nearly every element. Instead, it counts
// block of values after block: each worker owns a range of blocks and
// keeps, per set, a cursor to the first element not yet counted.
func addDFBlocked(threads int, df []uint32, k int, set func(int) []uint32, n int64) {
	size := len(df)
	blocks := (size + dfBlock - 1) / dfBlock
	workers := max(min(threads, blocks), 1)
	if n < 1<<18 {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		b0, b1 := w*blocks/workers, (w+1)*blocks/workers
		wg.Go(func() {
			lo := uint32(b0 * dfBlock)
			cur := make([]int, k)
			for x := range cur {
				s := set(x)
				cur[x], _ = slices.BinarySearch(s, lo)
			}
			for b := b0; b < b1; b++ {
				hi := uint64(min((b+1)*dfBlock, size))
				for x := range cur {
					s := set(x)[cur[x]:]
					i := 0
					for _, v := range s {
						if uint64(v) >= hi {
							break
						}
						df[v]++
						i++
					}
					cur[x] += i
				}
			}
		})
	}
	wg.Wait()
}

// renumber copies the selected sets with every element replaced by its
// rank: rank(dst, src) writes the ranks of the elements of src to dst.
func renumber(threads int, c *sets.Collection, ids []uint32, rank func(dst, src []uint32)) *sets.Collection {
	out := &sets.Collection{Offsets: make([]uint64, len(ids)+1)}
	for x, id := range ids {
		out.Offsets[x+1] = out.Offsets[x] + uint64(c.SetLen(int(id)))
	}
	out.Elements = make([]uint32, out.Offsets[len(ids)])
	workers := threads
	if len(out.Elements) < 1<<16 {
		workers = 1
	}
	bounds := splitEven(out.Offsets, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for x := bounds[w]; x < bounds[w+1]; x++ {
				rank(out.Elements[out.Offsets[x]:out.Offsets[x+1]], c.Set(int(ids[x])))
			}
		}(w)
	}
	wg.Wait()
	return out
}

// splitEven splits the sets of a CSR offsets array into parts ranges of
// about equal element counts, returning parts+1 boundaries.
func splitEven(offsets []uint64, parts int) []int {
	k := len(offsets) - 1
	b := make([]int, parts+1)
	base := offsets[0] // views of a collection may start anywhere
	total := offsets[k] - base
	x := 0
	for p := 1; p < parts; p++ {
		target := base + total*uint64(p)/uint64(parts)
		for x < k && offsets[x] < target {
			x++
		}
		b[p] = x
	}
	b[parts] = k
	return b
}
