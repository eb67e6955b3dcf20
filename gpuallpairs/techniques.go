package gpuallpairs

import (
	"fmt"
	"math"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/gpu"
)

// Device throughputs of the cost model, first figures for an H100, to be
// calibrated: int8 and float16 multiply-adds per second that cuBLAS
// reaches on these shapes, shared-memory counter increments, bitmap words
// ANDed and counted, bit probes, and binary-search steps.
const (
	int8Rate  = 4e14
	halfRate  = 2e14
	incRate   = 3e10
	wordRate  = 2e12
	probeRate = 5e10
	stepRate  = 3e10
	buildRate = 2e10 // elements placed in matrices, bitmaps, lists
)

// selfEntries is the number of entries the super-tiles hold.
func gridEntries(pl *runPlan) float64 {
	var n float64
	for _, s := range pl.g.supers() {
		n += float64(s.rows) * float64(s.cols)
	}
	return n
}

func elements(p *allpairs.Problem) float64 {
	n := float64(len(p.R.Elements))
	if !p.Self {
		n += float64(len(p.S.Elements))
	}
	return n
}

// ------------------------------------------------------------ mm

// mmTech multiplies the 0/1 matrices on the tensor cores.
type mmTech struct{}

func (mmTech) name() string      { return "mm" }
func (mmTech) usesColumns() bool { return true }

func (mmTech) prefCols(p *allpairs.Problem, info gpu.Info) int { return 4096 }

// matrixRows is the rows a matrix of k sets is allocated with: products
// read rows in multiples of 16 past a band's end.
func matrixRows(k int) int { return roundUp(k, 16) + 16 }

func (mmTech) elemSize(pl *runPlan) int64 {
	if pl.half {
		return 2
	}
	return 1
}

func (t mmTech) size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (int64, int64, error) {
	if pl.half && max(p.Stats.R.MaxSize, p.Stats.S.MaxSize) >= 1<<24 {
		return 0, 0, cannot("float16 products are exact below 2^24 only, and a set has %d elements", max(p.Stats.R.MaxSize, p.Stats.S.MaxSize))
	}
	es := t.elemSize(pl)
	kp := max(16, roundUp(cols.k, 16))
	rows := int64(matrixRows(p.R.Len()))
	if !p.Self {
		rows += int64(matrixRows(p.S.Len()))
	}
	if m := rows * int64(kp) * es; m <= left {
		pl.kc, pl.resident = kp, true
		pl.detail = fmt.Sprintf(", matrices of %s resident", gpu.FormatBytes(uint64(m)))
		return m, 0, nil
	}
	// Slices of columns, per slot: a band of rows of each side.
	band := int64(roundUp(pl.g.sr, 16) + roundUp(pl.g.sc, 16))
	kc := int(left/int64(pl.slots)/(band*es)) / 16 * 16
	if kc < 16 {
		return 0, 0, cannot("no room for a slice of the %dx%d matrices", rows, kp)
	}
	pl.kc, pl.resident = min(kc, kp), false
	pl.detail = fmt.Sprintf(", slices of %d columns", pl.kc)
	return 0, band * int64(pl.kc) * es, nil
}

func (t mmTech) seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64 {
	kp := float64(max(16, roundUp(cols.k, 16)))
	rate := int8Rate
	if pl.half {
		rate = halfRate
	}
	s := 2 * gridEntries(pl) * kp / rate
	build := elements(p) / buildRate
	if !pl.resident {
		build *= float64(len(pl.g.supers())) // every super-tile rebuilds its bands
	}
	return s + build
}

func (t mmTech) prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error {
	if !r.pl.resident {
		return nil
	}
	es := t.elemSize(r.pl)
	build := func(elems, offs gpu.Buffer, k int) (gpu.Buffer, error) {
		m, err := r.alloc(c, int64(matrixRows(k))*int64(r.pl.kc)*es)
		if err != nil {
			return gpu.Buffer{}, err
		}
		if err := c.Memset8(m, 0, s); err != nil {
			return gpu.Buffer{}, err
		}
		return m, t.build(c, r, s, elems, offs, 0, k, 0, r.pl.kc, m)
	}
	var err error
	if r.mA, err = build(r.rElems, r.rOffs, r.p.R.Len()); err != nil {
		return err
	}
	r.mB = r.mA
	if !r.p.Self {
		r.mB, err = build(r.sElems, r.sOffs, r.p.S.Len())
	}
	return err
}

