package allpairs

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// mmJoin is MMJoin's split (Deep et al., as in section 4.1 of Bellas &
// Gounaris, "Exploiting GPUs for fast intersection of large sets"): sets of
// at least Δ1 elements are heavy, and so are the elements whose lists among
// the heavy sets are long. Pairs of heavy sets get the counts of the heavy
// elements from a bit-packed matrix product and the rest from the inverted
// index; every other pair comes from the index alone. The optimiser picks
// Δ1 and the heavy elements that minimise the calibrated cost, so the engine
// is scan-count when nothing is worth a matrix column, and close to the
// plain matrix product on dense data. The index skips, for heavy probes, the
// heavy sets in the lists of heavy elements: those are the only increments
// the product replaces, and they are the expensive ones.
type mmJoin struct{ cpuEngine }

func init() { Register(mmJoin{cpuEngine{"mmjoin"}}) }

// MMJoinSplit is MMJoin's partition of a problem.
type MMJoinSplit struct {
	// Delta1 is Δ1: sets of at least Delta1 elements are heavy.
	Delta1 int
	// Columns are the heavy elements, increasing: the columns of the
	// product of the heavy sets.
	Columns []uint32
	// HeavyR and HeavyS are the positions in Problem.R and Problem.S of
	// the heavy sets, increasing; the product's rows and columns follow
	// this order. HeavyS aliases HeavyR in a self-join.
	HeavyR, HeavyS []uint32
	// Seconds is the optimiser's estimate on the problem's CPU threads,
	// for the product's cost that it was given.
	Seconds float64

	pairsHH      int64 // pairs of heavy sets
	saved        int64 // index increments the product replaces
	elementMajor bool  // run the index part element by element
}

// ReadsAfterDiagonal reports which entries of the heavy product RunMMJoin
// reads in a self-join: true, those of each row's columns after it (the
// element-major layout reports a set with the sets after it, first rows
// first); false, those before it (the probe-major layout, which reads the
// last rows first). In a join it reads every entry, rows in order.
func (sp *MMJoinSplit) ReadsAfterDiagonal() bool { return sp.elementMajor }

// WithElementMajor returns a copy of sp whose index part runs element by
// element (em) or probe by probe. Both layouts report the same pairs: a
// device engine's tests run its product under each.
func (sp *MMJoinSplit) WithElementMajor(em bool) *MMJoinSplit {
	c := *sp
	c.elementMajor = em
	return &c
}

// HeavyProduct computes a block of the product of the heavy sets over the
// heavy elements: dst[x*cols+y] = |HeavyR[row0+x] ∩ HeavyS[col0+y] ∩
// Columns|. In a self-join RunMMJoin reads only the entries on one side of
// the diagonal, (i, j) with j < i, or j > i where the split's
// ReadsAfterDiagonal: the others may be left unset. It is called from
// several goroutines at once.
type HeavyProduct func(ctx context.Context, row0, rows, col0, cols int, dst []uint32) error

func (mmJoin) Estimate(p *Problem) (Estimate, error) {
	if _, _, ok := p.Tiled(); ok {
		return Estimate{}, cannot("reports pairs, not dense tiles")
	}
	st := &p.Stats
	if st.R.Elements+st.S.Elements >= math.MaxUint32 {
		return Estimate{}, cannot("over 2^32 elements")
	}
	sp := planSplit(p, costs.wordMM, costs.pairMM, costs.bitmapMap)
	words := int64(math.Ceil(sp.cols / 64))
	n := st.R.Elements
	if !p.Self {
		n += st.S.Elements
	}
	heavy := sp.heavyR
	if !p.Self {
		heavy += sp.heavyS
	}
	mem := 4*int64(p.Universe)*2 + 12*n + 8*words*int64(heavy) + int64(p.Threads)*(4*int64(st.S.Sets)+1<<20)
	if sp.delta1 == math.MaxInt {
		return Estimate{Seconds: cpuSeconds(p, sp.ns), Memory: mem, Detail: "nothing heavy: scan-count"}, nil
	}
	detail := fmt.Sprintf("heavy: sets >= %d elements (%d", sp.delta1, sp.heavyR)
	if !p.Self {
		detail += fmt.Sprintf(" x %d", sp.heavyS)
	}
	about := ""
	if sp.sampled {
		about = "about "
	}
	detail += fmt.Sprintf("), %s%.0f elements", about, sp.cols)
	return Estimate{Seconds: cpuSeconds(p, sp.ns), Memory: mem, Detail: detail}, nil
}

