package allpairs

import (
	"context"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/internal/radix"
	"github.com/xsect/xsect/internal/sorted"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
)

// Engines index arrays by element (inverted lists, bitmaps, matrix
// columns), so elements must lie in a small range [0, Universe). When the
// values are dense already (at least half of [0, max] occurs) they are kept
// as they are, and the caller's sets are used without a copy; otherwise each
// value is renumbered to its rank among the distinct values, which keeps
// every set strictly increasing (ranks preserve order) and intersections
// unchanged.

// compacted is the selected sets over a dense element range, with the
// document frequencies and what one pass over them measures.
type compacted struct {
	r, s     *sets.Collection // s is nil when compactPair got no s
	dfr, dfs []uint32         // nil when no set has an element
	universe int              // the element range: [0, universe)
	dfSummary
}

// dfSummary is what a pass over the document frequencies measures.
type dfSummary struct {
	distinct int   // elements held by a set of R or S
	scanWork int64 // Σ C(dfR, 2) with no S, else Σ dfR·dfS
	maxDF    int   // the largest frequency, in R or S
}

func (a *dfSummary) add(b dfSummary) {
	a.distinct += b.distinct
	a.scanWork += b.scanWork
	a.maxDF = max(a.maxDF, b.maxDF)
}

// compactPair returns the selected sets of r and s (s may be nil) over a
// common element range, the document frequency of every element in each,
// and their summary.
func compactPair(pp spread, r *sets.Collection, rids []uint32, s *sets.Collection, sids []uint32) compacted {
	var maxV uint32
	var n int64
	scan := func(c *sets.Collection, ids []uint32) {
		for _, id := range ids {
			lo, hi := c.Offsets[id], c.Offsets[id+1]
			if hi > lo {
				maxV = max(maxV, c.Elements[hi-1])
			}
			n += int64(hi - lo)
		}
	}
	scan(r, rids)
	if s != nil {
		scan(s, sids)
	}
	var out compacted
	if n == 0 {
		out.r = copySets(pp, r, rids)
		if s != nil {
			out.s = copySets(pp, s, sids)
		}
		return out
	}
	if uint64(maxV) > 4*uint64(n)+1<<22 {
		return compactSparse(pp, r, rids, s, sids, n)
	}
	size := int(maxV) + 1
	out.dfr = countDF(pp, r, rids, size)
	if s != nil {
		out.dfs = countDF(pp, s, sids, size)
	}
	parts := summarize(pp, out.dfr, out.dfs)
	for _, c := range parts {
		out.add(c.dfSummary)
	}
	if 2*out.distinct >= size {
		// Dense enough: the values stay, and the caller's sets are used
		// as they are when every one is selected.
		out.universe = size
		out.r = copySets(pp, r, rids)
		if s != nil {
			out.s = copySets(pp, s, sids)
		}
		return out
	}
	// Renumber: the table maps a value to its rank, and the frequencies
	// move to their ranks; each chunk of values starts at the number of
	// distinct values before it.
	rank := large[uint32](size)
	dfr := make([]uint32, out.distinct)
	var dfs []uint32
	if s != nil {
		dfs = make([]uint32, out.distinct)
	}
	base := make([]int, len(parts))
	for c := 1; c < len(parts); c++ {
		base[c] = base[c-1] + parts[c-1].distinct
	}
	par.Each(len(parts), pp.threads, func(c int) {
		u := uint32(base[c])
		for v := parts[c].lo; v < parts[c].hi; v++ {
			dr := out.dfr[v]
			if dfs == nil {
				if dr != 0 {
					rank[v], dfr[u] = u, dr
					u++
				}
				continue
			}
			if ds := out.dfs[v]; dr|ds != 0 {
				rank[v], dfr[u], dfs[u] = u, dr, ds
				u++
			}
		}
	})
	out.dfr, out.dfs, out.universe = dfr, dfs, out.distinct
	byTable := func(dst, src []uint32) {
		for i, v := range src {
			dst[i] = rank[v]
		}
	}
	out.r = renumber(pp, r, rids, byTable)
	if s != nil {
		out.s = renumber(pp, s, sids, byTable)
	}
	return out
}

// dfPart is the summary of the frequencies of values [lo, hi).
type dfPart struct {
	lo, hi int
	dfSummary
}