// build queues setting the entries of sets set0.. (n of them) in columns
// [k0, k1) of m, whose rows are kc entries long.
func (t mmTech) build(c *gpu.Ctx, r *runner, s *gpu.Stream, elems, offs gpu.Buffer, set0, n, k0, k1 int, m gpu.Buffer) error {
	if n == 0 {
		return nil
	}
	half := uint32(0)
	if r.pl.half {
		half = 1
	}
	return r.launch(c, "build_matrix", blocks(n), threads, 0, s, elems, offs, uint32(set0), uint32(n),
		r.colOf, int32(k0), int32(k1), uint64(r.pl.kc), m, half)
}

func (t mmTech) fill(c *gpu.Ctx, r *runner, sl *slot, s super) error {
	bl, err := c.BLAS()
	if err != nil {
		return err
	}
	typ := gpu.GemmInt8
	if r.pl.half {
		typ = gpu.GemmFloat16
	}
	es := int(t.elemSize(r.pl))
	kp := max(16, roundUp(r.cols.k, 16))
	n := roundUp(s.cols, 16) // the product's columns: whole multiples of 16
	d := sl.d.Slice(0, 4*(s.rows*r.pl.ldd))
	if r.cols.k == 0 {
		return c.Memset32(d, 0, sl.stream)
	}
	if r.pl.resident {
		a := r.mA.Slice(s.r0*r.pl.kc*es, (s.rows*r.pl.kc)*es)
		b := r.mB.Slice(s.c0*r.pl.kc*es, (n*r.pl.kc)*es)
		return c.Gemm(bl, sl.stream, typ, s.rows, n, r.pl.kc, a, r.pl.kc, b, r.pl.kc, false, d, r.pl.ldd)
	}
	// Slices of columns, accumulating.
	ra, rb := roundUp(r.pl.g.sr, 16), roundUp(r.pl.g.sc, 16)
	if sl.a.Len() == 0 {
		if sl.a, err = r.alloc(c, int64(ra*r.pl.kc*es)); err != nil {
			return err
		}
		if sl.b, err = r.alloc(c, int64(rb*r.pl.kc*es)); err != nil {
			return err
		}
	}
	for k0 := 0; k0 < kp; k0 += r.pl.kc {
		k1 := min(kp, k0+r.pl.kc)
		for _, side := range []struct {
			m            gpu.Buffer
			elems, offs  gpu.Buffer
			set0, n, cap int
		}{{sl.a, r.rElems, r.rOffs, s.r0, s.rows, ra}, {sl.b, r.sElems, r.sOffs, s.c0, s.cols, rb}} {
			if err := c.Memset8(side.m, 0, sl.stream); err != nil {
				return err
			}
			if err := t.build(c, r, sl.stream, side.elems, side.offs, side.set0, side.n, k0, k1, side.m); err != nil {
				return err
			}
		}
		kk := roundUp(k1-k0, 16)
		if err := c.Gemm(bl, sl.stream, typ, s.rows, n, kk, sl.a, r.pl.kc, sl.b, r.pl.kc, k0 > 0, d, r.pl.ldd); err != nil {
			return err
		}
	}
	return nil
}

// ------------------------------------------------------------ scancount

// scanTech is sf-gssjoin: an inverted index of S, probed set by set.
type scanTech struct{}

func (scanTech) name() string      { return "scancount" }
func (scanTech) usesColumns() bool { return false }

// maxCounters is how many shared-memory counters a block may have.
func maxCounters(info gpu.Info) int { return max(1024, (info.SharedPerBlock-1024)/4) }

func (scanTech) prefCols(p *allpairs.Problem, info gpu.Info) int {
	return min(p.S.Len(), maxCounters(info))
}