// PlanMMJoin returns the split that minimises the estimated time when the
// product of the heavy sets costs wordNS nanoseconds per pair of 64-bit
// words and pairNS per pair (single-thread CPU nanoseconds, or a device's
// time scaled alike), and the index part runs on the CPU. A faster product
// makes more elements heavy. Splits are memoised per problem and costs.
func PlanMMJoin(p *Problem, wordNS, pairNS float64) *MMJoinSplit {
	return planMMJoin(p, wordNS, pairNS, 0)
}

// planMMJoin is PlanMMJoin with the cost of mapping the heavy sets'
// occurrences into bitmaps on the CPU: the CPU's own product pays it.
func planMMJoin(p *Problem, wordNS, pairNS, mapNS float64) *MMJoinSplit {
	key := fmt.Sprintf("allpairs.mmjoin/%g/%g/%g", wordNS, pairNS, mapNS)
	return p.Memo(key, func() any {
		return materialise(p, planSplit(p, wordNS, pairNS, mapNS), splitCostsOf(p, wordNS, pairNS, mapNS))
	}).(*MMJoinSplit)
}

// optimiseSplit is PlanMMJoin without the memo.
func optimiseSplit(p *Problem, wordNS, pairNS float64) *MMJoinSplit {
	return materialise(p, optimise(p, wordNS, pairNS, 0), splitCostsOf(p, wordNS, pairNS, 0))
}

// heavyIDs returns the positions of the n sets of c with at least delta1
// elements.
func heavyIDs(c *sets.Collection, delta1, n int) []uint32 {
	ids := make([]uint32, 0, n)
	for i := 0; i < c.Len(); i++ {
		if c.SetLen(i) >= delta1 {
			ids = append(ids, uint32(i))
		}
	}
	return ids
}

// countHeavy returns the number of sets of c with at least delta1
// elements, from the positions of c's sets largest first.
func countHeavy(c *sets.Collection, order []uint32, delta1 int) int {
	return sort.Search(len(order), func(x int) bool { return c.SetLen(int(order[x])) < delta1 })
}

// sizeSums are prefix sums of set sizes and of their squares.
type sizeSums struct{ sum, sq int64 }

// sizePrefix returns the prefix sums of the sizes of c's sets in order.
func sizePrefix(c *sets.Collection, order []uint32) []sizeSums {
	p := make([]sizeSums, len(order)+1)
	for x, i := range order {
		n := int64(c.SetLen(int(i)))
		p[x+1] = sizeSums{p[x].sum + n, p[x].sq + n*n}
	}
	return p
}

// bySizeDesc returns the positions of c's sets, largest first (ties by
// position): a counting sort on the sizes when they are small next to the
// number of sets, otherwise a sort of (size, position) keys.
func bySizeDesc(c *sets.Collection) []uint32 {
	k := c.Len()
	order := make([]uint32, k)
	if k == 0 {
		return order
	}
	off := c.Offsets[:k+1]
	maxSize := uint64(0)
	for i := 0; i < k; i++ {
		maxSize = max(maxSize, off[i+1]-off[i])
	}
	if maxSize <= 4*uint64(k)+1024 {
		// Counting sort, larger sizes first.
		start := make([]int, maxSize+2)
		for i := 0; i < k; i++ {
			start[maxSize-(off[i+1]-off[i])+1]++
		}
		for x := 1; x < len(start); x++ {
			start[x] += start[x-1]
		}
		for i := 0; i < k; i++ {
			b := maxSize - (off[i+1] - off[i])
			order[start[b]] = uint32(i)
			start[b]++
		}
		return order
	}
	keys := make([]uint64, k)
	for i := 0; i < k; i++ {
		keys[i] = (maxSize-(off[i+1]-off[i]))<<32 | uint64(i)
	}
	slices.Sort(keys)
	for x, key := range keys {
		order[x] = uint32(key)
	}
	return order
}

