package gpuallpairs

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/par"
)

// mmscanTech counts a super-tile in two parts on the device: scan-count
// over an inverted index that leaves the heaviest elements out, then the
// int8 product of those elements' incidence matrices added to it. On
// skewed (Zipf) collections a few elements hold most of scan-count's list
// reads, which the product takes at the tensor cores' rate in few columns;
// the pairs then never leave the device whole (count_ge, compact_ge),
// where MMJoin must bring its heavy product's bands to the CPU.
//
// It runs whole (every set on the device) with its matrices resident and
// int8 products only: the scan's 32-bit counts are what the product adds
// to.
type mmscanTech struct {
	// heavy, when not 0, forces the number of heavy elements instead of
	// the cost model's choice (-1: none); tests run both parts with it.
	heavy int
}

func (mmscanTech) name() string      { return "mmscan" }
func (mmscanTech) usesColumns() bool { return true }

// prefCols is scan-count's: each band of columns walks the light lists
// whole, and the product takes any width.
func (mmscanTech) prefCols(p *allpairs.Problem, info gpurt.Info) int {
	return scanTech{}.prefCols(p, info)
}

// mmscanSplit is the heavy elements chosen for a problem: colOf maps them
// to the product's columns (the others to -1), and light is the scan's
// list reads over the rest (Σ dfR·dfS).
type mmscanSplit struct {
	cols  *columns
	light float64
	// lightDF is S's document frequencies with the heavy elements' set
	// to 0, which the index then leaves out: made once, whatever the
	// owners that upload it.
	lightDF func() []uint32
}

// mmscanColumns chooses the heavy elements: a prefix of the elements by
// decreasing dfR·dfS (the pairs their lists make), the one of 16·2^i
// elements that the cost model gives the least time, product and scan
// together. Computed once per problem.
func mmscanColumns(p *allpairs.Problem, info gpurt.Info, force int) *mmscanSplit {
	return p.Memo(fmt.Sprintf("gpuallpairs.mmscan/%d", force), func() any {
		order, total := heaviest(p)
		return splitHeavy(p, info, force, order, total)
	}).(*mmscanSplit)
}

// heavyCand is an element that may get a column, and its work dfR·dfS.
type heavyCand struct {
	w int
	e int32
}

// heavyWork is element e's work: the pairs its lists make, dfR·dfS
// (dfR² in a self-join, whose product counts both orders).
func heavyWork(p *allpairs.Problem, e int) int {
	if p.Self {
		return int(p.DFR[e]) * int(p.DFR[e])
	}
	return int(p.DFR[e]) * int(p.DFS[e])
}

