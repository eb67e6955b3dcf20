package simjoin

import (
	"context"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// The filters of Mann et al.'s framework, run on all cores. One side (R)
// is indexed: for each of its units (records, or for GroupJoin groups of
// records of equal size and equal probing prefixes), the elements of its
// indexing prefix list the unit. Each unit of the probing side (R again
// in a self-join) walks the lists of its probing prefix, restricted by the
// length filter to the units whose size can reach the threshold with its
// own (and in a self-join to the units before it), counts its candidates'
// common prefix elements, and verifies them. PPJoin and GroupJoin apply the
// positional filter to every list entry. The whole index is built first,
// so that probes are independent of one another: workers take contiguous
// runs of probes, in increasing order, and each keeps its own counters.

// units are the records of a side, or groups of them. A group is a run of
// consecutive records: the records of each size are in lexicographic
// order, so equal prefixes are adjacent.
type units struct {
	side *Side
	n    int
	// Unit u holds records [first[u], first[u+1]); first is nil when
	// units are records.
	first []uint32
	// size[u] is the size of unit u's records.
	size []uint32
	// sizeStart[n] is the first unit of size >= n, for n in
	// [0, side.MaxSize+1].
	sizeStart []uint32
	// info holds what verification needs first of each unit, in one
	// place: its first record's offset and size, and the last element of
	// its indexing prefix.
	info []unitInfo
}

type unitInfo struct {
	off, size, last uint32
}

// A record's bitmap has the bit hash(e) mod 64·w set for each of its
// elements e (the bitmap filter of Sandes, Teodoro and Melo, 2020): each bit
// set in one of two records' bitmaps and not in the other's stands for at
// least one element of their symmetric difference, so they share at most
// (|x| + |y| − popcount(x ⊕ y)) / 2 elements. Most pairs that pass Mann et
// al.'s bound, and most of the pairs of records that GroupJoin's pairs of
// groups expand to, fail it without their elements being read: on gcide at
// Jaccard 0.5, 96% of the 6.7 million pairs past the bound (16 four-bit
// counts by element modulo 16, the signature this replaced, rejected 45%);
// on tags-math-sx 91% of 76 million (81%). The width w, a power of two up
// to 8 words, grows with the records' average size (8 bits per element).

// bitmapWords returns the width in words of the bitmaps of records of avg
// elements on average.
func bitmapWords(avg float64) int {
	w := 1
	for w < 8 && float64(64*w) < 8*avg {
		w *= 2
	}
	return w
}

// setBitmap sets dst, of w words (a power of two), to rec's bitmap.
func setBitmap(dst []uint64, rec []uint32) {
	clear(dst)
	shift := 64 - 6 - bits.Len(uint(len(dst))-1) // 64·w bits
	for _, e := range rec {
		h := (uint64(e) + 1) * 0x9e3779b97f4a7c15 >> shift
		dst[h>>6] |= 1 << (h & 63)
	}
}

// bitBound returns the bound on the overlap of records of sizes a and b
// with bitmaps x and y.
func bitBound(x, y []uint64, a, b uint32) uint32 {
	d := 0
	y = y[:len(x)]
	for i, v := range x {
		d += bits.OnesCount64(v ^ y[i])
	}
	return (a + b - uint32(d)) / 2
}

func recordUnits(s *Side) *units {
	n := s.Len()
	us := &units{side: s, n: n, size: make([]uint32, n), sizeStart: s.SizeStart}
	for x := range n {
		us.size[x] = s.Off[x+1] - s.Off[x]
	}
	return us
}

// groupUnits groups the records of s that have equal sizes and equal
// probing prefixes (GroupJoin).
func groupUnits(s *Side, b *bounds) *units {
	n := s.Len()
	us := &units{side: s, sizeStart: make([]uint32, len(s.SizeStart))}
	for x := 0; x < n; {
		size := s.Size(x)
		p := b.probe[size]
		head := s.Record(x)[:p]
		y := x + 1
		for y < n && s.Size(y) == size && p > 0 && slices.Equal(s.Tok[s.Off[y]:s.Off[y]+p], head) {
			y++
		}
		us.first = append(us.first, uint32(x))
		us.size = append(us.size, size)
		us.sizeStart[size+1]++
		x = y
	}
	us.n = len(us.first)
	us.first = append(us.first, uint32(n))
	for i := 1; i < len(us.sizeStart); i++ {
		us.sizeStart[i] += us.sizeStart[i-1]
	}
	return us
}

// countGroups returns the number of groups that groupUnits would form.
func countGroups(s *Side, b *bounds) int {
	n := s.Len()
	if n == 0 {
		return 0
	}
	groups := 1
	for x := 1; x < n; x++ {
		size := s.Size(x)
		p := b.probe[size]
		if size != s.Size(x-1) || p == 0 || !slices.Equal(s.Tok[s.Off[x]:s.Off[x]+p], s.Tok[s.Off[x-1]:s.Off[x-1]+p]) {
			groups++
		}
	}
	return groups
}

// setInfo fills us.info for indexing prefixes of prefix[size] elements.
func (us *units) setInfo(prefix []uint32) {
	us.info = make([]unitInfo, us.n)
	s := us.side
	for u := range us.info {
		x := us.firstRecord(u)
		off, size := s.Off[x], us.size[u]
		last := uint32(0)
		if ip := prefix[size]; ip > 0 {
			last = s.Tok[off+ip-1]
		}
		us.info[u] = unitInfo{off, size, last}
	}
}

// firstRecord returns the first record of unit u.
func (us *units) firstRecord(u int) int {
	if us.first == nil {
		return u
	}
	return int(us.first[u])
}

// record returns the first record of unit u.
func (us *units) record(u int) []uint32 { return us.side.Record(us.firstRecord(u)) }

// records returns the range of records of unit u.
func (us *units) records(u int) (lo, hi int) {
	if us.first == nil {
		return u, u + 1
	}
	return int(us.first[u]), int(us.first[u+1])
}

// bounds are the threshold's consequences for each set size, up to the
// largest of either side.
type bounds struct {
	probe, index []uint32 // probing and indexing prefix lengths
	minSize      []uint32
	maxSize      []uint32
}

func newBounds(t Threshold, maxSize uint32) *bounds {
	n := int(maxSize) + 1
	b := &bounds{probe: make([]uint32, n), index: make([]uint32, n), minSize: make([]uint32, n), maxSize: make([]uint32, n)}
	for a := uint32(1); a <= maxSize; a++ {
		b.minSize[a] = t.MinSize(a)
		b.maxSize[a] = t.MaxSize(a)
		b.probe[a] = t.ProbePrefix(a)
		b.index[a] = t.IndexPrefix(a)
	}
	return b
}

// index lists, for each element, the indexed units whose indexing prefix
// holds it, in increasing order, and for the positional filter the
// element's position in the unit.
type index struct {
	start []uint32 // list of e: [start[e], start[e+1])
	ent   []entry
}

// entry is a list entry: a unit, the position of the element in it and
// the unit's size, which the positional filter reads together with the
// unit's counter (the candidates' other data stay out of the caches
// until they are verified).
type entry struct{ id, pos, size uint32 }

// span is a worker's part of a list that the length filter keeps: [k,
// end), the lower bound moving forward as the probes grow; next to each
// other, a probe reads both with one access.
type span struct{ k, end uint32 }

// spans returns each list of start's as a span.
func spans(start []uint32, dst []span) []span {
	n := len(start) - 1
	if cap(dst) < n {
		dst = make([]span, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = span{start[i], start[i+1]}
	}
	return dst
}

func buildIndex(threads int, us *units, universe int, unique uint32, prefix []uint32) *index {
	var entries int64
	for u := 0; u < us.n; u++ {
		entries += int64(prefix[us.size[u]])
	}
	// Contiguous runs of units, counted and filled on a thread each: a
	// list holds the entries of the first run, then the second's, and so
	// stays in increasing order.
	parts := 1
	if entries >= 1<<12 && int64(universe) <= entries {
		parts = max(1, min(threads, us.n))
	}
	counts := make([][]uint32, parts)
	cut := func(w int) (int, int) { return us.n * w / parts, us.n * (w + 1) / parts }
	chunks(parts, parts, entries, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			cnt := make([]uint32, universe)
			a, b := cut(w)
			for u := a; u < b; u++ {
				for _, e := range us.record(u)[:prefix[us.size[u]]] {
					if e >= unique {
						cnt[e]++
					}
				}
			}
			counts[w] = cnt
		}
	})
	x := &index{start: partStarts(counts, universe)}
	sum := x.start[universe]
	x.ent = make([]entry, sum)
	chunks(parts, parts, entries, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			fill := counts[w]
			a, b := cut(w)
			for u := a; u < b; u++ {
				for q, e := range us.record(u)[:prefix[us.size[u]]] {
					if e < unique {
						continue
					}
					x.ent[fill[e]] = entry{uint32(u), uint32(q), us.size[u]}
					fill[e]++
				}
			}
		}
	})
	return x
}