// lightFirst returns the sets of c reordered light ones first (each group
// in its original order), the original position of each, and the number of
// light sets.
func lightFirst(c *sets.Collection, delta1 int) (*sets.Collection, []uint32, int) {
	k := c.Len()
	perm := make([]uint32, 0, k)
	for i := 0; i < k; i++ {
		if c.SetLen(i) < delta1 {
			perm = append(perm, uint32(i))
		}
	}
	nl := len(perm)
	for i := 0; i < k; i++ {
		if c.SetLen(i) >= delta1 {
			perm = append(perm, uint32(i))
		}
	}
	if nl == 0 || nl == k {
		return c, perm, nl // the order is the original one: no copy
	}
	out := &sets.Collection{Offsets: make([]uint64, k+1), Elements: make([]uint32, 0, len(c.Elements))}
	for x, i := range perm {
		out.Elements = append(out.Elements, c.Set(int(i))...)
		out.Offsets[x+1] = uint64(len(out.Elements))
	}
	return out, perm, nl
}

// mmParts is what a run of the split needs.
type mmParts struct {
	p      *Problem
	r, s   *sets.Collection // reordered light-first (s == r in a self-join)
	permR  []uint32
	permS  []uint32
	lightR int
	lightS int
	x      *index // over s; in a self-join with ranks
	// lim[q] is how much of the list of the element at position q of r a
	// probe walks: in a self-join the ranked prefix, for R × S the whole
	// list; but for a heavy element of a heavy probe only the light sets
	// at the head of the list, since the product counts the heavy ones.
	// In a self-join lim is the index's rank array, patched.
	lim []uint32
	// product computes the heavy sets' counts over the heavy elements;
	// nil if nothing is heavy.
	product    HeavyProduct
	lightFirst bool
	// needR and needS are the thresholds of the sets in internal order.
	needR, needS []uint32
}

func (mmJoin) Run(ctx context.Context, p *Problem, out *Output) error {
	return RunMMJoin(ctx, p, out, planMMJoin(p, costs.wordMM, costs.pairMM, costs.bitmapMap), nil)
}

// RunMMJoin runs a split of p: the index part on the CPU's p.Threads
// workers, and the counts of the heavy elements for pairs of heavy sets from
// product, or from the CPU's bit-packed product if product is nil. A device
// engine (a GPU's matrix product) passes its own product, which may compute
// ahead: the light probes, which need no product, then run first.
func RunMMJoin(ctx context.Context, p *Problem, out *Output, sp *MMJoinSplit, product HeavyProduct) error {
	m := &mmParts{p: p, product: product, lightFirst: product != nil}
	m.r, m.permR, m.lightR = lightFirst(p.R, sp.Delta1)
	m.s, m.permS, m.lightS = m.r, m.permR, m.lightR
	if !p.Self {
		m.s, m.permS, m.lightS = lightFirst(p.S, sp.Delta1)
	}
	m.x = buildIndex(p.Threads, m.s, p.Universe, p.DFS, p.Self && !sp.elementMajor)
	m.needR = make([]uint32, len(m.permR))
	for x, i := range m.permR {
		m.needR[x] = p.NeedR(int(i))
	}
	m.needS = m.needR
	if !p.Self {
		m.needS = make([]uint32, len(m.permS))
		for x, j := range m.permS {
			m.needS[x] = p.NeedS(int(j))
		}
	}
	colOf := newColumnMap(p.Universe, sp.Columns)
	lightEnd := make([]uint32, len(sp.Columns))
	for c, e := range sp.Columns {
		lightEnd[c] = uint32(lowerBound(m.x.list(e), uint32(m.lightS)))
	}
	if sp.elementMajor {
		return m.runElementMajor(ctx, out, sp, colOf)
	}
	if p.Self {
		m.lim = m.x.rank
	} else {
		m.lim = make([]uint32, len(m.r.Elements))
		for q, e := range m.r.Elements {
			m.lim[q] = m.x.start[e+1] - m.x.start[e]
		}
	}
	if len(sp.Columns) == 0 {
		m.product = nil
	} else {
		// Heavy probes walk only the light sets of the lists of heavy
		// elements; the product counts the rest.
		heavyR := &sets.Collection{Offsets: m.r.Offsets[m.lightR:], Elements: m.r.Elements}
		patch := func(q uint64, e uint32) int {
			c := colOf.col(e)
			if c >= 0 {
				m.lim[q] = lightEnd[c]
			}
			return c
		}
		if product != nil {
			parallelSets(p.Threads, heavyR, func(q uint64, e uint32) { patch(q, e) })
		} else {
			bmR := buildBitmaps(p.Threads, heavyR, len(sp.Columns), patch)
			bmS := bmR
			if !p.Self {
				heavyS := &sets.Collection{Offsets: m.s.Offsets[m.lightS:], Elements: m.s.Elements}
				bmS = buildBitmaps(p.Threads, heavyS, len(sp.Columns), func(_ uint64, e uint32) int { return colOf.col(e) })
			}
			m.product = cpuProduct(bmR, bmS)
		}
	}
	if p.Self {
		return m.runSelf(ctx, out)
	}
	return m.runCross(ctx, out)
}

