package simjoin

// PairJoin is PPJoin whose small records are indexed by pairs of elements
// rather than by elements: the k = 2 case of the k-wise prefix filter (Wang,
// Xiao, Lin and Zhang, "Leveraging Set Relations in Exact Set Similarity
// Join", PVLDB 2017). If x and y share at least α ≥ 2 elements, their two
// smallest common elements c1 < c2 lie among the first |x| − α + 2 elements
// of x and the first |y| − α + 2 of y (at least α − 2 common elements
// follow c2 in both), so the pairs of elements of those pair prefixes meet.
// Where elements are few and frequent (sets of a few tags over a small
// vocabulary), a pair is far rarer than either of its elements: the lists
// walked are much shorter, and a candidate met once shares two elements.
//
// The records of sizes [lo, hi] (those whose every partner needs α ≥ 2, up
// to a size that keeps the number of pairs small) are indexed by the pairs
// of their pair prefixes; the others by their indexing prefixes, as PPJoin
// does. A probe walks the element lists of its prefix for partners of the
// second kind and the pair lists of its pair prefix for partners of the
// first. The pairs of a probe are enumerated in lexicographic order of
// their positions, so the first pair that meets a candidate is (c1, c2):
// the positional filter applies there (what follows c2 on the shorter side,
// plus 2, must reach α), and the overlap is 2 plus that of what follows c2
// on both sides.

// pairBounds are a pair join's prefixes by size.
type pairBounds struct {
	// Records of sizes [lo, hi] are indexed by pairs (none when lo > hi).
	lo, hi uint32
	// prefix2 is the pair prefix by size (0 for sizes not indexed by
	// pairs).
	prefix2 []uint32
	// probe1[a] is the prefix whose element lists a probe of size a walks
	// (0 when all its partners are indexed by pairs); probe2[a] the pair
	// prefix whose pair lists it walks (0 when none of its partners is),
	// from2[a] the smallest size of those.
	probe1, probe2, from2 []uint32
}

// defaultPairMax is the largest record size indexed by pairs when the
// planner does not choose: a record of 16 elements at Jaccard 0.5 has a
// pair prefix of 8 elements, 28 pairs.
const defaultPairMax = 16

// maxPairSize bounds the sizes indexed by pairs, whose positions and
// sizes the lists keep in 8 bits each; maxPairPrefix bounds a probe's pair
// prefix, whose pairs it looks up (496 at most), so that the hits of a
// candidate count in 16 bits.
const (
	maxPairSize   = 255
	maxPairPrefix = 32
)

// newPairBounds returns the prefixes of a pair join over p whose records
// up to pairMax elements are indexed by pairs.
func newPairBounds(p *Problem, b *bounds, pairMax uint32) *pairBounds {
	t := p.Threshold
	n := len(b.probe) // sizes [0, n)
	pb := &pairBounds{prefix2: make([]uint32, n),
		probe1: make([]uint32, n), probe2: make([]uint32, n), from2: make([]uint32, n)}
	idx := indexPrefix(p, b)
	// The least overlap of an indexed record of size s with any partner:
	// its partners are not smaller in a self-join; in R × S they are at
	// least MinSize(s). It grows with s.
	alpha := func(s uint32) uint32 {
		if p.Self {
			return t.MinOverlap(s, s)
		}
		return t.MinOverlap(b.minSize[s], s)
	}
	pb.lo = uint32(n)
	for s := uint32(1); s < uint32(n); s++ {
		if idx[s] > 0 && alpha(s) >= 2 {
			pb.lo = s
			break
		}
	}
	pb.hi = min(pairMax, maxPairSize, uint32(n-1), p.R.MaxSize)
	// The partners' sizes of a probe of size a: [from, to].
	partners := func(a uint32) (from, to uint32) {
		from, to = b.minSize[a], a
		if !p.Self {
			to = b.maxSize[a]
		}
		return from, min(to, p.R.MaxSize)
	}
	// No probe's pair prefix may be longer than maxPairPrefix: lower hi
	// below the partners of those whose would be.
	for a := uint32(1); a < uint32(n); a++ {
		from, to := partners(a)
		if b.probe[a] == 0 || from > to {
			continue
		}
		if lo := max(from, pb.lo); lo <= min(to, pb.hi) && a-t.MinOverlap(a, lo)+2 > maxPairPrefix {
			pb.hi = lo - 1
		}
	}
	for s := pb.lo; s <= pb.hi; s++ {
		pb.prefix2[s] = s - alpha(s) + 2
	}
	for a := uint32(1); a < uint32(n); a++ {
		from, to := partners(a)
		if b.probe[a] == 0 || from > to {
			continue
		}
		if lo, hi := max(from, pb.lo), min(to, pb.hi); lo <= hi {
			pb.from2[a] = lo
			pb.probe2[a] = min(a, a-t.MinOverlap(a, lo)+2)
		}
		// The smallest partner indexed by elements.
		s1 := from
		if pb.lo <= from && from <= pb.hi {
			s1 = pb.hi + 1
		}
		if s1 <= to {
			pb.probe1[a] = a - t.MinOverlap(a, s1) + 1
		}
	}
	return pb
}