// heaviest returns the shared elements that may get a column, at most
// maxHeavy of them, by decreasing work (ties by increasing element before
// an unstable sort), and the work of all elements.
func heaviest(p *allpairs.Problem) (order []heavyCand, total float64) {
	u := p.Universe
	work := func(e int) int { return heavyWork(p, e) }
	// Only elements some pair shares (the shared columns) can be
	// worth a column. Millions may be: where more than maxHeavy, only
	// the heaviest maxHeavy are kept, the least work kept found from a
	// histogram of the works' bit lengths and a selection in its
	// bucket. The passes run over parts of the universe in parallel
	// (planning waits for this before the run can start).
	shared, n := p.SharedColumns()
	parts := max(1, min(4*p.Threads, u>>16))
	type part struct {
		total uint64
		carry bool
		hist  [65]int
		in    []int // the works in t's bucket
		ties  []int32
		order []heavyCand
	}
	ps := make([]part, parts)
	each := func(fn func(pt *part, lo, hi int)) {
		par.Each(parts, p.Threads, func(w int) { fn(&ps[w], w*u/parts, (w+1)*u/parts) })
	}
	each(func(pt *part, lo, hi int) {
		for e := lo; e < hi; e++ {
			w := uint64(work(e))
			var c uint64
			pt.total, c = bits.Add64(pt.total, w, 0)
			pt.carry = pt.carry || c != 0
			if shared[e] >= 0 {
				pt.hist[bits.Len64(w)]++
			}
		}
	})
	// The works are integers: their sum in float64, added in order,
	// is exact (and so the sum's) below 2^53.
	var sum uint64
	exact := true
	for i := range ps {
		var c uint64
		sum, c = bits.Add64(sum, ps[i].total, 0)
		exact = exact && c == 0 && !ps[i].carry
	}
	total = float64(sum)
	if !exact || sum >= 1<<53 {
		total = 0
		for e := range u {
			total += float64(work(e))
		}
	}
	t := -1 // the least work kept, where more than maxHeavy are shared
	if n > maxHeavy {
		b, above := 64, 0
		for {
			in := 0
			for i := range ps {
				in += ps[i].hist[b]
			}
			if above+in >= maxHeavy {
				break
			}
			above += in
			b--
		}
		each(func(pt *part, lo, hi int) {
			for e := lo; e < hi; e++ {
				if w := work(e); shared[e] >= 0 && bits.Len64(uint64(w)) == b {
					pt.in = append(pt.in, w)
				}
			}
		})
		var ws []int
		for i := range ps {
			ws = append(ws, ps[i].in...)
		}
		t = allpairs.NthLargest(ws, maxHeavy-above)
	}
	// The elements over t in increasing order, then the first ties
	// up to maxHeavy.
	keep := min(n, maxHeavy)
	each(func(pt *part, lo, hi int) {
		for e := lo; e < hi; e++ {
			if shared[e] < 0 {
				continue
			}
			if w := work(e); w > t {
				pt.order = append(pt.order, heavyCand{w, int32(e)})
			} else if w == t && len(pt.ties) < keep {
				pt.ties = append(pt.ties, int32(e))
			}
		}
	})
	order = make([]heavyCand, 0, keep)
	for i := range ps {
		order = append(order, ps[i].order...)
	}
	for i := range ps {
		for _, e := range ps[i].ties {
			if len(order) == keep {
				break
			}
			order = append(order, heavyCand{t, e})
		}
	}
	slices.SortFunc(order, func(a, b heavyCand) int { return cmp.Compare(b.w, a.w) })
	return order, total
}

// splitHeavy chooses how many of order (from heaviest) become columns:
// force of them where force is not 0, otherwise the prefix of 16·2^i
// that the cost model prices lowest, product and scan together.
func splitHeavy(p *allpairs.Problem, info gpurt.Info, force int, order []heavyCand, total float64) *mmscanSplit {
	u := p.Universe
	r := ratesFor(info)
	pairs := float64(p.R.Len()) * float64(p.S.Len())
	if p.Self {
		pairs /= 2 // the super-tiles of the upper triangle
	}
	// Every band of columns walks the light lists whole.
	w := scanTech{}.prefCols(p, info)
	bands := float64(ceilDiv(max(p.S.Len(), 1), w))
	best, bestH, bestLight := -1.0, 0, total
	heavy, h := 0.0, 0
	for n := 16; ; n *= 2 {
		n = min(n, len(order))
		for ; h < n; h++ {
			heavy += float64(order[h].w)
		}
		light := max(total-heavy, 0)
		t := 2*pairs*float64(roundUp(n, 16))/r.int8 + bands*light/(r.read*scanOccupancy(info, min(w, max(p.S.Len(), 1))))
		if best < 0 || t < best {
			best, bestH, bestLight = t, n, light
		}
		if n == len(order) {
			break
		}
	}
	if force != 0 {
		bestH = min(max(force, 0), len(order))
		bestLight = total
		for _, c := range order[:bestH] {
			bestLight -= float64(c.w)
		}
	}
	colOf := noColumns(u)
	heavySet := make([]int32, bestH)
	for i, c := range order[:bestH] {
		heavySet[i] = c.e
	}
	slices.Sort(heavySet) // columns in increasing order of element
	for c, e := range heavySet {
		colOf[e] = int32(c)
	}
	lightDF := sync.OnceValue(func() []uint32 {
		df := slices.Clone(p.DFS)
		for _, e := range heavySet {
			df[e] = 0
		}
		return df
	})
	return &mmscanSplit{cols: &columns{colOf: colOf, k: bestH}, light: bestLight, lightDF: lightDF}
}

// maxHeavy bounds mmscan's heavy elements: a product of 2^16 columns
// already costs a second per 10^10 pairs.
const maxHeavy = 1 << 16