// cpuProduct is the heavy product on the CPU: the AND-popcounts of rows of
// a with columns of b, by blocks of columns whose bitmaps stay in L2 while
// every row of the band meets them (as mm's blocks do), since a band's
// columns may be megabytes of bitmaps.
func cpuProduct(a, b *bitmaps) HeavyProduct {
	bw := max(4, mmColBytes/(8*max(1, min(a.words, chunkWords)))&^3)
	var pool sync.Pool
	return func(_ context.Context, row0, rows, col0, cols int, dst []uint32) error {
		dst = dst[:rows*cols]
		clear(dst)
		if cols <= bw {
			bitProduct(&Tile{Row0: row0, Col0: col0, Rows: rows, Cols: cols, Counts: dst}, false, a, b)
			return nil
		}
		tmp, _ := pool.Get().(*[]uint32)
		if tmp == nil || cap(*tmp) < rows*bw {
			tmp = new(make([]uint32, rows*bw))
		}
		for y := 0; y < cols; y += bw {
			w := min(bw, cols-y)
			t := Tile{Row0: row0, Col0: col0 + y, Rows: rows, Cols: w, Counts: (*tmp)[:rows*w]}
			clear(t.Counts)
			bitProduct(&t, false, a, b)
			for x := 0; x < rows; x++ {
				copy(dst[x*cols+y:x*cols+y+w], t.Counts[x*w:(x+1)*w])
			}
		}
		pool.Put(tmp)
		return nil
	}
}

// parallelSets calls fn for every element of c (a view), with its position,
// on up to threads goroutines.
func parallelSets(threads int, c *sets.Collection, fn func(q uint64, e uint32)) {
	k := c.Len()
	workers := max(1, min(threads, k/64))
	bounds := splitEven(c.Offsets, workers)
	par.Do(workers, func(w int) {
		lo, hi := c.Offsets[bounds[w]], c.Offsets[bounds[w+1]]
		for q := lo; q < hi; q++ {
			fn(q, c.Elements[q])
		}
	})
}

// add reports internal pair (ri, sj), which reached its threshold, in the
// caller's order.
func (m *mmParts) add(wr *Writer, ri, sj int, v uint32) {
	a, b := int(m.permR[ri]), int(m.permS[sj])
	if m.p.Self && a > b {
		a, b = b, a
	}
	wr.Add(a, b, v)
}

// probe counts the overlaps of r's set i through the limited lists, and
// returns the number of increments.
func (m *mmParts) probe(i int, cnt []uint32) int64 {
	c, x := m.r, m.x
	lo, hi := c.Offsets[i], c.Offsets[i+1]
	lim := m.lim[lo:hi]
	var work int64
	for q, e := range c.Elements[lo:hi] {
		s := x.start[e]
		l := x.post[s : s+lim[q]]
		work += int64(len(l))
		for _, j := range l {
			cnt[j]++
		}
	}
	return work
}

// emitLight reports probe i's pairs with the light sets of s (the sets
// below light), from the counters or, when few were touched, by walking the
// lists again; it zeroes those counters.
func (m *mmParts) emitLight(wr *Writer, i int, cnt []uint32, light int, work int64) {
	p, c, x := m.p, m.r, m.x
	if !p.zero && work*sparseFactor < int64(light) {
		lo, hi := c.Offsets[i], c.Offsets[i+1]
		lim := m.lim[lo:hi]
		ni := m.needR[i]
		for q, e := range c.Elements[lo:hi] {
			s := x.start[e]
			for _, j := range x.post[s : s+lim[q]] {
				if int(j) >= light {
					break // lists are increasing: the rest are heavy sets
				}
				if v := cnt[j]; v != 0 {
					if v >= ni || v >= m.needS[j] {
						m.add(wr, i, int(j), v)
					}
					cnt[j] = 0
				}
			}
		}
		return
	}
	m.emitDense(wr, i, cnt[:light], 0, nil)
}

