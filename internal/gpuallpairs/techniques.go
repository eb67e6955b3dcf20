package gpuallpairs

import (
	"fmt"
	"math"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
)

// Device throughputs of the cost model, fitted to the runs of the seed-001
// benchmark on the H100 of the device host (docs/PERFORMANCE.md;
// gpurt.ReferenceH100): int8 and float16 operations per second that cuBLAS
// reaches on these shapes (two per multiply-add), inverted-list entries
// read by scan-count (hot lists stay in the 50 MB L2) and lists started,
// bitmap words ANDed and counted, bit probes, binary-search steps, elements
// placed in matrices and bitmaps, and in inverted lists (global atomics),
// bytes of matrices allocated and zeroed. ratesFor scales them to another
// device.
var h100Rates = deviceRates{
	int8:  1e15,
	half:  5e14,
	read:  1e12,
	start: 2e10,
	word:  7.5e12,
	probe: 1.3e11,
	step:  5e11,
	build: 2e10,
	index: 5e9,
	clear: 1e12,
}

type deviceRates struct {
	int8, half   float64 // tensor-core products
	read, start  float64 // scan-count: shared-memory counting, list starts
	word, probe  float64 // bitmap ANDs and popcounts, bit probes
	step, build  float64 // binary-search steps, scattered writes
	index, clear float64 // global atomics, zeroing
}

// ratesFor returns the throughputs on the device info describes: the
// H100's, times its speed over the H100 (gpurt.Info.SpeedOver) at the kind
// of work that bounds each kernel: the tensor cores for the products, the
// SMs' issue rate (SMs × clock) for the counting in shared memory, the
// bitmap words and the probes, and device memory for the searches,
// scattered writes, atomics and zeroing. Transfers over the bus, which
// the driver does not describe, stay the H100 host's (uploadRate).
func ratesFor(info gpurt.Info) deviceRates {
	sp := info.SpeedOver(gpurt.ReferenceH100())
	r := h100Rates
	r.int8 *= sp.Tensor
	r.half *= sp.Tensor
	r.read *= sp.Compute
	r.start *= sp.Compute
	r.word *= sp.Compute
	r.probe *= sp.Compute
	r.step *= sp.Memory
	r.build *= sp.Memory
	r.index *= sp.Memory
	r.clear *= sp.Memory
	return r
}

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

func (mmTech) prefCols(p *allpairs.Problem, info gpurt.Info) int { return 4096 }

// matrixRows is the rows a matrix of k sets is allocated with: products
// read rows in multiples of 16 past a band's end.
func matrixRows(k int) int { return roundUp(k, 16) + 16 }

func (mmTech) elemSize(pl *runPlan) int64 {
	if pl.half {
		return 2
	}
	return 1
}

func (mmTech) fixed(p *allpairs.Problem) int64 { return 0 }

// size keeps the matrices resident when every set is on the device and
// they fit; otherwise each slot multiplies bands of its super-tile's rows
// in slices of kc columns, built from the sets (with pieces, from half of
// what is left).
func (t mmTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	if pl.half && max(p.Stats.R.MaxSize, p.Stats.S.MaxSize) >= 1<<24 {
		return 0, cannot("float16 products are exact below 2^24 only, and a set has %d elements", max(p.Stats.R.MaxSize, p.Stats.S.MaxSize))
	}
	es := t.elemSize(pl)
	kp := max(16, roundUp(cols.k, 16))
	rows := int64(matrixRows(p.R.Len()))
	if !p.Self {
		rows += int64(matrixRows(p.S.Len()))
	}
	if m := rows * int64(kp) * es; whole && m <= left {
		pl.kc, pl.resident = kp, true
		pl.detail = fmt.Sprintf(", matrices of %s resident", gpurt.FormatBytes(uint64(m)))
		return 0, nil
	}
	if !whole {
		left /= 2
	}
	band := int64(roundUp(pl.g.sr, 16) + roundUp(pl.g.sc, 16))
	kc := int(left/int64(pl.slots)/(band*es)) / 16 * 16
	if kc < 16 {
		return 0, cannot("no room for a slice of the %dx%d matrices", rows, kp)
	}
	pl.kc, pl.resident = min(kc, kp), false
	pl.detail = fmt.Sprintf(", slices of %d columns", pl.kc)
	return band * int64(pl.kc) * es, nil
}

func (t mmTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	if !pl.resident {
		return 0
	}
	return int64(matrixRows(n)) * int64(pl.kc) * t.elemSize(pl)
}