// pairIndex lists, for each pair of elements e1 < e2 of the pair prefixes
// of the records it indexes, the records whose pair prefix holds both, in
// increasing order, with the position of e2 in each and its size
// (position | size<<8: sizes indexed by pairs are below 256): the pairs of e1 are
// the directory entries [first[e1], first[e1+1]), in increasing order of
// their second element.
type pairIndex struct {
	first  []uint32 // by element
	second []uint32 // by directory entry: e2
	start  []uint32 // by directory entry: its list is [start[k], start[k+1])
	ent    []entry
}

// buildPairIndex indexes the pairs of the records of us of sizes [lo, hi]
// (their first prefix2[size] elements, those sorted), leaving out pairs
// with an element of one record only (below unique), on up to threads
// goroutines.
func buildPairIndex(threads int, us *units, universe int, unique uint32, pb *pairBounds) *pairIndex {
	px := &pairIndex{first: make([]uint32, universe+1), start: []uint32{0}}
	if pb.lo > pb.hi {
		return px
	}
	s := us.side
	recLo, recHi := int(s.SizeStart[pb.lo]), int(s.SizeStart[pb.hi+1])
	// pairPrefix returns the elements of record y's pair prefix that pairs
	// hold (those of one record only left out): its pairs are those of
	// r[i], r[j], i < j, at position j+skip of the record.
	pairPrefix := func(y int) (r []uint32, skip uint32) {
		r = s.Record(y)
		r = r[:pb.prefix2[len(r)]]
		i := 0
		for i < len(r) && r[i] < unique {
			i++
		}
		return r[i:], uint32(i)
	}
	// Contiguous runs of records of about equal pairs, a part each.
	var total int64
	for y := recLo; y < recHi; y++ {
		r, _ := pairPrefix(y)
		total += int64(len(r) * (len(r) - 1) / 2)
	}
	parts := 1
	if total >= 1<<14 {
		parts = max(1, min(threads, recHi-recLo))
	}
	cuts := []int{recLo}
	var acc int64
	for y := recLo; y < recHi && len(cuts) < parts; y++ {
		r, _ := pairPrefix(y)
		acc += int64(len(r) * (len(r) - 1) / 2)
		if acc*int64(parts) >= total*int64(len(cuts)) {
			cuts = append(cuts, y+1)
		}
	}
	cuts = append(cuts, recHi)
	parts = len(cuts) - 1
	// A stable counting sort by e2, then by e1: lists in order of (e1,
	// e2), each in increasing record order. First by e2, each part
	// counting and then placing its records' pairs.
	counts2 := make([][]uint32, parts)
	chunks(parts, parts, total, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			cnt := make([]uint32, universe)
			for y := cuts[w]; y < cuts[w+1]; y++ {
				r, _ := pairPrefix(y)
				for j := 1; j < len(r); j++ {
					cnt[r[j]] += uint32(j)
				}
			}
			counts2[w] = cnt
		}
	})
	off2 := partStarts(counts2, universe)
	n := off2[universe]
	e1s, ys, js := make([]uint32, n), make([]uint32, n), make([]uint32, n)
	chunks(parts, parts, total, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			fill := counts2[w]
			for y := cuts[w]; y < cuts[w+1]; y++ {
				r, skip := pairPrefix(y)
				size := uint32(len(s.Record(y))) << 8
				for i := range r {
					for j := i + 1; j < len(r); j++ {
						k := fill[r[j]]
						fill[r[j]]++
						e1s[k], ys[k], js[k] = r[i], uint32(y), (uint32(j)+skip)|size
					}
				}
			}
		}
	})
	// Then by e1, over parts of the pairs sorted by e2.
	cut := func(w int) (uint32, uint32) {
		return uint32(int64(n) * int64(w) / int64(parts)), uint32(int64(n) * int64(w+1) / int64(parts))
	}
	counts1 := make([][]uint32, parts)
	chunks(parts, parts, total, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			cnt := make([]uint32, universe)
			a, b := cut(w)
			for _, e1 := range e1s[a:b] {
				cnt[e1]++
			}
			counts1[w] = cnt
		}
	})
	off1 := partStarts(counts1, universe)
	px.ent = make([]entry, n)
	seconds := make([]uint32, n)
	chunks(parts, parts, total, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			at := counts1[w]
			a, b := cut(w)
			// The e2 of position a onwards, found by a search and
			// moved along.
			e2 := uint32(sortSearch(off2, a))
			for k := a; k < b; k++ {
				for off2[e2+1] <= k {
					e2++
				}
				e1 := e1s[k]
				d := at[e1]
				at[e1]++
				px.ent[d], seconds[d] = entry{ys[k], js[k], 0}, e2
			}
		}
	})
	// The directory: each e1's entries are [off1[e1], off1[e1+1]), in
	// increasing order of e2.
	px.second = make([]uint32, 0, n/2+1)
	px.start = make([]uint32, 0, n/2+2)
	var d uint32
	for e1 := 0; e1 < universe; e1++ {
		px.first[e1] = uint32(len(px.second))
		for end := off1[e1+1]; d < end; {
			e2 := seconds[d]
			px.second = append(px.second, e2)
			px.start = append(px.start, d)
			for d < end && seconds[d] == e2 {
				d++
			}
		}
	}
	px.first[universe] = uint32(len(px.second))
	px.start = append(px.start, d)
	return px
}