// emitDense reports probe i's pairs with the sets j0+jj of s, whose counts
// are row[jj] (plus prod[jj] if prod is not nil), and zeroes row.
func (m *mmParts) emitDense(wr *Writer, i int, row []uint32, j0 int, prod []uint32) {
	if prod != nil {
		prod = prod[:len(row)]
		for jj, v := range prod {
			row[jj] += v
		}
	}
	need, constant := m.p.ConstNeed()
	switch {
	case constant && wr.CountOnly():
		var n int64
		for _, v := range row {
			if v >= need {
				n++
			}
		}
		wr.AddCount(n)
	case constant:
		for jj, v := range row {
			if v >= need {
				m.add(wr, i, j0+jj, v)
			}
		}
	default:
		ni := m.needR[i]
		ns := m.needS[j0 : j0+len(row)]
		for jj, v := range row {
			if v >= ni || v >= ns[jj] {
				m.add(wr, i, j0+jj, v)
			}
		}
	}
	clear(row)
}

// withLight adds to the tasks of heavy probes those of the n light probes
// of c, split by the list entries they walk plus report(i), the cost of
// reporting probe i: first where a device computes the product ahead
// (lightFirst), last otherwise.
func (m *mmParts) withLight(heavy []span, c *sets.Collection, n int, report func(i int) int64) []span {
	light := splitWork(n, m.p.Threads*tasksPerThread, func(i int) int64 {
		var w int64
		for _, l := range m.lim[c.Offsets[i]:c.Offsets[i+1]] {
			w += int64(l)
		}
		return w + report(i)
	})
	if m.lightFirst {
		return append(light, heavy...)
	}
	return append(heavy, light...)
}

func (m *mmParts) runSelf(ctx context.Context, out *Output) error {
	p, c := m.p, m.r
	k, nl := c.Len(), m.lightR
	nh := k - nl
	// Tasks: bands of heavy probes (the product, then the index), heaviest
	// first, then spans of light probes.
	var tasks []span
	if nh > 0 {
		band := max(1, min((1<<18)/nh, nh/(tasksPerThread*p.Threads)))
		for c0 := k; c0 > nl; c0 -= band {
			tasks = append(tasks, span{max(nl, c0-band), c0})
		}
	}
	if nl > 1 {
		tasks = m.withLight(tasks, c, nl, func(i int) int64 { return int64(i) / 8 })
	}
	counters := make([][]uint32, p.Threads)
	tiles := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(tasks), p.Threads, func(w, t int) error {
		if counters[w] == nil {
			counters[w] = make([]uint32, k)
		}
		cnt := counters[w]
		wr := out.Writer()
		defer wr.Close()
		sp := tasks[t]
		var pairs int64
		if sp.lo < nl {
			for i := sp.lo; i < sp.hi; i++ {
				work := m.probe(i, cnt)
				m.emitLight(wr, i, cnt, i, work)
				pairs += int64(i)
			}
			out.Progress(pairs)
			return out.Err()
		}
		// The product of the band's probes (rows) with the heavy sets
		// before them (columns), so that a probe's products are contiguous.
		c0, c1 := sp.lo, sp.hi
		tl := Tile{Row0: c0 - nl, Col0: 0, Rows: c1 - c0, Cols: c1 - 1 - nl}
		if tl.Cols > 0 && m.product != nil {
			if cap(tiles[w]) < tl.Rows*tl.Cols {
				tiles[w] = make([]uint32, tl.Rows*tl.Cols)
			}
			tl.Counts = tiles[w][:tl.Rows*tl.Cols]
			if err := m.product(ctx, tl.Row0, tl.Rows, tl.Col0, tl.Cols, tl.Counts); err != nil {
				return err
			}
		}
		for i := c0; i < c1; i++ {
			work := m.probe(i, cnt)
			m.emitLight(wr, i, cnt, nl, work)
			var prod []uint32
			if tl.Counts != nil {
				prod = tl.Counts[(i-c0)*tl.Cols:]
			}
			m.emitDense(wr, i, cnt[nl:i], nl, prod)
			pairs += int64(i)
		}
		out.Progress(pairs)
		return out.Err()
	})
}