// partStarts turns counts[w][k], the items of key k in part w of a
// stream, into where part w's items of key k start in the stream sorted
// stably by key, and returns where each key's items start (n+1 values:
// the last is the total). Over ranges of keys on a goroutine each (a
// range's items, then where each range starts, then the positions) when
// n × parts is long for one thread.
func partStarts(counts [][]uint32, n int) []uint32 {
	start := make([]uint32, n+1)
	parts := len(counts)
	ranges := 1
	if parts > 1 && n >= 1<<14 {
		ranges = parts
	}
	base := make([]uint32, ranges+1)
	rangeOf := func(r int) (int, int) { return n * r / ranges, n * (r + 1) / ranges }
	chunks(ranges, ranges, int64(n*parts), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a, b := rangeOf(r)
			var sum uint32
			for _, cnt := range counts {
				for _, c := range cnt[a:b] {
					sum += c
				}
			}
			base[r+1] = sum
		}
	})
	for r := range ranges {
		base[r+1] += base[r]
	}
	chunks(ranges, ranges, int64(n*parts), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a, b := rangeOf(r)
			sum := base[r]
			for k := a; k < b; k++ {
				start[k] = sum
				for _, cnt := range counts {
					c := cnt[k]
					cnt[k] = sum
					sum += c
				}
			}
		}
	})
	start[n] = base[ranges]
	return start
}