// noColumns returns a column map of n elements, none with a column (-1).
func noColumns(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = -1
	}
	return s
}

func (mmscanTech) fixed(p *allpairs.Problem) int64 { return scanTech{}.fixed(p) }

func (mmscanTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	if pl.half {
		return 0, cannot("int8 products only (the scan's counts are added to the product's), and cuBLAS has none here")
	}
	if !whole {
		return 0, cannot("runs with every set on the device only")
	}
	kp := max(16, roundUp(cols.k, 16))
	rows := int64(matrixRows(p.R.Len()))
	if !p.Self {
		rows += int64(matrixRows(p.S.Len()))
	}
	m := rows * int64(kp)
	index := 4 * int64(len(p.S.Elements))
	if m+index > left {
		return 0, cannot("needs %s for the matrices of %d heavy elements and the index, %s left",
			gpurt.FormatBytes(uint64(m+index)), cols.k, gpurt.FormatBytes(uint64(max(left, 0))))
	}
	pl.kc, pl.resident = kp, true
	pl.detail = fmt.Sprintf(", %d heavy elements in matrices of %s, the rest in an index of %s",
		cols.k, gpurt.FormatBytes(uint64(m)), gpurt.FormatBytes(uint64(index)))
	return 0, nil
}

// matrixBytes is the part of a piece's structure that holds its matrix:
// the postings follow it.
func (mmscanTech) matrixBytes(pl *runPlan, n int) int64 {
	return int64(roundUp(matrixRows(n)*pl.kc, 256))
}

func (t mmscanTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	return t.matrixBytes(pl, n) + scanTech{}.aux(p, cols, pl, role, n, elems)
}

// parts returns pc's matrix and lists.
func (t mmscanTech) parts(r *runner, pc *piece) (matrix, post gpurt.Buffer) {
	m := int(t.matrixBytes(r.pl, pc.sp.len()))
	return pc.aux.Slice(0, m), pc.aux.Slice(m, pc.aux.Len()-m)
}

func (t mmscanTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	r := ratesFor(info)
	kp := float64(max(16, roundUp(cols.k, 16)))
	rows := matrixRows(p.R.Len())
	if !p.Self {
		rows += matrixRows(p.S.Len())
	}
	build = elements(p)/r.build + float64(rows)*kp/r.clear + float64(p.Stats.S.Elements)/r.index
	// scanTech's model over the light lists' reads.
	w := min(max(pl.g.sc, 1), maxCounters(info))
	bands := float64(ceilDiv(max(p.S.Len(), 1), w))
	light := mmscanColumns(p, info, t.heavy).light
	count = 2*gridEntries(pl)*kp/r.int8 +
		bands*(light/(r.read*scanOccupancy(info, min(w, max(p.S.Len(), 1))))+float64(p.Stats.R.Elements)/r.start)
	return build, count
}

func (t mmscanTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error {
	m, post := t.parts(r, pc)
	if err := c.Memset8(m, 0, s); err != nil {
		return err
	}
	if err := (mmTech{}).buildRows(c, r, s, pc, 0, pc.sp.len(), 0, r.pl.kc, m); err != nil {
		return err
	}
	return scanTech{}.buildIndex(c, r, pc, s, post)
}

func (t mmscanTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	_, post := t.parts(r, r.sp)
	if err := (scanTech{}).fillFrom(c, r, sl, s, post); err != nil {
		return err
	}
	if r.cols.k == 0 {
		return nil
	}
	bl, err := c.BLAS()
	if err != nil {
		return err
	}
	ma, _ := t.parts(r, r.rp)
	mb, _ := t.parts(r, r.sp)
	kc := r.pl.kc
	x0, y0 := s.r0-r.rp.sp.lo, s.c0-r.sp.sp.lo
	n := roundUp(s.cols, 16) // the product's columns: whole multiples of 16
	a := ma.Slice(x0*kc, s.rows*kc)
	b := mb.Slice(y0*kc, n*kc)
	d := sl.d.Slice(0, 4*(s.rows*r.pl.ldd))
	return c.Gemm(bl, sl.stream, gpurt.GemmInt8, s.rows, n, kc, a, kc, b, kc, true, d, r.pl.ldd)
}
