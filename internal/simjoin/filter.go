package simjoin

import (
	"context"
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

// units are the records of a side, or groups of them.
type units struct {
	side *Side
	n    int
	// first[u] is the first record of unit u, whose elements (the probing
	// prefix) all its records share; nil when units are records.
	first []uint32
	// Records of group u: members[memOff[u]:memOff[u+1]].
	memOff, members []uint32
	// size[u] is the size of unit u's records.
	size []uint32
	// sizeStart[n] is the first unit of size >= n, for n in
	// [0, side.MaxSize+1].
	sizeStart []uint32
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
// probing prefixes (GroupJoin), the groups in increasing size.
func groupUnits(s *Side, b *bounds) *units {
	n := s.Len()
	us := &units{side: s, sizeStart: make([]uint32, len(s.SizeStart))}
	order := make([]uint32, n)
	for x := range order {
		order[x] = uint32(x)
	}
	// Within each size, order the records by their prefixes so that equal
	// ones are adjacent.
	for size := uint32(1); size <= s.MaxSize; size++ {
		lo, hi := s.SizeStart[size], s.SizeStart[size+1]
		p := b.probe[size]
		if hi-lo < 2 || p == 0 {
			continue
		}
		slices.SortStableFunc(order[lo:hi], func(a, c uint32) int {
			return slices.Compare(s.Record(int(a))[:p], s.Record(int(c))[:p])
		})
	}
	us.memOff = []uint32{0}
	for i := 0; i < n; {
		x := order[i]
		size := s.Size(int(x))
		p := b.probe[size]
		j := i + 1
		for j < n && s.Size(int(order[j])) == size && p > 0 && slices.Equal(s.Record(int(order[j]))[:p], s.Record(int(x))[:p]) {
			j++
		}
		us.first = append(us.first, x)
		us.members = append(us.members, order[i:j]...)
		us.memOff = append(us.memOff, uint32(j))
		us.size = append(us.size, size)
		i = j
	}
	us.n = len(us.first)
	// sizeStart by counting the groups of each size.
	for _, size := range us.size {
		us.sizeStart[size+1]++
	}
	for i := 1; i < len(us.sizeStart); i++ {
		us.sizeStart[i] += us.sizeStart[i-1]
	}
	return us
}

// record returns the first record of unit u.
func (us *units) record(u int) []uint32 {
	x := u
	if us.first != nil {
		x = int(us.first[u])
	}
	return us.side.Record(x)
}

// recordsOf returns the records of unit u.
func (us *units) recordsOf(u int) []uint32 {
	if us.first == nil {
		return nil
	}
	return us.members[us.memOff[u]:us.memOff[u+1]]
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
// holds it, in increasing order, with the element's position in the unit
// when the filter is positional.
type index struct {
	start []uint32 // list of e: [start[e], start[e+1])
	ids   []uint32
	pos   []uint32
}

func buildIndex(us *units, universe int, prefix []uint32, positional bool) *index {
	x := &index{start: make([]uint32, universe+1)}
	for u := 0; u < us.n; u++ {
		for _, e := range us.record(u)[:prefix[us.size[u]]] {
			x.start[e+1]++
		}
	}
	for e := 1; e <= universe; e++ {
		x.start[e] += x.start[e-1]
	}
	fill := slices.Clone(x.start[:universe])
	x.ids = make([]uint32, x.start[universe])
	if positional {
		x.pos = make([]uint32, len(x.ids))
	}
	for u := 0; u < us.n; u++ {
		for q, e := range us.record(u)[:prefix[us.size[u]]] {
			k := fill[e]
			x.ids[k] = uint32(u)
			if positional {
				x.pos[k] = uint32(q)
			}
			fill[e]++
		}
	}
	return x
}

// join is one run of a filter.
type join struct {
	p          *Problem
	out        *Output
	b          *bounds
	idx        *units // the indexed side's units
	prb        *units // the probing side's units
	x          *index
	idxPrefix  []uint32 // indexing prefix length by size
	positional bool
	exact      bool // the caller wants every pair's overlap
}

// algorithm names a filter.
type algorithm int

const (
	allPairs algorithm = iota
	ppJoin
	groupJoin
)

func newJoin(p *Problem, out *Output, alg algorithm) *join {
	j := &join{p: p, out: out, positional: alg != allPairs, exact: !out.CountOnly()}
	j.b = problemBounds(p)
	j.idxPrefix = indexPrefix(p, j.b)
	f := filterIndex(p, alg == groupJoin)
	j.idx, j.prb, j.x = f.idx, f.prb, f.x
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
		f.x = buildIndex(f.idx, p.Universe, indexPrefix(p, b), true)
		return f
	}).(*filterData)
}

// cand is a probe's count of common prefix elements with an indexed unit,
// and the positions of the last one in both.
type cand struct{ cnt, q, j uint32 }

// pruned marks a candidate that the positional filter removed.
const pruned = 1 << 31

// prober is one worker's state.
type prober struct {
	cand    []cand
	touched []uint32
	cursor  []uint32 // by element: the first list entry the length filter keeps
	need    []uint32 // MinOverlap(a, b) by b, for probes of size needA
	needA   uint32
}

func (j *join) newProber() *prober {
	return &prober{cand: make([]cand, j.idx.n), cursor: slices.Clone(j.x.start[:j.p.Universe])}
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
	}
	for b := j.b.minSize[a]; b <= hi; b++ {
		pr.need[b] = j.p.Threshold.MinOverlap(a, b)
	}
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
		for _, e := range j.prb.record(u)[:j.b.probe[a]] {
			w += int64(j.x.start[e+1] - j.x.start[e])
		}
		return w
	}
	var total int64
	ws := make([]int64, n)
	for u := range n {
		ws[u] = weight(u)
		total += ws[u]
	}
	parts := max(1, j.p.Threads*64)
	target := total/int64(parts) + 1
	cuts := []int{0}
	var acc int64
	for u := range n {
		acc += ws[u]
		if acc >= target {
			cuts = append(cuts, u+1)
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
			pr := j.newProber()
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
					if j.prb.first != nil {
						records += int64(j.prb.memOff[u+1] - j.prb.memOff[u])
					} else {
						records++
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
	p := j.b.probe[a]
	if p == 0 {
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
	cands := pr.cand
	for q, e := range xr[:p] {
		k, hi := pr.cursor[e], x.start[e+1]
		for k < hi && x.ids[k] < lo {
			k++
		}
		pr.cursor[e] = k
		if j.positional {
			need, size := pr.need, j.idx.size
			for ; k < hi; k++ {
				y := x.ids[k]
				if y >= end {
					break
				}
				cd := &cands[y]
				c := cd.cnt
				if c&pruned != 0 {
					continue
				}
				b := size[y]
				jy := x.pos[k]
				if c+min(a-uint32(q), b-jy) < need[b] {
					if c != 0 {
						cd.cnt = c | pruned
					}
					continue
				}
				if c == 0 {
					touched = append(touched, y)
				}
				*cd = cand{c + 1, uint32(q), jy}
			}
		} else {
			for ; k < hi; k++ {
				y := x.ids[k]
				if y >= end {
					break
				}
				cd := &cands[y]
				if cd.cnt == 0 {
					touched = append(touched, y)
				}
				cd.cnt++
				cd.q = uint32(q)
			}
		}
	}
	pr.touched = touched
	for _, y := range touched {
		cd := cands[y]
		cands[y] = cand{}
		if cd.cnt&pruned != 0 {
			continue
		}
		j.verifyUnits(pr, u, int(y), xr, a, p, cd, w)
	}
}

// verifyUnits verifies the pairs of records of probing unit u and indexed
// unit y, which share cd.cnt prefix elements.
func (j *join) verifyUnits(pr *prober, u, y int, xr []uint32, a, p uint32, cd cand, w *Writer) {
	b := j.idx.size[y]
	need := pr.need[b]
	yr := j.idx.record(y)
	ip := j.idxPrefix[b]
	c := cd.cnt
	// Where the unknown common elements can be (Mann et al.): past the
	// prefix that ends first, and past the last common element on the
	// other side.
	var xs, ys uint32
	if xr[p-1] > yr[ip-1] {
		xs, ys = cd.q+1, ip
	} else {
		xs = p
		if j.positional {
			ys = cd.j + 1
		} else {
			ys = c // the c-th common element is at c-1 or later
		}
	}
	if c+min(a-xs, b-ys) < need {
		return
	}
	if j.prb.first == nil {
		if v, ok := verify(xr[xs:], yr[ys:], c, need, j.exact); ok {
			w.Add(y, u, v) // R is indexed, S probes
		}
		return
	}
	px, py := j.prb.side, j.idx.side
	for _, rx := range j.prb.recordsOf(u) {
		xt := px.Record(int(rx))[xs:]
		for _, ry := range j.idx.recordsOf(y) {
			if v, ok := verify(xt, py.Record(int(ry))[ys:], c, need, j.exact); ok {
				w.Add(int(ry), int(rx), v)
			}
		}
	}
}

// withinGroup verifies the pairs of records of a group of a self-join:
// their probing prefixes, p elements, are equal.
func (j *join) withinGroup(pr *prober, u int, a, p uint32, w *Writer) {
	ms := j.prb.recordsOf(u)
	if len(ms) < 2 {
		return
	}
	need := pr.need[a]
	s := j.prb.side
	for i, rx := range ms {
		xt := s.Record(int(rx))[p:]
		for _, ry := range ms[i+1:] {
			if v, ok := verify(xt, s.Record(int(ry))[p:], p, need, j.exact); ok {
				w.Add(int(ry), int(rx), v)
			}
		}
	}
}