// sortSearch returns the key whose items, by start (as partStarts
// returns it), hold position k: the last key starting at or before k.
func sortSearch(start []uint32, k uint32) int {
	lo, hi := 0, len(start)-1 // start[lo] <= k < start[hi] once narrowed
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if start[m] <= k {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// lists returns the number of pair lists.
func (px *pairIndex) lists() int { return len(px.second) }

// seek returns the first directory entry in [d, end) whose second element
// is at least e, or end.
func (px *pairIndex) seek(d, end, e uint32) uint32 {
	sec := px.second
	if end-d <= 8 {
		for d < end && sec[d] < e {
			d++
		}
		return d
	}
	for d < end {
		m := d + (end-d)/2
		if sec[m] < e {
			d = m + 1
		} else {
			end = m
		}
	}
	return d
}

// pairsShared returns the largest m with m(m-1)/2 <= hits: a pair
// candidate met by hits pairs shares at least m elements.
func pairsShared(hits uint32) uint32 {
	m := uint32(2)
	for (m+1)*m/2 <= hits {
		m++
	}
	return m
}

// probePairs walks the pair lists of the pair prefix of a probe of size
// a for the candidates in [lo, end), counting them in pr.pcnt and listing
// them in pr.ptouched: hits<<16 | jx<<8 | jy, the number of pairs met and
// the positions of the first in the probe and in the candidate.
func (j *join) probePairs(pr *prober, xr []uint32, a uint32, lo, end uint32) {
	px := j.px
	pre := xr[:j.pb.probe2[a]]
	pr.ptouched = pr.ptouched[:0]
	if len(pre) < 2 {
		return
	}
	need := pr.need
	unique := j.p.Unique
	ent := px.ent
	lists := pr.lists2
	base := j.pairRecLo
	pcnt := pr.pcnt
	// Room for every record indexed by pairs and one more: new
	// candidates are written past the end, kept by moving it.
	touched := pr.ptouched[:cap(pr.ptouched)]
	nt := 0
	var walked, lookups uint32
	// Each element's directory first, all at once: the cache misses
	// overlap.
	sink := pr.sink
	for _, e1 := range pre[:len(pre)-1] {
		if d := px.first[e1]; d < px.first[e1+1] {
			sink += px.second[d]
		}
	}
	pr.sink = sink
	for i := 0; i+1 < len(pre); i++ {
		e1 := pre[i]
		if e1 < unique {
			continue
		}
		d, dEnd := px.first[e1], px.first[e1+1]
		lookups++
		for jx := i + 1; jx < len(pre) && d < dEnd; jx++ {
			lookups++
			e2 := pre[jx]
			if px.second[d] < e2 {
				d = px.seek(d+1, dEnd, e2)
				if d == dEnd {
					break
				}
			}
			if px.second[d] != e2 {
				continue
			}
			// Sizes whose first pair can end at jx (setNeed).
			stop := min(end, pr.stop2[jx])
			if stop <= lo {
				d++
				continue
			}
			sp := &lists[d]
			k, hi := sp.k, sp.end
			for k < hi && ent[k].id < lo {
				k++
			}
			sp.k = k
			walked -= k
			n, added := walkPairs(ent[k:hi], stop, pcnt, base, need, touched[nt:], a-1-uint32(jx), uint32(jx)<<8|1<<16)
			k += uint32(n)
			nt += added
			walked += k
			d++
		}
	}
	touched = touched[:nt]
	pr.ptouched = touched
	if pr.count != nil {
		pr.count.pairEntries += int64(walked)
		pr.count.lookups += int64(lookups)
		pr.count.pairCands += int64(len(touched))
	}
}

// verifyPairs decides the pair candidates of probe u and clears their
// counters.
func (j *join) verifyPairs(pr *prober, u int, xr []uint32, xbits []uint64, w *Writer) {
	base := j.pairRecLo
	need := pr.need
	info := j.idx.info
	if xbits != nil && pr.count == nil {
		// Not sampled, with bitmaps: the bounds by a kernel.
		if cap(pr.psurv) < len(pr.ptouched) {
			pr.psurv = make([]pairSurvivor, 2*len(pr.ptouched))
		}
		m := filterPairs(pr.ptouched, pr.pcnt, base, info, j.idx.side.bits, j.idx.side.words, need, uint32(len(xr)), j.exact, xbits, pr.psurv[:len(pr.ptouched)])
		for _, sv := range pr.psurv[:m] {
			if sv.direct != 0 {
				w.Add(int(sv.y), u, need[info[sv.y].size]) // similar whatever the rest
				continue
			}
			j.settlePair(pr, u, xr, sv.y, sv.c, w)
		}
		pr.ptouched = pr.ptouched[:0]
		return
	}
	for _, y := range pr.ptouched {
		c := pr.pcnt[y-base]
		pr.pcnt[y-base] = 0
		b := info[y].size
		nd := need[b]
		if !j.exact && pairsShared(c>>16) >= nd {
			w.Add(int(y), u, nd) // similar whatever the rest
			continue
		}
		if pr.count != nil {
			pr.count.bounded++
			pr.count.boundedLengths += int64(uint32(len(xr)) + b)
		}
		if xbits != nil && bitBound(xbits, j.idx.side.bitmap(int(y)), uint32(len(xr)), b) < nd {
			continue
		}
		j.settlePair(pr, u, xr, y, c, w)
	}
	pr.ptouched = pr.ptouched[:0]
}

// settlePair verifies PairJoin candidate y of probe u past the bounds,
// with count c (hits<<16 | jx<<8 | jy).
func (j *join) settlePair(pr *prober, u int, xr []uint32, y, c uint32, w *Writer) {
	jx, jy := c>>8&0xff, c&0xff
	yi := &j.idx.info[y]
	b := yi.size
	nd := pr.need[b]
	if j.emit != nil {
		pr.batch.add(uint32(u), y, nd)
		return
	}
	if pr.count != nil {
		pr.count.merged++
		pr.count.steps += int64(b - jy - 1)
		pr.count.lengths += int64(uint32(len(xr)) + b)
	}
	var v uint32
	var ok bool
	if j.byStamps(b - jy - 1) {
		if !pr.marked {
			pr.mark(xr)
			pr.marked = true
		}
		v, ok = pr.verifyMarked(j.idx.side.Tok[yi.off+jy+1:yi.off+b], jx+1, 2, nd, j.exact)
	} else {
		v, ok = verifySets(j.prb.side.Set(u), j.idx.side.Set(int(y)), nd, j.exact)
	}
	if ok {
		w.Add(int(y), u, v)
	}
}