func (scanTech) size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (int64, int64, error) {
	n := 8*int64(p.Universe+1) + 4*int64(p.Universe) + 4*int64(len(p.S.Elements))
	pl.detail = fmt.Sprintf(", index of %s", gpu.FormatBytes(uint64(n)))
	return n, 0, nil
}

func (scanTech) seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64 {
	// The lists are not sorted by set: every band of columns walks them
	// whole, and a self-join visits both orders of each pair.
	work := float64(p.Stats.ScanWork)
	if p.Self {
		work *= 2
	}
	bands := float64(ceilDiv(max(p.S.Len(), 1), max(pl.g.sc, 1)))
	if _, _, ok := p.Tiled(); ok {
		bands = float64(ceilDiv(max(p.S.Len(), 1), min(pl.g.sc, maxCounters(info))))
	}
	return work*bands/incRate + elements(p)/buildRate
}

func (scanTech) prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error {
	p := r.p
	start := make([]uint64, p.Universe+1)
	var n uint64
	for e, d := range p.DFS {
		start[e] = n
		n += uint64(d)
	}
	start[p.Universe] = n
	var err error
	if r.start, err = r.alloc(c, 8*int64(len(start))); err != nil {
		return err
	}
	if err := r.st.upload(c, s, r.start, gpu.Bytes(start)); err != nil {
		return err
	}
	fill, err := r.alloc(c, max(4*int64(p.Universe), 4))
	if err != nil {
		return err
	}
	if err := c.Memset32(fill, 0, s); err != nil {
		return err
	}
	if r.post, err = r.alloc(c, max(4*int64(n), 4)); err != nil {
		return err
	}
	if p.S.Len() == 0 {
		return nil
	}
	return r.launch(c, "index_fill", blocks(p.S.Len()), threads, 0, s, r.sElems, r.sOffs, uint32(p.S.Len()), r.start, fill, r.post)
}

func (scanTech) fill(c *gpu.Ctx, r *runner, sl *slot, s super) error {
	self := b32(r.p.Self)
	w := maxCounters(r.info)
	for y0 := 0; y0 < s.cols; y0 += w {
		n := min(w, s.cols-y0)
		if err := r.launch(c, "scancount", blocks(s.rows), threads, 4*n, sl.stream, r.rElems, r.rOffs, uint32(s.r0), uint32(s.rows),
			r.start, r.post, uint32(s.c0+y0), uint32(n), self, sl.d, uint64(r.pl.ldd), uint32(y0)); err != nil {
			return err
		}
	}
	return nil
}

func b32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// ------------------------------------------------------------ bitmap

// bitmapTech keeps every set's bitmap resident (BI-naive).
type bitmapTech struct{}

func (bitmapTech) name() string      { return "bitmap" }
func (bitmapTech) usesColumns() bool { return true }

func (bitmapTech) prefCols(p *allpairs.Problem, info gpu.Info) int { return 4096 }

func bitmapWords(cols *columns) int { return max(1, (cols.k+31)/32) }

func (bitmapTech) size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (int64, int64, error) {
	n := int64(p.R.Len()) * int64(bitmapWords(cols)) * 4
	if !p.Self {
		n += int64(p.S.Len()) * int64(bitmapWords(cols)) * 4
	}
	pl.detail = fmt.Sprintf(", bitmaps of %s", gpu.FormatBytes(uint64(n)))
	return n, 0, nil
}

func (bitmapTech) seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64 {
	return gridEntries(pl)*float64(bitmapWords(cols))/wordRate + elements(p)/buildRate
}