// summarize measures dfr and dfs (nil with no S, else as long as dfr) in
// parts of the value range, in parallel when they are long.
func summarize(pp spread, dfr, dfs []uint32) []dfPart {
	n := len(dfr)
	parts := make([]dfPart, max(1, min(4*pp.threads, n>>17)))
	if pp.threads <= 1 {
		parts = parts[:1]
	}
	for c := range parts {
		parts[c].lo, parts[c].hi = c*n/len(parts), (c+1)*n/len(parts)
	}
	par.Each(len(parts), pp.threads, func(c int) {
		pt := &parts[c]
		var sum dfSummary
		var top uint32
		if dfs == nil {
			for _, d := range dfr[pt.lo:pt.hi] {
				if d == 0 {
					continue // values renumbered away: most of them
				}
				sum.distinct++
				sum.scanWork += int64(d) * (int64(d) - 1) / 2
				top = max(top, d)
			}
		} else {
			ds := dfs[pt.lo:pt.hi]
			for v, dr := range dfr[pt.lo:pt.hi] {
				d := ds[v]
				if dr|d == 0 {
					continue
				}
				sum.distinct++
				sum.scanWork += int64(dr) * int64(d)
				top = max(top, dr, d)
			}
		}
		sum.maxDF = int(top)
		pt.dfSummary = sum
	})
	return parts
}

// large returns make([]T, n), on transparent huge pages from 4 MiB on:
// fresh memory costs a page fault per 4 KiB touched, several microseconds
// each in a virtual machine (a plan's arrays are mostly fresh in a process
// that plans once), against at most 2 MiB more to zero where the memory is
// reused, as in a process that plans again and again (see hugepage.Make).
func large[T any](n int) []T {
	var zero T
	if int64(n)*int64(unsafe.Sizeof(zero)) >= 4<<20 {
		return hugepage.Make[T](n, n)
	}
	return make([]T, n)
}

// minParallel is the fewest elements that a pass spreads over threads by
// default (spread.min):
// below it, a pass takes under a millisecond, and a worker waiting for a
// core that another process holds would cost more than it saves.
const minParallel = 1 << 20

// spread is how far a pass may spread: over up to threads goroutines once
// it has min elements or more (tests lower min to run the parallel code on
// small inputs).
type spread struct{ threads, min int }

// compactSparse renumbers values that are too sparse for a table over
// [0, max], through the sorted distinct values.
func compactSparse(pp spread, r *sets.Collection, rids []uint32, s *sets.Collection, sids []uint32, n int64) compacted {
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
	radix.Sort(all, make([]uint32, len(all)))
	all = slices.Compact(all)
	rank := func(dst, src []uint32) {
		// src increases: each value is searched after the previous one.
		lo := 0
		for i, v := range src {
			r, _ := slices.BinarySearch(all[lo:], v)
			lo += r
			dst[i] = uint32(lo)
		}
	}
	u := len(all)
	out := compacted{universe: u}
	out.r = renumber(pp, r, rids, rank)
	out.dfr = countDF(pp, out.r, nil, u)
	if s != nil {
		out.s = renumber(pp, s, sids, rank)
		out.dfs = countDF(pp, out.s, nil, u)
	}
	for _, c := range summarize(pp, out.dfr, out.dfs) {
		out.add(c.dfSummary)
	}
	return out
}

// identity reports whether ids selects every set of c.
func identity(c *sets.Collection, ids []uint32) bool { return len(ids) == c.Len() }

// copySets returns the selected sets: c itself when all are selected.
func copySets(pp spread, c *sets.Collection, ids []uint32) *sets.Collection {
	if identity(c, ids) {
		return c
	}
	out := &sets.Collection{Offsets: make([]uint64, len(ids)+1)}
	for x, id := range ids {
		out.Offsets[x+1] = out.Offsets[x] + uint64(c.SetLen(int(id)))
	}
	out.Elements = large[uint32](int(out.Offsets[len(ids)]))
	workers := pp.threads
	if len(out.Elements) < pp.min {
		workers = 1
	}
	bounds := splitEven(out.Offsets, workers)
	par.Do(workers, func(w int) {
		for x := bounds[w]; x < bounds[w+1]; x++ {
			copy(out.Elements[out.Offsets[x]:], c.Set(int(ids[x])))
		}
	})
	return out
}