func (m *mmParts) runCross(ctx context.Context, out *Output) error {
	p, r := m.p, m.r
	kr, ks := r.Len(), m.s.Len()
	nlr, nls := m.lightR, m.lightS
	nhr, nhs := kr-nlr, ks-nls
	var tasks []span
	if nhr > 0 {
		band := max(1, min((1<<18)/max(nhs, 1), nhr/(tasksPerThread*p.Threads)))
		for r0 := nlr; r0 < kr; r0 += band {
			tasks = append(tasks, span{r0, min(kr, r0+band)})
		}
	}
	if nlr > 0 {
		tasks = m.withLight(tasks, r, nlr, func(int) int64 { return int64(ks) / 8 })
	}
	counters := make([][]uint32, p.Threads)
	tiles := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(tasks), p.Threads, func(w, t int) error {
		if counters[w] == nil {
			counters[w] = make([]uint32, ks)
		}
		cnt := counters[w]
		wr := out.Writer()
		defer wr.Close()
		sp := tasks[t]
		heavy := sp.lo >= nlr
		var tl Tile
		if heavy && nhs > 0 && m.product != nil {
			tl = Tile{Row0: sp.lo - nlr, Col0: 0, Rows: sp.hi - sp.lo, Cols: nhs}
			if cap(tiles[w]) < tl.Rows*tl.Cols {
				tiles[w] = make([]uint32, tl.Rows*tl.Cols)
			}
			tl.Counts = tiles[w][:tl.Rows*tl.Cols]
			if err := m.product(ctx, tl.Row0, tl.Rows, tl.Col0, tl.Cols, tl.Counts); err != nil {
				return err
			}
		}
		for i := sp.lo; i < sp.hi; i++ {
			work := m.probe(i, cnt)
			if !heavy {
				m.emitLight(wr, i, cnt, ks, work)
				continue
			}
			m.emitLight(wr, i, cnt, nls, work)
			var prod []uint32
			if tl.Counts != nil {
				prod = tl.Counts[(i-sp.lo)*nhs:]
			}
			m.emitDense(wr, i, cnt[nls:ks], nls, prod)
		}
		out.Progress(int64(sp.hi-sp.lo) * int64(ks))
		return out.Err()
	})
}