func (t mmTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	kp := float64(max(16, roundUp(cols.k, 16)))
	r := ratesFor(info)
	rate := r.int8
	if pl.half {
		rate = r.half
	}
	count = 2 * gridEntries(pl) * kp / rate
	build = elements(p) / r.build
	if pl.resident {
		rows := matrixRows(p.R.Len())
		if !p.Self {
			rows += matrixRows(p.S.Len())
		}
		build += float64(rows) * kp * float64(t.elemSize(pl)) / r.clear
	} else {
		count += build * float64(len(pl.g.supers())) // every super-tile rebuilds its bands
		build = 0
	}
	return build, count
}

func (t mmTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error {
	if !r.pl.resident {
		return nil
	}
	if err := c.Memset8(pc.aux, 0, s); err != nil {
		return err
	}
	return t.buildRows(c, r, s, pc, 0, pc.sp.len(), 0, r.pl.kc, pc.aux)
}

// buildRows queues setting the entries of sets set0.. (n of them) of pc in
// columns [k0, k1) of m, whose rows are kc entries long.
func (t mmTech) buildRows(c *gpurt.Ctx, r *runner, s *gpurt.Stream, pc *piece, set0, n, k0, k1 int, m gpurt.Buffer) error {
	if n == 0 {
		return nil
	}
	return r.launch(c, "build_matrix", blocks(n), threads, 0, s, pc.elems, pc.offs, uint32(set0), uint32(n),
		r.colOf, int32(k0), int32(k1), uint64(r.pl.kc), m, b32(r.pl.half))
}

func (t mmTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	bl, err := c.BLAS()
	if err != nil {
		return err
	}
	typ := gpurt.GemmInt8
	if r.pl.half {
		typ = gpurt.GemmFloat16
	}
	es := int(t.elemSize(r.pl))
	kp := max(16, roundUp(r.cols.k, 16))
	n := roundUp(s.cols, 16) // the product's columns: whole multiples of 16
	d := sl.d.Slice(0, 4*(s.rows*r.pl.ldd))
	if r.cols.k == 0 {
		return c.Memset32(d, 0, sl.stream)
	}
	x0, y0 := s.r0-r.rp.sp.lo, s.c0-r.sp.sp.lo // the pieces' rows
	if r.pl.resident {
		a := r.rp.aux.Slice(x0*r.pl.kc*es, (s.rows*r.pl.kc)*es)
		b := r.sp.aux.Slice(y0*r.pl.kc*es, (n*r.pl.kc)*es)
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
			m       gpurt.Buffer
			pc      *piece
			set0, n int
		}{{sl.a, r.rp, x0, s.rows}, {sl.b, r.sp, y0, s.cols}} {
			if err := c.Memset8(side.m, 0, sl.stream); err != nil {
				return err
			}
			if err := t.buildRows(c, r, sl.stream, side.pc, side.set0, side.n, k0, k1, side.m); err != nil {
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
func maxCounters(info gpurt.Info) int { return max(1024, (info.SharedPerBlock-1024)/4) }

// prefCols trades the bands of columns (each walks the lists whole)
// against the blocks that fit on a multiprocessor with a band's counters
// in shared memory: 196 KB of counters leave one block of 8 warps, too few
// to hide the latency of the list reads (7x slower per entry, measured).
// With tiles, widths are whole tiles; ties go to the narrower.
func (scanTech) prefCols(p *allpairs.Problem, info gpurt.Info) int {
	ks, most := max(p.S.Len(), 1), maxCounters(info)
	step := 1024
	if _, cols, ok := p.Tiled(); ok {
		step = cols
	}
	best, bestCost := min(ks, most), math.Inf(1)
	for w := step; ; w += step {
		w = min(w, ks, most)
		if c := float64(ceilDiv(ks, w)) / scanOccupancy(info, w); c < bestCost*0.999 {
			best, bestCost = w, c
		}
		if w >= min(ks, most) {
			break
		}
	}
	return best
}

// scanOccupancy is the share of the full list-reading rate that scan-count
// reaches with w counters per block: blocks per multiprocessor, of the 7
// that hide the latency.
func scanOccupancy(info gpurt.Info, w int) float64 {
	blocks := (info.SharedPerBlock + 1024) / (4*w + 1024)
	return float64(clamp(blocks, 1, 7)) / 7
}

func (scanTech) fixed(p *allpairs.Problem) int64 {
	return 8*int64(p.Universe+1) + 4*int64(p.Universe)
}

func (scanTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	n := 8*int64(p.Universe+1) + 4*int64(p.Universe) + 4*int64(len(p.S.Elements))
	pl.detail = fmt.Sprintf(", index of %s", gpurt.FormatBytes(uint64(n)))
	return 0, nil
}

// aux is the inverted lists of the sets on S's side.
func (scanTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	if role&roleS == 0 {
		return 0
	}
	return 4 * max(elems, 1)
}

func (scanTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	// The lists are not sorted by set: every band of columns walks them
	// whole, and a self-join reads both orders of each pair (Σ df², where
	// ScanWork is Σ df(df-1)/2).
	reads := float64(p.Stats.ScanWork)
	if p.Self {
		reads = 2*reads + float64(p.Stats.R.Elements)
	}
	w := min(max(pl.g.sc, 1), maxCounters(info))
	bands := float64(ceilDiv(max(p.S.Len(), 1), w))
	r := ratesFor(info)
	count = bands * (reads/(r.read*scanOccupancy(info, min(w, max(p.S.Len(), 1)))) + float64(p.Stats.R.Elements)/r.start)
	return float64(p.Stats.S.Elements) / r.index, count
}

// build makes the inverted lists of an S piece: the lists' lengths (the
// document frequencies, uploaded for the whole of S, else counted), their
// starts by a prefix sum, then the lists.
func (t scanTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error {
	return t.buildIndex(c, r, pc, s, pc.aux)
}

// buildIndex is build with the lists in post.
func (scanTech) buildIndex(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream, post gpurt.Buffer) error {
	if pc.role&roleS == 0 {
		return nil
	}
	u := r.p.Universe
	n := pc.elems.Len() / 4
	if pc.sp.len() != r.p.S.Len() {
		if err := c.Memset32(r.fill, 0, s); err != nil {
			return err
		}
		if n > 0 {
			if err := r.launch(c, "count_df", blocks(min(ceilDiv(n, 256), r.info.SMs*32)), threads, 0, s, pc.elems, uint64(n), r.fill); err != nil {
				return err
			}
		}
	}
	chunk := max(4096, ceilDiv(u, 2*r.info.SMs))
	nb := gpurt.Dim{X: max(1, ceilDiv(u, chunk))}
	if err := r.launch(c, "df_sums", nb, gpurt.Dim{X: 1024}, 0, s, r.fill, uint64(u), uint64(chunk), r.sums); err != nil {
		return err
	}
	if err := r.launch(c, "df_scan", nb, gpurt.Dim{X: 1024}, 0, s, r.fill, uint64(u), uint64(chunk), r.sums, r.start); err != nil {
		return err
	}
	if pc.sp.len() == 0 {
		return nil
	}
	return r.launch(c, "index_fill", blocks(pc.sp.len()), threads, 0, s, pc.elems, pc.offs, uint32(pc.sp.len()), r.start, r.fill, post)
}

func (t scanTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	return t.fillFrom(c, r, sl, s, r.sp.aux)
}

// fillFrom is fill with S's lists in post.
func (scanTech) fillFrom(c *gpurt.Ctx, r *runner, sl *slot, s super, post gpurt.Buffer) error {
	self := b32(r.p.Self)
	w := maxCounters(r.info)
	x0, y0 := s.r0-r.rp.sp.lo, s.c0-r.sp.sp.lo
	for dy := 0; dy < s.cols; dy += w {
		n := min(w, s.cols-dy)
		if err := r.launch(c, "scancount", blocks(s.rows), threads, 4*n, sl.stream, r.rp.elems, r.rp.offs, uint32(x0), uint32(s.rows),
			r.start, post, uint32(y0+dy), uint32(n), self, sl.d, uint64(r.pl.ldd), uint32(dy),
			uint32(r.rp.sp.lo), uint32(r.sp.sp.lo)); err != nil {
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

func (bitmapTech) prefCols(p *allpairs.Problem, info gpurt.Info) int { return 4096 }

func bitmapWords(cols *columns) int { return max(1, (cols.k+31)/32) }

func (bitmapTech) fixed(p *allpairs.Problem) int64 { return 0 }

func (bitmapTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	n := int64(p.R.Len()) * int64(bitmapWords(cols)) * 4
	if !p.Self {
		n += int64(p.S.Len()) * int64(bitmapWords(cols)) * 4
	}
	pl.detail = fmt.Sprintf(", bitmaps of %s", gpurt.FormatBytes(uint64(n)))
	return 0, nil
}

func (bitmapTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	return max(int64(n)*int64(bitmapWords(cols))*4, 4)
}

func (bitmapTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	r := ratesFor(info)
	return elements(p) / r.build, gridEntries(pl) * float64(bitmapWords(cols)) / r.word
}

func (bitmapTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error {
	if err := c.Memset32(pc.aux, 0, s); err != nil {
		return err
	}
	if pc.sp.len() == 0 {
		return nil
	}
	return r.launch(c, "build_bitmaps", blocks(pc.sp.len()), threads, 0, s, pc.elems, pc.offs, uint32(pc.sp.len()), r.colOf, uint64(bitmapWords(r.cols)), pc.aux)
}

func (bitmapTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	g := gpurt.Dim{X: ceilDiv(s.cols, 32), Y: ceilDiv(s.rows, 32)}
	return r.launch(c, "bitmap_tile", g, threads, 0, sl.stream, r.rp.aux, r.sp.aux, uint64(bitmapWords(r.cols)),
		uint32(s.r0-r.rp.sp.lo), uint32(s.rows), uint32(s.c0-r.sp.sp.lo), uint32(s.cols), b32(r.p.Self), sl.d, uint64(r.pl.ldd),
		uint32(r.rp.sp.lo), uint32(r.sp.sp.lo))
}

// ------------------------------------------------------------ bitmap-dynamic

// dynamicTech builds each probe set's bitmap in shared memory (BI-dynamic).
type dynamicTech struct{}

func (dynamicTech) name() string      { return "bitmap-dynamic" }
func (dynamicTech) usesColumns() bool { return true }

func (dynamicTech) prefCols(p *allpairs.Problem, info gpurt.Info) int { return 4096 }

func (dynamicTech) fixed(p *allpairs.Problem) int64 { return 0 }

func (dynamicTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	if w := bitmapWords(cols); w > maxCounters(info) {
		return 0, cannot("a bitmap of %d columns does not fit in %d bytes of shared memory", cols.k, info.SharedPerBlock)
	}
	return 0, nil
}

func (dynamicTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	return 0
}

func (dynamicTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	// Every probe set tests every candidate's elements.
	var probes float64
	for _, s := range pl.g.supers() {
		probes += float64(s.rows) * float64(s.cols) * max(p.Stats.S.AvgSize, 32) // a warp per candidate
	}
	if p.Self {
		probes /= 2
	}
	return 0, probes / ratesFor(info).probe
}

func (dynamicTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error { return nil }

func (dynamicTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	words := bitmapWords(r.cols)
	return r.launch(c, "bitmap_dynamic", blocks(s.rows), threads, 4*words, sl.stream, r.rp.elems, r.rp.offs, uint32(s.r0-r.rp.sp.lo), uint32(s.rows),
		r.sp.elems, r.sp.offs, uint32(s.c0-r.sp.sp.lo), uint32(s.cols), r.colOf, uint32(words), b32(r.p.Self), sl.d, uint64(r.pl.ldd),
		uint32(r.rp.sp.lo), uint32(r.sp.sp.lo))
}

// ------------------------------------------------------------ merge

// mergeTech intersects pair by pair, a warp per pair (OBS).
type mergeTech struct{}

func (mergeTech) name() string      { return "merge" }
func (mergeTech) usesColumns() bool { return false }

func (mergeTech) prefCols(p *allpairs.Problem, info gpurt.Info) int { return 4096 }

func (mergeTech) fixed(p *allpairs.Problem) int64 { return 0 }

func (mergeTech) size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (int64, error) {
	pl.detail = ", a warp per pair"
	return 0, nil
}

func (mergeTech) aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64 {
	return 0
}

func (mergeTech) seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64) {
	lo := min(p.Stats.R.AvgSize, p.Stats.S.AvgSize)
	hi := max(p.Stats.R.AvgSize, p.Stats.S.AvgSize)
	steps := float64(p.Stats.Pairs) * (lo*math.Log2(hi+2) + 32)
	return 0, steps / ratesFor(info).step
}

func (mergeTech) build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error { return nil }

func (mergeTech) fill(c *gpurt.Ctx, r *runner, sl *slot, s super) error {
	pairs := s.rows * s.cols
	return r.launch(c, "merge_obs", blocks(min(ceilDiv(pairs, 8), r.info.SMs*16)), threads, 0, sl.stream, r.rp.elems, r.rp.offs, uint32(s.r0-r.rp.sp.lo), uint32(s.rows),
		r.sp.elems, r.sp.offs, uint32(s.c0-r.sp.sp.lo), uint32(s.cols), b32(r.p.Self), sl.d, uint64(r.pl.ldd),
		uint32(r.rp.sp.lo), uint32(r.sp.sp.lo))
}