// seekEntry returns the number of entries of ent, in increasing order of
// unit, below unit y.
func seekEntry(ent []entry, y uint32) int {
	lo, hi := 0, len(ent)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ent[m].id < y {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// join is one run of a filter.
type join struct {
	f          *filterData
	p          *Problem
	out        *Output
	b          *bounds
	idx        *units // the indexed side's units
	prb        *units // the probing side's units
	x          *index
	idxPrefix  []uint32 // indexing prefix length by size
	positional bool
	exact      bool // the caller wants every pair's overlap
	// probe1 is the prefix by size whose element lists a probe walks.
	probe1 []uint32
	// PairJoin's prefixes and pair index, and the range of records that
	// the index holds; nil for the other filters.
	pb   *pairBounds
	px   *pairIndex
	past []uint32
	// countLo and countHi are the records whose entries a sample counts
	// apart (pairRange).
	countLo, countHi     uint32
	pairRecLo, pairRecHi uint32
	// emit, when set, receives the pairs of records to verify instead of
	// verifying them (Candidates).
	emit func(*CandidateBatch) error
	// noBitmap leaves the bitmap filter out (Filter.NoBitmap): emit
	// receives every pair past Mann et al.'s bound.
	noBitmap bool
}

// b2u returns 1 for true and 0 for false (without a branch).
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// algorithm names a filter.
type algorithm int

const (
	allPairs algorithm = iota
	ppJoin
	groupJoin
	pairJoin
)

func newJoin(p *Problem, out *Output, alg algorithm) *join {
	j := &join{p: p, out: out, positional: alg != allPairs, exact: !out.CountOnly()}
	j.b = problemBounds(p)
	j.idxPrefix = indexPrefix(p, j.b)
	j.probe1 = j.b.probe
	f := filterIndex(p, alg == groupJoin)
	if alg == pairJoin {
		// PPJoin's index, and the pair index of the records that it
		// leaves to pairs: walks of element lists skip them.
		pd := pairData(p)
		f = pd.f
		j.pb, j.px, j.past = pd.pb, pd.px, pd.past
		j.probe1 = pd.pb.probe1
		if pd.pb.lo <= pd.pb.hi {
			j.pairRecLo, j.pairRecHi = p.R.SizeStart[pd.pb.lo], p.R.SizeStart[pd.pb.hi+1]
		}
	}
	j.f, j.idx, j.prb, j.x = f, f.idx, f.prb, f.x
	return j
}

// problemBounds returns the bounds for p's sizes, computed once.
func problemBounds(p *Problem) *bounds {
	return p.Memo("simjoin.bounds", func() any {
		return newBounds(p.Threshold, max(p.R.MaxSize, p.S.MaxSize))
	}).(*bounds)
}

// indexPrefix returns the indexing prefix length by size: a self-join
// probes in increasing size, so a probe's partners are never larger and
// the shorter indexing prefix suffices.
func indexPrefix(p *Problem, b *bounds) []uint32 {
	if p.Self {
		return b.index
	}
	return b.probe
}

// filterData is what a filter builds before probing: the units of both
// sides and the index, with positions (AllPairs ignores them).
type filterData struct {
	idx, prb *units
	x        *index
	mu       sync.Mutex
	free     []*prober // for the next run (getProber)
}

// pairFilter is PairJoin's: PPJoin's index (and probers), whose lists
// PairJoin walks for the records not indexed by pairs, the bounds and the
// pair index.
type pairFilter struct {
	f  *filterData
	pb *pairBounds
	px *pairIndex
	// past[e] is the first entry of e's element list past the records
	// indexed by pairs.
	past []uint32
}

// pairBoundsOf returns PairJoin's bounds for p, computed once.
func pairBoundsOf(p *Problem) *pairBounds {
	return p.Memo("simjoin.pairbounds", func() any {
		pairMax := uint32(defaultPairMax)
		if p.pairMax > 0 {
			pairMax = uint32(p.pairMax)
		}
		return newPairBounds(p, problemBounds(p), pairMax)
	}).(*pairBounds)
}

// pairData returns PairJoin's filter data, built once.
func pairData(p *Problem) *pairFilter {
	return p.Memo("simjoin.pairs", func() any {
		pb := pairBoundsOf(p)
		f := filterIndex(p, false)
		pf := &pairFilter{f: f, pb: pb, px: buildPairIndex(p.Threads, f.idx, p.Universe, p.Unique, pb)}
		if pb.lo <= pb.hi {
			hi := p.R.SizeStart[pb.hi+1]
			pf.past = make([]uint32, p.Universe)
			for e := range pf.past {
				lo, end := f.x.start[e], f.x.start[e+1]
				pf.past[e] = lo + uint32(seekEntry(f.x.ent[lo:end], hi))
			}
		}
		return pf
	}).(*pairFilter)
}

// filterIndex returns the units and index of p, by records or by groups,
// built once: the planner's estimates and the run share them.
func filterIndex(p *Problem, groups bool) *filterData {
	key := "simjoin.records"
	if groups {
		key = "simjoin.groups"
	}
	return p.Memo(key, func() any {
		b := problemBounds(p)
		f := &filterData{}
		if groups {
			f.idx = groupUnits(p.R, b)
			f.prb = f.idx
			if !p.Self {
				f.prb = groupUnits(p.S, b)
			}
		} else {
			f.idx = recordUnits(p.R)
			f.prb = f.idx
			if !p.Self {
				f.prb = recordUnits(p.S)
			}
		}
		f.x = buildIndex(p.Threads, f.idx, p.Universe, p.Unique, indexPrefix(p, b))
		f.idx.setInfo(indexPrefix(p, b))
		return f
	}).(*filterData)
}

// cand is where a probe met a candidate last: the positions of their
// last common prefix element in both.
type cand struct{ q, j uint32 }

// pruned marks a candidate that the positional filter removed.
const pruned = 1 << 31

// prober is one worker's state.
type prober struct {
	// cnt counts each unit's common prefix elements with the probe, with
	// the pruned bit; cand says where the last one was.
	cnt     []uint32
	cand    []cand
	touched []uint32
	lists   []span // by element: the entries the length filter keeps
	lists2  []span // by pair list, the same (PairJoin)
	// PairJoin's counters of the records indexed by pairs (see
	// probePairs), and the candidates among them.
	pcnt     []uint32
	ptouched []uint32
	// surv and psurv receive the candidates that filterCands and
	// filterPairs let through.
	surv  []survivor
	psurv []pairSurvivor
	need  []uint32 // MinOverlap(a, b) by b, for probes of size needA
	needA uint32
	// stop[q] is where the walk of the list of the probe's element q ends
	// (stop2 for the pair whose second element is q), pfx[b] the prefix
	// over which candidates of size b are counted (see setNeed).
	stop, stop2, pfx []uint32
	// stamp[e] is seq<<32 | e's position in the record last marked, if it
	// holds e: a short remainder is verified by looking its elements up.
	stamp   []uint64
	seq     uint64
	marked  bool // the probe's record is marked
	pending []pending
	batch   *CandidateBatch // for emit
	sink    uint32          // keeps the loads that bring list heads in
	// count, when set, counts the work of the probes (PairJoin's sample).
	count *probeCounts
}

// probeCounts is the work of some probes.
type probeCounts struct {
	entries, heads, cands int64 // element lists: entries walked, lists, candidates met
	merged, steps         int64 // pairs verified, elements of their remainders
	lengths               int64 // the elements of both records of those pairs
	// Pairs past Mann et al.'s bound that the prefix count does not
	// decide, and the elements of both records: what emit receives
	// without the bitmap filter.
	bounded, boundedLengths int64
	// PairJoin's pair lists: entries walked, lookups (first elements
	// and pairs), candidates met.
	pairEntries, lookups, pairCands int64
	// pairRange counts the element entries walked to records that
	// PairJoin would index by pairs.
	pairRange int64
}

// pending is a pair of groups to verify record by record.
type pending struct{ y, xs, ys, c, need uint32 }

// byStamps reports whether a remainder of n elements is verified by
// looking its elements up in the probe's stamps rather than by
// intersecting the whole sets with package intersect's kernels. Lookups
// win (BenchmarkVerify: 0.3 to 0.7 ns an element against 0.5 to 1 for the
// kernels over both sets) while the stamps, 8 bytes per distinct element,
// stay in the caches; over a large universe the kernels' sequential reads
// win for long remainders.
func (j *join) byStamps(n uint32) bool { return n <= 64 || j.p.Universe <= j.p.stampUniverse }

// mark stamps the elements of record x.
func (pr *prober) mark(x []uint32) {
	pr.seq++
	s := pr.seq << 32
	st := pr.stamp
	for i, e := range x {
		st[e] = s | uint64(i)
	}
}

// verifyMarked counts the elements of the remainder y that the marked
// record holds at positions xs or later, and returns c plus their number
// and whether that reaches need. It gives up, in blocks of 16 elements,
// once need is out of reach, and unless exact stops once it is reached.
func (pr *prober) verifyMarked(y []uint32, xs, c, need uint32, exact bool) (uint32, bool) {
	lo := pr.seq<<32 | uint64(xs)
	span := uint64(1)<<32 - uint64(xs)
	st := pr.stamp
	for len(y) > 0 {
		if c+uint32(len(y)) < need {
			return c, false
		}
		if c >= need && !exact {
			return c, true
		}
		blk := y[:min(16, len(y))]
		for _, e := range blk {
			if st[e]-lo < span {
				c++
			}
		}
		y = y[len(blk):]
	}
	return c, c >= need
}

// getProber returns a prober for j's index: one that an earlier run over
// the same index (the planner's sample) put back, with its cursors
// rewound, or a new one. Its counters are all zero: every probe clears
// those it raised.
func (j *join) getProber() *prober {
	f := j.f
	f.mu.Lock()
	var pr *prober
	if n := len(f.free); n > 0 {
		pr = f.free[n-1]
		f.free = f.free[:n-1]
	}
	f.mu.Unlock()
	if pr != nil {
		pr.lists = spans(j.x.start, pr.lists)
	} else {
		pr = &prober{cnt: make([]uint32, j.idx.n), cand: make([]cand, j.idx.n), touched: make([]uint32, 0, j.idx.n+1),
			lists: spans(j.x.start, nil), stamp: make([]uint64, j.p.Universe)}
	}
	pr.needA = 0 // the stops differ between filters
	// PairJoin's probers are PPJoin's with pair lists and counters.
	if j.px != nil {
		pr.lists2 = spans(j.px.start, pr.lists2)
		if n := int(j.pairRecHi - j.pairRecLo); len(pr.pcnt) < n || cap(pr.ptouched) < n+1 {
			pr.pcnt = make([]uint32, n)
			pr.ptouched = make([]uint32, 0, n+1)
		}
	}
	return pr
}

// putProber gives pr back for a later run over the same index.
func (j *join) putProber(pr *prober) {
	pr.batch = nil
	j.f.mu.Lock()
	j.f.free = append(j.f.free, pr)
	j.f.mu.Unlock()
}

// setNeed fills pr.need for probes of size a.
func (j *join) setNeed(pr *prober, a uint32) {
	if pr.needA == a {
		return
	}
	pr.needA = a
	hi := a
	if !j.p.Self {
		hi = min(j.b.maxSize[a], j.p.R.MaxSize)
	}
	if int(hi)+1 > len(pr.need) {
		pr.need = make([]uint32, int(hi)+1)
		pr.pfx = make([]uint32, int(hi)+1)
	}
	lo := j.b.minSize[a]
	for b := lo; b <= hi; b++ {
		pr.need[b] = j.p.Threshold.MinOverlap(a, b)
	}
	// A partner of size b shares its first element with the probe within
	// the probe's first a - need(a, b) + 1 elements (positional filter);
	// need grows with b. So the list of the element at position q can
	// only bring new candidates of sizes b with need(a, b) <= a - q: its
	// walk stops at stop[q]. A candidate of size b is counted over the
	// probe's first pfx[b] elements.
	pr.stop = j.stops(pr.stop, pr.need, a, lo, hi, j.probe1[a], 1)
	for b := lo; b <= hi; b++ {
		pr.pfx[b] = uint32(max(0, min(int(j.probe1[a]), int(a)-int(pr.need[b])+1)))
	}
	if j.pb != nil {
		// Pairs: (c1, c2) at position q: need(a, b) <= 2 + a - 1 - q.
		pr.stop2 = j.stops(pr.stop2, pr.need, a, lo, hi, j.pb.probe2[a], 2)
	}
}

// stops returns, for each position q of a probe of size a's prefix of p
// elements, the end of the units of sizes b in [lo, hi] whose first k
// common elements can end at q: need(a, b) <= a - q + k - 1.
func (j *join) stops(dst, need []uint32, a, lo, hi, p uint32, k int) []uint32 {
	if cap(dst) < int(p) {
		dst = make([]uint32, p)
	}
	dst = dst[:p]
	b := int(hi)
	for q := range dst {
		for b >= int(lo) && int(need[b]) > int(a)-q+k-1 {
			b--
		}
		if b < int(lo) {
			dst[q] = 0
		} else {
			dst[q] = j.idx.sizeStart[b+1]
		}
	}
	return dst
}

// run probes every unit of the probing side on p.Threads workers.
func (j *join) run(ctx context.Context) error {
	n := j.prb.n
	if n == 0 {
		return nil
	}
	// Runs of probes of about equal work: the entries of their prefix
	// lists, an upper bound of what they walk.
	weight := func(u int) int64 {
		a := j.prb.size[u]
		w := int64(1)
		xr := j.prb.record(u)
		for _, e := range xr[:j.probe1[a]] {
			w += int64(j.x.start[e+1] - j.x.start[e])
		}
		if j.pb != nil {
			// The entries of the pairs that start with each element: a
			// bound, which the lookups' cost makes no worse.
			px := j.px
			for _, e := range xr[:j.pb.probe2[a]] {
				w += 1 + int64(px.start[px.first[e+1]]-px.start[px.first[e]])
			}
		}
		return w
	}
	var total int64
	ws := make([]int64, n)
	for u := range n {
		ws[u] = weight(u)
		total += ws[u]
	}
	// The last eighth of the work in runs a quarter as long, so that the
	// workers finish close together (and an engine on another device,
	// told the work left, sees the end coming).
	parts := max(1, j.p.Threads*64)
	target := total/int64(parts) + 1
	cuts := []int{0}
	var acc, done int64
	for u := range n {
		acc += ws[u]
		t := target
		if done >= total-total/8 {
			t = target/4 + 1
		}
		if acc >= t {
			cuts = append(cuts, u+1)
			done += acc
			acc = 0
		}
	}
	if cuts[len(cuts)-1] != n {
		cuts = append(cuts, n)
	}
	tasks := len(cuts) - 1
	var next atomic.Int64
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	workers := max(1, min(j.p.Threads, tasks))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := j.getProber()
			defer j.putProber(pr)
			if j.emit != nil {
				pr.batch = &CandidateBatch{Starts: []uint32{0}}
			}
			w := j.out.Writer()
			defer w.Close()
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				if err := ctx.Err(); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if j.out.Err() != nil {
					return
				}
				var records int64
				for u := cuts[t]; u < cuts[t+1]; u++ {
					j.probe(pr, u, w)
					lo, hi := j.prb.records(u)
					records += int64(hi - lo)
					if j.emit != nil && (len(pr.batch.Cands) >= batchCands || u+1 == cuts[t+1]) {
						pr.batch.Left = float64(max(0, tasks-int(next.Load()))) / float64(tasks)
						if err := pr.batch.flush(j.emit); err != nil {
							j.out.fail(err)
							return
						}
					}
				}
				j.out.Progress(records)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// probe finds and verifies the candidates of probing unit u.
func (j *join) probe(pr *prober, u int, w *Writer) {
	a := j.prb.size[u]
	p := j.probe1[a]
	var p2 uint32
	if j.pb != nil {
		p2 = j.pb.probe2[a]
	}
	if p == 0 && p2 == 0 {
		return
	}
	xr := j.prb.record(u)
	j.setNeed(pr, a)
	if j.p.Self && j.prb.first != nil {
		j.withinGroup(pr, u, a, p, w)
	}
	minSize := j.b.minSize[a]
	if minSize > j.p.R.MaxSize {
		return
	}
	lo := j.idx.sizeStart[minSize]
	end := uint32(u)
	if !j.p.Self {
		end = j.idx.sizeStart[min(j.b.maxSize[a], j.p.R.MaxSize)+1]
	}
	if lo >= end {
		return
	}
	x := j.x
	touched := pr.touched[:0]
	cnt, cands := pr.cnt, pr.cand
	need := pr.need
	// touched has room for every unit and one more: candidates are written past
	// its end and kept by moving the end (positional filter below).
	touched = touched[:cap(touched)]
	nt := 0
	unique := j.p.Unique
	// PairJoin leaves the records of [pairRecLo, pairRecHi) to pair
	// lists: a walk ends before them (at end1) and goes on past them
	// (from lo2) when partners lie beyond.
	end1, lo2 := end, end
	if j.pairRecLo < j.pairRecHi && lo < j.pairRecHi && j.pairRecLo < end {
		end1, lo2 = max(lo, j.pairRecLo), max(lo, j.pairRecHi)
	}
	var walked uint32
	// The heads of the next probe's lists, asked for now: they arrive
	// while this probe works.
	if next := u + 1; next < j.prb.n {
		prefetchHeads(j.prb.record(next)[:j.probe1[j.prb.size[next]]], pr.lists, x.ent)
	}
	// The head of every list first: their cache misses, independent of
	// one another, overlap instead of coming one after the other.
	var sink uint32
	for _, e := range xr[:p] {
		if sp := pr.lists[e]; sp.k < sp.end {
			sink += x.ent[sp.k].id
		}
	}
	pr.sink = sink
	stopq := pr.stop
	for q, e := range xr[:p] {
		if e < unique {
			continue // in this record only: nothing to walk
		}
		stopAt := stopq[q]
		if stopAt <= lo {
			continue
		}
		sp := &pr.lists[e]
		k, hi := sp.k, sp.end
		if k == hi {
			continue
		}
		ent := x.ent[:hi]
		for k < hi && ent[k].id < lo {
			k++
		}
		sp.k = k
		walked -= k
		k0 := k
		if j.positional {
			stop := min(end1, stopAt)
			for {
				n, added := walkPositional(ent[k:hi], stop, cnt, cands, need, touched[nt:], a-uint32(q), uint32(q))
				k += uint32(n)
				nt += added
				if stop >= end || stop >= stopAt || lo2 >= min(end, stopAt) || k == hi {
					break
				}
				// Past PairJoin's records.
				walked += k
				k = max(k, j.past[e])
				walked -= k
				stop = min(end, stopAt)
			}
		} else {
			stop := min(end, stopAt)
			for ; k < hi; k++ {
				y := ent[k].id
				if y >= stop {
					break
				}
				c := cnt[y]
				if c == 0 {
					touched[nt] = y
					nt++
				}
				cnt[y] = c + 1
				cands[y].q = uint32(q)
			}
		}
		walked += k
		if pr.count != nil && j.countLo < j.countHi {
			// The entries of the records that PairJoin would index by
			// pairs (PPJoin's sample; see pairEstimate).
			seg := ent[k0:k]
			pr.count.pairRange += int64(seekEntry(seg, j.countHi) - seekEntry(seg, j.countLo))
		}
	}
	touched = touched[:nt]
	if pr.count != nil {
		pr.count.entries += int64(walked)
		pr.count.heads += int64(p)
		pr.count.cands += int64(len(touched))
	}
	if p2 > 0 {
		lo2 := max(lo, j.idx.sizeStart[j.pb.from2[a]])
		if end2 := min(end, j.pairRecHi); lo2 < end2 {
			j.probePairs(pr, xr, a, lo2, end2)
		}
	}
	pr.touched = touched
	pr.marked = false
	pr.pending = pr.pending[:0]
	// Groups compare their records' bitmaps one by one.
	var xbits []uint64
	if j.prb.first == nil && !j.noBitmap {
		xbits = j.prb.side.bitmap(u)
		// The candidates' info and bitmaps, read below in an order that
		// no cache predicts: asked for all at once, their misses overlap.
		prefetchUnits(touched, j.idx.info, j.idx.side.bits, j.idx.side.words)
	}
	if xbits != nil && pr.count == nil {
		// Records with bitmaps, not sampled: the bounds by a kernel,
		// the few candidates left here.
		if cap(pr.surv) < len(touched) {
			pr.surv = make([]survivor, 2*len(touched))
		}
		m := filterCands(touched, cnt, cands, j.idx.info, j.idx.side.bits, j.idx.side.words, need, pr.pfx, j.idxPrefix, xr, a, j.positional, xbits, pr.surv[:len(touched)])
		for _, sv := range pr.surv[:m] {
			j.settle(pr, u, w, xr, sv.y, sv.c, sv.xs, sv.ys)
		}
	} else {
		for _, y := range touched {
			c := cnt[y]
			cnt[y] = 0
			if c&pruned != 0 {
				continue
			}
			cd := cands[y]
			yi := j.idx.info[y]
			b := yi.size
			nd := need[b]
			xs, ys := unknown(xr, pr.pfx, j.idxPrefix, j.positional, cd, yi, c)
			if c+min(a-xs, b-ys) < nd {
				continue
			}
			if pr.count != nil && (c < nd || j.exact) {
				pr.count.bounded++
				pr.count.boundedLengths += int64(a + b)
			}
			if xbits != nil && bitBound(xbits, j.idx.side.bitmap(int(y)), a, b) < nd {
				continue
			}
			j.settle(pr, u, w, xr, y, c, xs, ys)
		}
	}
	if len(pr.pending) > 0 {
		j.verifyGroups(pr, u, w)
	}
	if len(pr.ptouched) > 0 {
		j.verifyPairs(pr, u, xr, xbits, w)
	}
}

// survivor is a candidate past the bounds (filterCands): unit y, with
// c common prefix elements, whose unknown common elements lie at
// positions xs or later in the probe and ys or later in y.
type survivor struct{ y, c, xs, ys uint32 }

// unknown returns where the unknown common elements of the probe xr and
// the unit of info yi, met last at cd with c common prefix elements, can
// be (Mann et al.): past the prefix that ends first, and past the last
// common element on the other side. The probe's prefix, for the unit's
// size b, is its first pfx[b] elements; the unit's indexing prefix
// idxPrefix[b].
func unknown(xr, pfx, idxPrefix []uint32, positional bool, cd cand, yi unitInfo, c uint32) (xs, ys uint32) {
	b := yi.size
	pb := pfx[b]
	if xr[pb-1] > yi.last {
		return cd.q + 1, idxPrefix[b]
	}
	if positional {
		return pb, cd.j + 1
	}
	return pb, c // the c-th common element is at c-1 or later
}

// settle decides candidate unit y of probing unit u past the bounds: c
// common prefix elements, the unknown ones at xs and ys or later.
func (j *join) settle(pr *prober, u int, w *Writer, xr []uint32, y, c, xs, ys uint32) {
	yi := j.idx.info[y]
	a, b := uint32(len(xr)), yi.size // the probe's record is its unit's size
	nd := pr.need[b]
	if c >= nd && !j.exact {
		// Similar, whatever the rest: count without merging.
		if j.prb.first == nil {
			w.Add(int(y), u, c) // R is indexed, S probes
		} else {
			w.addUnits(j.idx, int(y), j.prb, u)
		}
		return
	}
	if j.prb.first != nil {
		pr.pending = append(pr.pending, pending{y, xs, ys, c, nd})
		return
	}
	if j.emit != nil {
		pr.batch.add(uint32(u), y, nd)
		return
	}
	if pr.count != nil {
		pr.count.merged++
		pr.count.steps += int64(b - ys)
		pr.count.lengths += int64(a + b)
	}
	var v uint32
	var ok bool
	if j.byStamps(b - ys) {
		if !pr.marked {
			pr.mark(xr)
			pr.marked = true
		}
		v, ok = pr.verifyMarked(j.idx.side.Tok[yi.off+ys:yi.off+b], xs, c, nd, j.exact)
	} else {
		v, ok = verifySets(j.prb.side.Set(j.prb.firstRecord(u)), j.idx.side.Set(int(y)), nd, j.exact)
	}
	if ok {
		w.Add(int(y), u, v) // R is indexed, S probes
	}
}

// verifyGroups verifies the pairs of records of probing group u and the
// groups pending, record by record of u.
func (j *join) verifyGroups(pr *prober, u int, w *Writer) {
	px, py := j.prb.side, j.idx.side
	xlo, xhi := j.prb.records(u)
	for rx := xlo; rx < xhi; rx++ {
		if j.emit == nil {
			pr.mark(px.Record(rx))
		}
		bx := px.bitmap(rx)
		a := px.Size(rx)
		for _, pd := range pr.pending {
			ylo, yhi := j.idx.records(int(pd.y))
			for ry := ylo; ry < yhi; ry++ {
				if !j.noBitmap && bitBound(bx, py.bitmap(ry), a, py.Size(ry)) < pd.need {
					continue
				}
				if j.emit != nil {
					pr.batch.add(uint32(rx), uint32(ry), pd.need)
					continue
				}
				yr := py.Tok[py.Off[ry]+pd.ys : py.Off[ry+1]]
				var v uint32
				var ok bool
				if j.byStamps(uint32(len(yr))) {
					v, ok = pr.verifyMarked(yr, pd.xs, pd.c, pd.need, j.exact)
				} else {
					v, ok = verifySets(px.Set(rx), py.Set(ry), pd.need, j.exact)
				}
				if ok {
					w.Add(ry, rx, v)
				}
			}
		}
	}
}

// withinGroup verifies the pairs of records of a group of a self-join:
// their probing prefixes, p elements, are equal.
func (j *join) withinGroup(pr *prober, u int, a, p uint32, w *Writer) {
	lo, hi := j.prb.records(u)
	if hi-lo < 2 {
		return
	}
	need := pr.need[a]
	s := j.prb.side
	for rx := lo; rx < hi; rx++ {
		short := j.byStamps(a - p)
		if short && j.emit == nil {
			pr.mark(s.Record(rx))
		}
		bx := s.bitmap(rx)
		for ry := rx + 1; ry < hi; ry++ {
			if !j.noBitmap && bitBound(bx, s.bitmap(ry), a, a) < need {
				continue
			}
			if j.emit != nil {
				pr.batch.add(uint32(rx), uint32(ry), need)
				continue
			}
			var v uint32
			var ok bool
			if short {
				v, ok = pr.verifyMarked(s.Tok[s.Off[ry]+p:s.Off[ry+1]], p, p, need, j.exact)
			} else {
				v, ok = verifySets(s.Set(rx), s.Set(ry), need, j.exact)
			}
			if ok {
				w.Add(rx, ry, v)
			}
		}
	}
}