// runElementMajor runs the index part element by element into a private
// matrix of all the pairs per worker (see scanPrivate): the lists of light
// elements add to every pair, those of heavy elements only to the pairs
// with a light set (the head of each list, as light sets come first). When
// reporting, the rows of heavy sets get the product's counts for their
// heavy columns, a band of rows at a time.
func (m *mmParts) runElementMajor(ctx context.Context, out *Output, sp *MMJoinSplit, colOf *columnMap) error {
	p := m.p
	kr, ks := m.r.Len(), m.s.Len()
	nlr, nls := m.lightR, m.lightS
	nhs := ks - nls
	xs, xr := m.x, m.x
	if !p.Self {
		xr = buildIndex(p.Threads, m.r, p.Universe, p.DFR, false)
	}
	if len(sp.Columns) > 0 && m.product == nil {
		heavyR := &sets.Collection{Offsets: m.r.Offsets[nlr:], Elements: m.r.Elements}
		col := func(_ uint64, e uint32) int { return colOf.col(e) }
		bmR := buildBitmaps(p.Threads, heavyR, len(sp.Columns), col)
		bmS := bmR
		if !p.Self {
			bmS = buildBitmaps(p.Threads, &sets.Collection{Offsets: m.s.Offsets[nls:], Elements: m.s.Elements}, len(sp.Columns), col)
		}
		m.product = cpuProduct(bmR, bmS)
	}
	spans := splitWork(p.Universe, p.Threads*tasksPerThread, func(e int) int64 { return elementWork(p, e) + 8 })
	mats := make([][]uint32, p.Threads)
	total := max(p.Stats.ScanWork, 1)
	err := par.Tasks(ctx, len(spans), p.Threads, func(w, t int) error {
		if mats[w] == nil {
			mats[w] = make([]uint32, kr*ks)
		}
		mat := mats[w]
		var work int64
		for e := spans[t].lo; e < spans[t].hi; e++ {
			ls := xs.list(uint32(e))
			if len(ls) == 0 {
				continue
			}
			heavy := colOf.has(uint32(e))
			if p.Self {
				n := len(ls) // the first elements of pairs
				if heavy {
					n = lowerBound(ls, uint32(nlr))
				}
				for a, ja := range ls[:n] {
					row := mat[int(ja)*ks : int(ja+1)*ks]
					for _, jb := range ls[a+1:] {
						row[jb]++
					}
				}
				work += int64(len(ls)) * int64(len(ls)-1) / 2
				continue
			}
			lr := xr.list(uint32(e))
			split := len(lr)
			lightS := ls
			if heavy {
				split = lowerBound(lr, uint32(nlr))
				lightS = ls[:lowerBound(ls, uint32(nls))]
			}
			for x, ja := range lr {
				row := mat[int(ja)*ks : int(ja+1)*ks]
				l := ls
				if x >= split {
					l = lightS // heavy × heavy comes from the product
				}
				for _, jb := range l {
					row[jb]++
				}
			}
			work += int64(len(lr)) * int64(len(ls))
		}
		out.Progress(p.Stats.Pairs / 2 * work / total)
		return out.Err()
	})
	if err != nil {
		return err
	}
	used := allocated(mats)
	// Report in spans of rows; heavy rows take the product in bands.
	const band = 64
	var tasks []span
	for a := 0; a < kr; {
		hi := min(kr, a+max(1, kr/(p.Threads*tasksPerThread)))
		if a >= nlr {
			hi = min(kr, a+band)
		} else if hi > nlr {
			hi = nlr
		}
		tasks = append(tasks, span{a, hi})
		a = hi
	}
	sums := make([][]uint32, p.Threads)
	prods := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(tasks), p.Threads, func(w, t int) error {
		wr := out.Writer()
		defer wr.Close()
		a0, a1 := tasks[t].lo, tasks[t].hi
		// The band's product covers the heavy columns its rows report: in a
		// self-join those after its first row only (half the work).
		var prod []uint32
		c0 := 0
		if p.Self {
			c0 = min(nhs, max(0, a0+1-nlr))
		}
		pcols := nhs - c0
		if a0 >= nlr && pcols > 0 && m.product != nil {
			n := (a1 - a0) * pcols
			if cap(prods[w]) < n {
				prods[w] = make([]uint32, n)
			}
			prod = prods[w][:n]
			if err := m.product(ctx, a0-nlr, a1-a0, c0, pcols, prod); err != nil {
				return err
			}
		}
		var pairs int64
		for a := a0; a < a1; a++ {
			b0 := 0
			if p.Self {
				b0 = a + 1
			}
			row := sumRow(used, a, b0, ks, &sums[w])
			pairs += int64(ks - b0)
			if prod == nil {
				m.emitDense(wr, a, row, b0, nil)
				continue
			}
			split := max(b0, nls)
			m.emitDense(wr, a, row[:split-b0], b0, nil)
			m.emitDense(wr, a, row[split-b0:], split, prod[(a-a0)*pcols+split-nls-c0:])
		}
		out.Progress(pairs - pairs/2)
		return out.Err()
	})
}

// columnMap maps the heavy elements to their matrix columns: a bitmap of
// the heavy elements with the count of heavy elements before each word. It
// takes 1/24 of the memory of a table of int32, so that mapping the
// elements of every heavy set stays in cache.
type columnMap struct {
	bits []uint64
	rank []uint32
}

// newColumnMap maps cols[c] to c; cols is increasing.
func newColumnMap(universe int, cols []uint32) *columnMap {
	words := (universe + 63) / 64
	m := &columnMap{bits: make([]uint64, words), rank: make([]uint32, words+1)}
	for _, e := range cols {
		m.bits[e>>6] |= 1 << (e & 63)
	}
	for w, b := range m.bits {
		m.rank[w+1] = m.rank[w] + uint32(bits.OnesCount64(b))
	}
	return m
}

func (m *columnMap) has(e uint32) bool { return m.bits[e>>6]>>(e&63)&1 != 0 }

// col returns e's column, or -1 if e is light.
func (m *columnMap) col(e uint32) int {
	w, b := e>>6, e&63
	x := m.bits[w]
	if x>>b&1 == 0 {
		return -1
	}
	return int(m.rank[w]) + bits.OnesCount64(x&(1<<b-1))
}