// countDF counts, for every value below size, the selected sets (all if ids
// is nil) that hold it. Workers count into private arrays when those are
// small enough, and the arrays are summed.
func countDF(pp spread, c *sets.Collection, ids []uint32, size int) []uint32 {
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
		df := large[uint32](size)
		addDFBlocked(pp, df, k, set, n)
		return df
	}
	if n >= int64(pp.min) && pp.threads > 1 && partitionedDFPays(size) {
		df := large[uint32](size)
		addDFPartitioned(pp, df, k, set, n)
		return df
	}
	// Private counters per worker, as many workers as 256 MiB of them
	// allow.
	workers := min(pp.threads, max(1, (256<<20)/(4*max(size, 1))))
	if n < int64(pp.min) {
		workers = 1
	}
	df := large[uint32](size)
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
	if workers > 1 {
		par.For(size, pp.threads, func(lo, hi int) {
			for _, d := range private[1:] {
				for e, n := range d[lo:hi] {
					df[lo+e] += n
				}
			}
		})
	}
	return df
}

// dfBlock is the number of counters of addDFBlocked's blocks: 128 KiB,
// which stay in a core's L2 cache.
const dfBlock = 1 << 15

// addDF adds to df[v], for every element v of the k sets that set returns,
// one: what countDF does, into an array that already holds counts.
func addDF(pp spread, df []uint32, k int, set func(int) []uint32) {
	var n int64
	for x := 0; x < k; x++ {
		n += int64(len(set(x)))
	}
	if blockedDFPays(k, len(df), n) {
		addDFBlocked(pp, df, k, set, n)
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
	return 4*int64(size) > dfCache && int64(blocks)*int64(k) <= n/8
}

// dfCache is the counters' size in bytes from which addDFBlocked pays:
// below, a core's L2 cache holds all of them, and the plain count, which
// touches each element once, beats the blocks' cursor per set and block.
var dfCache = sysinfo.CPUCaches().L2

// addDFBlocked is addDF for counter arrays well over the caches. A set's
// elements increase, so counting set after set sweeps the whole array once
// per set, missing the cache at nearly every element. Instead, it counts
// block of values after block, keeping per set a cursor to the first
// element not yet counted. Workers take ranges of blocks as they finish
// (values need not spread evenly: vocabularies numbered by frequency put
// most occurrences in the first blocks), each starting its cursors by a
// search. Blocks shrink, down to 2,048 values, until there are a few per
// worker, while the sets still have several elements per block.
func addDFBlocked(pp spread, df []uint32, k int, set func(int) []uint32, n int64) {
	size := len(df)
	workers := max(pp.threads, 1)
	if n < int64(pp.min) {
		workers = 1
	}
	block := dfBlock
	for block > 2048 && (size+block-1)/block < 4*workers && int64((size+block-1)/(block/2))*int64(k) <= n/4 {
		block /= 2
	}
	blocks := (size + block - 1) / block
	ranges := min(blocks, 4*workers)
	if workers == 1 {
		ranges = 1
	}
	par.Each(ranges, workers, func(r int) {
		b0, b1 := r*blocks/ranges, (r+1)*blocks/ranges
		lo := uint32(b0 * block)
		cur := make([]int, k)
		for x := range cur {
			if lo > 0 {
				cur[x], _ = slices.BinarySearch(set(x), lo)
			}
		}
		for b := b0; b < b1; b++ {
			hi := uint64(min((b+1)*block, size))
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

// Partitioned counting (addDFPartitioned): values go to buckets of
// dfBucket counters, half a core's L2 cache (and at least 32,768), in
// rounds of up to dfRound elements (128 MiB of them: a round's counting
// sweeps every bucket's counters, so a round must hold several elements
// per counter to pay for it), and a bucket is counted in pieces of up to
// dfPiece elements. Variables for tests; dfBucket is a power of two.
var (
	dfBucket = max(1<<15, 1<<(bits.Len64(uint64(max(dfCache, 1)))-4))
	dfRound  = 1 << 25
	dfPiece  = 1 << 20
)

// partitionedDFPays reports whether countDF should count size counters by
// addDFPartitioned rather than into a private copy per worker: when one
// copy does not fit a core's share of the L3 cache, so that every
// increment would miss it.
func partitionedDFPays(size int) bool {
	c := sysinfo.CPUCaches()
	share := max(c.L3/int64(max(c.L3Shared, 1)), c.L2)
	return 4*int64(size) > share
}

// addDFPartitioned is addDF for counters well over a core's L2 cache and
// sets too short for addDFBlocked: counting element after element misses
// the cache at nearly every one, and per-worker copies of the counters
// would multiply the misses. Instead, in rounds, workers first move their
// sets' elements into buckets of values that a core's L2 holds (counting
// them per bucket, then writing each to its place: two passes that read
// and write in order), then count bucket after bucket. The pieces of a
// bucket too full for one worker (where values are numbered by frequency,
// the first) count into a worker's scratch counters, added under the
// bucket's lock.
func addDFPartitioned(pp spread, df []uint32, k int, set func(int) []uint32, n int64) {
	workers := max(pp.threads, 1)
	if n < int64(pp.min) {
		workers = 1
	}
	shift := uint(bits.Len(uint(dfBucket - 1)))
	buckets := (len(df) + dfBucket - 1) / dfBucket
	buf := large[uint32](int(min(n, int64(dfRound))))
	hist := make([]int, workers*buckets) // worker w's bucket b at w*buckets+b, then its place in buf
	start := make([]int, buckets+1)
	bounds := make([]int, workers+1)
	locks := make([]sync.Mutex, buckets)
	scratch := make([][]uint32, workers)
	type piece struct{ bucket, lo, hi int }
	var pieces []piece
	for x0 := 0; x0 < k; {
		// The round's sets: up to dfRound elements, and one set at least.
		x1, m := x0, 0
		for x1 < k && (x1 == x0 || m+len(set(x1)) <= len(buf)) {
			m += len(set(x1))
			x1++
		}
		if m > len(buf) {
			buf = large[uint32](m)
		}
		// Workers take runs of sets of about equal elements.
		for w, x, sum := 1, x0, 0; w <= workers; w++ {
			for x < x1 && (w == workers || sum < m*w/workers) {
				sum += len(set(x))
				x++
			}
			bounds[w] = x
		}
		bounds[0] = x0
		clear(hist)
		par.Do(workers, func(w int) {
			h := hist[w*buckets : (w+1)*buckets]
			for x := bounds[w]; x < bounds[w+1]; x++ {
				s := set(x)
				for i := 0; i < len(s); {
					b := s[i] >> shift
					j := runEnd(s, i, (b+1)<<shift)
					h[b] += j - i
					i = j
				}
			}
		})
		at := 0
		for b := 0; b < buckets; b++ {
			start[b] = at
			for w := 0; w < workers; w++ {
				c := hist[w*buckets+b]
				hist[w*buckets+b] = at
				at += c
			}
		}
		start[buckets] = at
		par.Do(workers, func(w int) {
			pos := hist[w*buckets : (w+1)*buckets]
			for x := bounds[w]; x < bounds[w+1]; x++ {
				s := set(x)
				for i := 0; i < len(s); {
					b := s[i] >> shift
					j := runEnd(s, i, (b+1)<<shift)
					pos[b] += copy(buf[pos[b]:], s[i:j])
					i = j
				}
			}
		})
		pieces = pieces[:0]
		for b := 0; b < buckets; b++ {
			for lo := start[b]; lo < start[b+1]; lo += dfPiece {
				pieces = append(pieces, piece{b, lo, min(lo+dfPiece, start[b+1])})
			}
		}
		par.Tasks(context.Background(), len(pieces), workers, func(w, t int) error {
			pc := pieces[t]
			if pc.hi-pc.lo == start[pc.bucket+1]-start[pc.bucket] {
				// The bucket's only piece: no other worker counts it.
				for _, v := range buf[pc.lo:pc.hi] {
					df[v]++
				}
				return nil
			}
			base := pc.bucket << shift
			sc := scratch[w]
			if sc == nil {
				sc = make([]uint32, dfBucket)
				scratch[w] = sc
			}
			for _, v := range buf[pc.lo:pc.hi] {
				sc[int(v)-base]++
			}
			d := df[base:min(base+dfBucket, len(df))]
			locks[pc.bucket].Lock()
			for i := range d {
				d[i] += sc[i]
			}
			locks[pc.bucket].Unlock()
			clear(sc)
			return nil
		})
		x0 = x1
	}
}

// runEnd returns the first index from i of sorted s whose value is at
// least limit (len(s) if none): the end of a run of one bucket, short next
// to its set, so found by galloping. A limit of 0 is the end of the last
// bucket, whose bound 2^32 wrapped.
func runEnd(s []uint32, i int, limit uint32) int {
	if limit == 0 {
		return len(s)
	}
	return sorted.Gallop(s, i, limit)
}

// renumber copies the selected sets with every element replaced by its
// rank: rank(dst, src) writes the ranks of the elements of src to dst.
func renumber(pp spread, c *sets.Collection, ids []uint32, rank func(dst, src []uint32)) *sets.Collection {
	out := &sets.Collection{Offsets: make([]uint64, len(ids)+1)}
	for x, id := range ids {
		out.Offsets[x+1] = out.Offsets[x] + uint64(c.SetLen(int(id)))
	}
	out.Elements = large[uint32](int(out.Offsets[len(ids)]))
	workers := pp.threads
	if len(out.Elements) < pp.min {
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