func (bitmapTech) prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error {
	words := bitmapWords(r.cols)
	build := func(elems, offs gpu.Buffer, k int) (gpu.Buffer, error) {
		bm, err := r.alloc(c, max(int64(k)*int64(words)*4, 4))
		if err != nil {
			return gpu.Buffer{}, err
		}
		if err := c.Memset32(bm, 0, s); err != nil {
			return gpu.Buffer{}, err
		}
		if k == 0 {
			return bm, nil
		}
		return bm, r.launch(c, "build_bitmaps", blocks(k), threads, 0, s, elems, offs, uint32(k), r.colOf, uint64(words), bm)
	}
	var err error
	if r.mA, err = build(r.rElems, r.rOffs, r.p.R.Len()); err != nil {
		return err
	}
	r.mB = r.mA
	if !r.p.Self {
		r.mB, err = build(r.sElems, r.sOffs, r.p.S.Len())
	}
	return err
}

func (bitmapTech) fill(c *gpu.Ctx, r *runner, sl *slot, s super) error {
	g := gpu.Dim{X: ceilDiv(s.cols, 32), Y: ceilDiv(s.rows, 32)}
	return r.launch(c, "bitmap_tile", g, threads, 0, sl.stream, r.mA, r.mB, uint64(bitmapWords(r.cols)),
		uint32(s.r0), uint32(s.rows), uint32(s.c0), uint32(s.cols), b32(r.p.Self), sl.d, uint64(r.pl.ldd))
}

// ------------------------------------------------------------ bitmap-dynamic

// dynamicTech builds each probe set's bitmap in shared memory (BI-dynamic).
type dynamicTech struct{}

func (dynamicTech) name() string      { return "bitmap-dynamic" }
func (dynamicTech) usesColumns() bool { return true }

func (dynamicTech) prefCols(p *allpairs.Problem, info gpu.Info) int { return 4096 }

func (dynamicTech) size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (int64, int64, error) {
	if w := bitmapWords(cols); w > maxCounters(info) {
		return 0, 0, cannot("a bitmap of %d columns does not fit in %d bytes of shared memory", cols.k, info.SharedPerBlock)
	}
	return 0, 0, nil
}

func (dynamicTech) seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64 {
	// Every probe set tests every candidate's elements.
	var probes float64
	for _, s := range pl.g.supers() {
		probes += float64(s.rows) * float64(s.cols) * p.Stats.S.AvgSize
	}
	if p.Self {
		probes /= 2
	}
	return probes/probeRate + elements(p)/buildRate
}

func (dynamicTech) prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error { return nil }

func (dynamicTech) fill(c *gpu.Ctx, r *runner, sl *slot, s super) error {
	words := bitmapWords(r.cols)
	return r.launch(c, "bitmap_dynamic", blocks(s.rows), threads, 4*words, sl.stream, r.rElems, r.rOffs, uint32(s.r0), uint32(s.rows),
		r.sElems, r.sOffs, uint32(s.c0), uint32(s.cols), r.colOf, uint32(words), b32(r.p.Self), sl.d, uint64(r.pl.ldd))
}

// ------------------------------------------------------------ merge

// mergeTech intersects pair by pair, a warp per pair (OBS).
type mergeTech struct{}

func (mergeTech) name() string      { return "merge" }
func (mergeTech) usesColumns() bool { return false }

func (mergeTech) prefCols(p *allpairs.Problem, info gpu.Info) int { return 4096 }

func (mergeTech) size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (int64, int64, error) {
	pl.detail = ", a warp per pair"
	return 0, 0, nil
}

func (mergeTech) seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64 {
	lo := min(p.Stats.R.AvgSize, p.Stats.S.AvgSize)
	hi := max(p.Stats.R.AvgSize, p.Stats.S.AvgSize)
	steps := float64(p.Stats.Pairs) * (lo*math.Log2(hi+2) + 32)
	return steps / stepRate
}

func (mergeTech) prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error { return nil }

func (mergeTech) fill(c *gpu.Ctx, r *runner, sl *slot, s super) error {
	pairs := s.rows * s.cols
	return r.launch(c, "merge_obs", blocks(min(ceilDiv(pairs, 8), r.info.SMs*16)), threads, 0, sl.stream, r.rElems, r.rOffs, uint32(s.r0), uint32(s.rows),
		r.sElems, r.sOffs, uint32(s.c0), uint32(s.cols), b32(r.p.Self), sl.d, uint64(r.pl.ldd))
}
