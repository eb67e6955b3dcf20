package gpuallpairs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

// runPlan is a technique's plan for one problem on one device.
type runPlan struct {
	g       grid
	slots   int   // super-tiles in flight
	memory  int64 // device bytes in all
	seconds float64
	detail  string
	ldd     int // row stride of the device counts
	// The matrix product's: columns per slice, whether all columns fit at
	// once, and float16 instead of int8.
	kc       int
	resident bool
	half     bool
	// Pieces of R and S (one each when everything fits; then in a
	// self-join the one piece serves both sides), the number of R piece
	// buffers, and what each buffer of R and of S must hold.
	rPieces, sPieces []span
	shared           bool
	rBufs            int
	rBytes, sBytes   int64
	fixed            int64 // the technique's structures over the universe
	// The estimate's parts: what every device does once (set-up, uploads,
	// building), the super-tiles, which devices share, and the host's
	// report of the pairs (allpairs.Problem.ReportSeconds), which goes on
	// while they count.
	onceSec, tiledSec, reportSec float64
	supers                       int
}

// overlapped is the time of two pipelined parts that take a and b
// seconds: the longer, and a quarter of the shorter that the overlap
// misses.
func overlapped(a, b float64) float64 { return max(a, b) + min(a, b)/4 }

// selectsPairs reports whether a run of p on grid g selects its pairs on
// the device (compact_ge) and brings only them back: a pair plan whose
// super-tiles hold under 2^31 counts.
func selectsPairs(p *allpairs.Problem, g grid) bool {
	_, _, tiled := p.Tiled()
	return !tiled && !p.CountOnly && int64(g.sr)*int64(g.sc) < 1<<31
}

// planSet plans a run on set: one plan that every owner runs, in the
// memory budget of each, with the first owner's device description (a
// set of mixed GPUs plans for its first). The super-tiles' time is
// divided by the set's GPUs, not what each does once; owners of one GPU
// count once.
func planSet(p *allpairs.Problem, t technique, tu tuning, set *gpurt.Set, budget int64, half bool) (*runPlan, error) {
	pl, err := planWith(p, t, tu, set.Owner(0).Info(), budget, half)
	if err != nil {
		return nil, err
	}
	pl.spread(set.Devices(), set.String())
	return pl, nil
}

// spread sets the estimate for n GPUs, named by name: the super-tiles
// divide, what each GPU does once and the host's report of the pairs do
// not.
func (pl *runPlan) spread(n int, name string) {
	n = max(1, min(n, pl.supers))
	pl.seconds = pl.onceSec + overlapped(pl.tiledSec/float64(n), pl.reportSec)
	if n > 1 {
		pl.detail += fmt.Sprintf(", spread over %s", name)
	}
}

// technique is what differs between the engines: sizes, the device
// structures, and the kernel that fills a super-tile of counts.
type technique interface {
	name() string
	// prefCols is the super-tile width the technique works best with.
	prefCols(p *allpairs.Problem, info gpurt.Info) int
	// usesColumns reports whether the technique needs the column map.
	usesColumns() bool
	// fixed returns the device bytes of structures over the universe,
	// whatever the pieces.
	fixed(p *allpairs.Problem) int64
	// size chooses how the technique runs with left bytes for its piece
	// structures and per-slot buffers, whole (every set on the device at
	// once) or in pieces, and returns each slot's own bytes; it may set
	// the plan's technique fields. An error wraps allpairs.ErrCannotRun.
	size(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan, left int64, whole bool) (perSlot int64, err error)
	// aux returns the device bytes of the technique's structure over n
	// sets holding elems elements, in the given roles.
	aux(p *allpairs.Problem, cols *columns, pl *runPlan, role, n int, elems int64) int64
	// seconds estimates the device time of the technique's kernels: those
	// that build its structures, and those that count, which overlap the
	// copies of the counts to the host.
	seconds(p *allpairs.Problem, cols *columns, info gpurt.Info, pl *runPlan) (build, count float64)
	// build queues the building of pc's structure on s, its sets being on
	// the device.
	build(c *gpurt.Ctx, r *runner, pc *piece, s *gpurt.Stream) error
	// fill queues the counts of super-tile t into sl.d on sl.stream, from
	// the pieces r.rp and r.sp.
	fill(c *gpurt.Ctx, r *runner, sl *slot, t super) error
}

func cannot(format string, args ...any) error {
	return fmt.Errorf("%w: %s", allpairs.ErrCannotRun, fmt.Sprintf(format, args...))
}

// Throughputs of the cost model, fitted on the H100 host: bytes per second
// to the device through pinned staging and back to pinned memory (the bus,
// PCIe 5 there, which gpurt.Info does not describe: other hosts keep these),
// and the fixed costs of a run and a super-tile.
const (
	uploadRate   = 16e9 // Go memory copied into pinned staging, then sent
	downloadRate = 50e9
	runSetup     = 2e-3
	superSetup   = 30e-6
)

// plan sizes a run of t on p with budget bytes of device memory.
func plan(p *allpairs.Problem, t technique, tu tuning, info gpurt.Info, budget int64) (*runPlan, error) {
	return planWith(p, t, tu, info, budget, false)
}

func planWith(p *allpairs.Problem, t technique, tu tuning, info gpurt.Info, budget int64, half bool) (*runPlan, error) {
	cols := columnsFor(t, p, info)
	pl := &runPlan{half: half}
	pl.fixed = t.fixed(p)
	if t.usesColumns() {
		pl.fixed += 4 * int64(p.Universe)
	}
	// Super-tiles of tu.tileCounts counts, the technique's width; where that
	// does not fit even in pieces, smaller ones (cut finer, pieces can be
	// smaller too).
	var perSlot int64
	var err error
	most, width := tu.tileCounts, t.prefCols(p, info)
	for {
		pl.g = newGrid(p, most, width)
		if _, _, ok := p.Tiled(); ok && int64(pl.g.rows)*int64(pl.g.cols) > most {
			// The caller's tiles are larger than our super-tiles: one each.
			pl.g.sr, pl.g.sc = pl.g.rows, pl.g.cols
		}
		pl.ldd = roundUp(pl.g.sc, 16)
		outSlot := 4*int64(pl.g.sr)*int64(pl.ldd) + 4*int64(pl.g.sr)*int64(pl.g.sc)
		for pl.slots = slotsFor(p); pl.slots >= 2; pl.slots-- {
			avail := budget - pl.fixed - int64(pl.slots)*outSlot
			if avail < 0 {
				err = cannot("needs %s for structures over the %d elements and %d super-tiles of %dx%d counts, the device has %s to plan in",
					gpurt.FormatBytes(uint64(pl.fixed)), p.Universe, pl.slots, pl.g.sr, pl.g.sc, gpurt.FormatBytes(uint64(max(budget, 0))))
				continue
			}
			if perSlot, err = pl.whole(p, t, cols, info, avail); err == nil {
				break
			}
			if perSlot, err = pl.pieced(p, t, cols, info, avail); err == nil {
				break
			}
		}
		rows, cols, tiled := p.Tiled()
		if err == nil || most < 256 || tiled && pl.g.sr <= rows && pl.g.sc <= cols {
			break
		}
		most, width = most/4, max(min(width, pl.g.sc)/2, 1)
	}
	if err != nil {
		return nil, err
	}
	supers := pl.g.supers()
	// No more slots than super-tiles: each costs allocations.
	pl.slots = min(pl.slots, max(1, len(supers)))
	outSlot := 4*int64(pl.g.sr)*int64(pl.ldd) + 4*int64(pl.g.sr)*int64(pl.g.sc)
	pl.memory = pl.fixed + int64(pl.slots)*(outSlot+perSlot) + int64(pl.rBufs)*pl.rBytes
	if !pl.shared {
		pl.memory += pl.sBytes
	}
	var counts int64
	for _, s := range supers {
		counts += int64(s.rows) * int64(s.cols)
	}
	// Uploads: S's pieces once, R's once per S piece if it is cut.
	up := csrBytes(p.R, span{0, p.R.Len()})
	if len(pl.rPieces) > 1 {
		up *= int64(len(pl.sPieces))
	}
	if !pl.shared {
		up += csrBytes(p.S, span{0, p.S.Len()})
	}
	if usesIndex(t) && len(pl.sPieces) == 1 {
		up += 4 * int64(p.Universe) // the document frequencies
	}
	build, count := t.seconds(p, cols, info, pl)
	if len(pl.rPieces) > 1 {
		build += float64(len(pl.sPieces)-1) * float64(p.Stats.R.Elements) / ratesFor(info).build
	}
	// The copies of the counts overlap the counting of the next super-tile,
	// not perfectly: a quarter of the shorter is added.
	down := float64(4*counts) / downloadRate
	switch {
	case p.CountOnly:
		down = 0 // counted on the device (count_ge)
	case selectsPairs(p, pl.g):
		down = 12 * p.ExpectedPairs() / downloadRate // selected on the device (compact_ge)
	}
	pl.onceSec = runSetup + float64(up)/uploadRate + build
	pl.tiledSec = overlapped(count, down) + superSetup*float64(len(supers))
	pl.reportSec = p.ReportSeconds()
	pl.supers = len(supers)
	pl.spread(1, "")
	pl.detail = fmt.Sprintf("%d super-tiles of %dx%d, %d columns", len(supers), pl.g.sr, pl.g.sc, cols.k) + pl.detail
	if !pl.shared && (len(pl.rPieces) > 1 || len(pl.sPieces) > 1) {
		pl.detail += fmt.Sprintf(", in %d x %d pieces", len(pl.rPieces), len(pl.sPieces))
	}
	return pl, nil
}

// slotsFor is how many super-tiles a run keeps in flight where the device
// has room, fewer where not: 3 for a count, whose super-tiles leave the
// device as a number; pairSlots where the pairs come back. A slot's pairs
// hold it until the host has formatted them, so the slots bound the
// deliveries in flight: with 6 instead of 3, one GPU's processes that
// write 10^8 pairs took 12-27% less (docs/PERFORMANCE.md, runs R and R2).
func slotsFor(p *allpairs.Problem) int {
	if p.CountOnly {
		return 3
	}
	return pairSlots
}

// pairSlots is slotsFor's number for a run that brings its pairs back.
const pairSlots = 6

// whole plans a run with every set on the device at once.
func (pl *runPlan) whole(p *allpairs.Problem, t technique, cols *columns, info gpurt.Info, avail int64) (int64, error) {
	all := func(c *sets.Collection) span { return span{0, c.Len()} }
	in := csrBytes(p.R, all(p.R))
	if !p.Self {
		in += csrBytes(p.S, all(p.S))
	}
	left := avail - in
	if left < 0 {
		return 0, cannot("needs %s for the sets, %s left", gpurt.FormatBytes(uint64(in)), gpurt.FormatBytes(uint64(max(avail, 0))))
	}
	pl.detail = ""
	perSlot, err := t.size(p, cols, info, pl, left, true)
	if err != nil {
		return 0, err
	}
	pl.rPieces, pl.sPieces, pl.shared, pl.rBufs = []span{all(p.R)}, []span{all(p.S)}, p.Self, 1
	rc := pieceCap{sets: p.R.Len(), elems: p.Stats.R.Elements}
	sc := pieceCap{sets: p.S.Len(), elems: p.Stats.S.Elements}
	if p.Self {
		rc.aux = t.aux(p, cols, pl, roleR|roleS, rc.sets, rc.elems)
	} else {
		rc.aux = t.aux(p, cols, pl, roleR, rc.sets, rc.elems)
		sc.aux = t.aux(p, cols, pl, roleS, sc.sets, sc.elems)
	}
	pl.rBytes, pl.sBytes = rc.bytes(), sc.bytes()
	need := pl.rBytes + int64(pl.slots)*perSlot
	if !p.Self {
		need += pl.sBytes
	}
	if need > avail {
		return 0, cannot("needs %s of device memory, %s left", gpurt.FormatBytes(uint64(need)), gpurt.FormatBytes(uint64(avail)))
	}
	return perSlot, nil
}

// pieced plans a run with R and S cut into pieces that fit.
func (pl *runPlan) pieced(p *allpairs.Problem, t technique, cols *columns, info gpurt.Info, avail int64) (int64, error) {
	pl.detail = ""
	perSlot, err := t.size(p, cols, info, pl, avail, false)
	if err != nil {
		return 0, err
	}
	left := avail - int64(pl.slots)*perSlot
	capOf := func(c *sets.Collection, role int, sp span) pieceCap {
		e := int64(c.Offsets[sp.hi] - c.Offsets[sp.lo])
		return pieceCap{sets: sp.len(), elems: e, aux: t.aux(p, cols, pl, role, sp.len(), e)}
	}
	bytesR := func(sp span) int64 { return capOf(p.R, roleR, sp).bytes() }
	bytesS := func(sp span) int64 { return capOf(p.S, roleS, sp).bytes() }
	rp, sp, rBufs, ok := piecePlan(p, pl.g, left, bytesR, bytesS)
	if !ok {
		return 0, cannot("a piece of %d sets does not fit in the %s left", min(pl.g.sr, pl.g.sc), gpurt.FormatBytes(uint64(max(left, 0))))
	}
	pl.rPieces, pl.sPieces, pl.shared, pl.rBufs = rp, sp, false, rBufs
	pl.rBytes, pl.sBytes = 0, 0
	for _, x := range rp {
		pl.rBytes = max(pl.rBytes, bytesR(x))
	}
	for _, x := range sp {
		pl.sBytes = max(pl.sBytes, bytesS(x))
	}
	return perSlot, nil
}

// item is one super-tile and the pieces of R and S it reads.
type item struct {
	s    super
	a, b int
}

// items orders the super-tiles by S piece, then R piece, then row-major.
func (pl *runPlan) items() []item {
	pieceOf := func(ps []span, x int) int {
		for i, s := range ps {
			if x < s.hi {
				return i
			}
		}
		return len(ps) - 1
	}
	var out []item
	for _, s := range pl.g.supers() {
		out = append(out, item{s, pieceOf(pl.rPieces, s.r0), pieceOf(pl.sPieces, s.c0)})
	}
	slices.SortStableFunc(out, func(x, y item) int {
		if x.b != y.b {
			return x.b - y.b
		}
		return x.a - y.a
	})
	return out
}

// runner is one run's device state.
type runner struct {
	st    *state
	p     *allpairs.Problem
	pl    *runPlan
	t     technique
	info  gpurt.Info
	cols  *columns
	owned []gpurt.Buffer

	colOf       gpurt.Buffer
	start, fill gpurt.Buffer // scan-count's list starts and fill counters, over the universe
	sums        gpurt.Buffer // scan-count's partial sums of the list lengths
	up          *gpurt.Stream

	// devCount: the plan wants only the number of pairs (not tiles), which
	// count_ge counts on the device; needR and needS are the sets'
	// thresholds there where they differ (containment), else empty.
	devCount     bool
	devPairs     bool // the plan wants pairs (not tiles): compact_ge selects them on the device
	needR, needS gpurt.Buffer

	rBuf   []*piece // R's piece buffers (one is also S's when shared)
	sBuf   *piece
	rp, sp *piece // the pieces of the super-tiles being queued

	trace *trace
}

// traceRuns, from $XSECT_GPUALLPAIRS_TRACE, prints the phases of every run
// on standard error.
var traceRuns = os.Getenv("XSECT_GPUALLPAIRS_TRACE") != ""

// trace times a run's phases, and inside the pipeline what the owner
// waited for: the host's delivery of a slot's last super-tile, and the
// device's count and the copy of a super-tile's pairs.
type trace struct {
	name            string
	last            time.Time
	phases          []string
	hostWait, fetch time.Duration
}

func (r *runner) mark(phase string) {
	if t := r.trace; t != nil {
		now := time.Now()
		t.phases = append(t.phases, fmt.Sprintf("%s %.2f ms", phase, float64(now.Sub(t.last))/1e6))
		t.last = now
	}
}

func (r *runner) report() {
	if t := r.trace; t != nil {
		r.mark("free")
		fmt.Fprintf(os.Stderr, "gpuallpairs %s: %s; in count and copy, waited %.2f ms for the host's deliveries, %.2f ms for the device and the pairs' copies\n",
			t.name, strings.Join(t.phases, ", "), float64(t.hostWait)/1e6, float64(t.fetch)/1e6)
	}
}

// slot is one super-tile in flight: its stream, its device counts, packed
// tiles and pinned host copy, and the event that says the copy is done.
type slot struct {
	id     int // its place among the run's slots, and its pinned buffer's (state.pinned)
	stream *gpurt.Stream
	ev     *gpurt.Event
	d, pk  gpurt.Buffer
	a, b   gpurt.Buffer // the matrix product's slices, when not resident
	host   []byte
	count  gpurt.Buffer  // the number of pairs: the slot's when devCount, the super-tile's when devPairs
	pairs  int           // the pairs fetch copied to host; -1: every count instead
	done   chan struct{} // closed when the host is done with host
}

// alloc returns n bytes of device memory for the run, from the pool of
// buffers earlier runs left if one fits.
func (r *runner) alloc(c *gpurt.Ctx, n int64) (gpurt.Buffer, error) {
	n = max(n, 4)
	b, err := r.st.devPool.Take(c, int(n))
	if err != nil {
		return gpurt.Buffer{}, err
	}
	r.owned = append(r.owned, b)
	return b.Slice(0, int(n)), nil
}

func (r *runner) launch(c *gpurt.Ctx, name string, grid, block gpurt.Dim, shared int, s *gpurt.Stream, args ...any) error {
	k, err := r.st.mod.Kernel(name)
	if err != nil {
		return err
	}
	return c.Launch(k, grid, block, shared, s, args...)
}

// blocks returns a grid of n blocks, capped for grid-stride kernels.
func blocks(n int) gpurt.Dim { return gpurt.Dim{X: clamp(n, 1, 1<<20)} }

var threads = gpurt.Dim{X: 256}

// newPiece allocates a piece buffer of capacity cp.
func (r *runner) newPiece(c *gpurt.Ctx, role int, bytes int64) (*piece, error) {
	pc := &piece{role: role, lastUse: -1}
	var err error
	if pc.buf, err = r.alloc(c, bytes); err != nil {
		return nil, err
	}
	if pc.ev, err = c.NewEvent(); err != nil {
		return nil, err
	}
	return pc, nil
}

// load queues the upload of sets sp into pc through u; the structure is
// built by built once u is done.
func (r *runner) load(c *gpurt.Ctx, pc *piece, sp span, u *gpurt.Uploads) error {
	col := r.p.R
	if pc.role == roleS {
		col = r.p.S
	}
	pc.sp, pc.loaded = sp, true
	lo, hi := col.Offsets[sp.lo], col.Offsets[sp.hi]
	cp := pieceCap{sets: sp.len(), elems: int64(hi - lo)}
	cp.aux = r.t.aux(r.p, r.cols, r.pl, pc.role, cp.sets, cp.elems)
	eb, ob := cp.parts()
	pc.elems, pc.offs, pc.aux = pc.buf.Slice(0, int(4*cp.elems)), pc.buf.Slice(int(eb), int(ob)), pc.buf.Slice(int(eb+ob), int(cp.aux))
	offs := make([]uint64, sp.len()+1)
	for i := range offs {
		offs[i] = col.Offsets[sp.lo+i] - lo
	}
	if err := u.Add(pc.elems.Slice(0, 4*int(hi-lo)), gpurt.Bytes(col.Elements[lo:hi])); err != nil {
		return err
	}
	if err := u.Add(pc.offs.Slice(0, 8*len(offs)), gpurt.Bytes(offs)); err != nil {
		return err
	}
	if usesIndex(r.t) && pc.role&roleS != 0 && sp.len() == r.p.S.Len() {
		// The lists' lengths, known for the whole of S (pieces count
		// theirs on the device); mmscan's heavy elements get none.
		df := r.p.DFS
		if t, ok := r.t.(mmscanTech); ok {
			df = mmscanColumns(r.p, r.info, t.heavy).lightDF()
		}
		return u.Add(r.fill.Slice(0, 4*r.p.Universe), gpurt.Bytes(df))
	}
	return nil
}

// built queues pc's structure after its upload, and records its event.
func (r *runner) built(c *gpurt.Ctx, pc *piece) error {
	if err := r.t.build(c, r, pc, r.up); err != nil {
		return err
	}
	return c.Record(pc.ev, r.up)
}

// loadNow uploads and builds sp into pc and waits for it, one owner of the
// GPU at a time (see gpurt.Device.UploadLock).
func (r *runner) loadNow(c *gpurt.Ctx, pc *piece, sp span) error {
	mu := r.st.dev.UploadLock()
	mu.Lock()
	defer mu.Unlock()
	u := r.st.stage.Uploads(r.up)
	if err := r.load(c, pc, sp, u); err != nil {
		return err
	}
	if err := u.Flush(c); err != nil {
		return err
	}
	r.mark("upload queued")
	if err := r.built(c, pc); err != nil {
		return err
	}
	err := c.Wait(pc.ev)
	r.mark("uploaded and built")
	return err
}

// ownersBudget is the device memory one plan may use on every owner:
// the least over the owners of the budget of its free memory (frees, from
// gpurt.Set.OwnerMemory) plus its pooled buffers.
func ownersBudget(tu tuning, sts []*state, frees []int64) int64 {
	budget := int64(-1)
	for i, st := range sts {
		if b := tu.budget(frees[i] + st.devPool.Pooled()); budget < 0 || b < budget {
			budget = b
		}
	}
	return max(budget, 0)
}

// runSet computes p with t on the owners of set, which share the
// super-tiles (each takes the next when it is done with its last), and
// delivers every super-tile through out. Every owner runs the same plan.
func runSet(ctx context.Context, set *gpurt.Set, p *allpairs.Problem, t technique, tu tuning, out *allpairs.Output) error {
	sts := make([]*state, set.Len())
	for i := range sts {
		sts[i] = stateOf(set.Owner(i))
	}
	defer set.LockOwners(func(i int) *sync.Mutex { return &sts[i].mu })()
	// Kernels, cuBLAS's int8 products and memory, owner by owner: one plan
	// fits them all.
	half := false
	if _, ok := t.(mmTech); ok && tu.half {
		half = true
		out.Note("%s: float16 products (exact below 2^24 per count): the tuning asks for them", t.name())
	}
	int8Fails := false
	setup := time.Now()
	frees, err := set.OwnerMemory(func(i int, c *gpurt.Ctx) error {
		if err := sts[i].load(c); err != nil {
			return err
		}
		if needsBLAS(t) && !half && !sts[i].int8Works(c) {
			int8Fails = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if traceRuns {
		fmt.Fprintf(os.Stderr, "gpuallpairs %s: the owners' kernels, cuBLAS and memory %.2f ms\n", t.name(), float64(time.Since(setup))/1e6)
	}
	budget := ownersBudget(tu, sts, frees)
	if _, ok := t.(mmscanTech); ok && int8Fails {
		return cannot("mmscan: cuBLAS does not multiply int8 matrices here")
	}
	if int8Fails {
		half = true
		out.Note("%s: float16 products (exact below 2^24 per count): cuBLAS does not multiply int8 matrices here", t.name())
	}
	pl, err := planSet(p, t, tu, set, budget, half)
	if err != nil {
		return err
	}
	items := pl.items()
	cols := columnsFor(t, p, set.Owner(0).Info())
	rep, err := set.Run(ctx, len(items), func(ctx context.Context, w *gpurt.Worker) error {
		st := sts[w.Index()]
		return st.dev.Do(func(c *gpurt.Ctx) error {
			if tu.budget(frees[w.Index()]) < pl.memory {
				// The pooled buffers may not fit the plan's.
				if err := st.devPool.Drop(c); err != nil {
					return err
				}
			}
			return st.run(ctx, c, p, t, pl, items, cols, out, w)
		})
	})
	out.Note("%s on %s: %v", t.name(), set, rep)
	return err
}

// run is one owner's part of a run: its buffers and streams, then the
// super-tiles it takes from w. Inside Do.
func (st *state) run(ctx context.Context, c *gpurt.Ctx, p *allpairs.Problem, t technique, pl *runPlan, items []item, cols *columns,
	out *allpairs.Output, w *gpurt.Worker) error {
	var tr *trace
	if traceRuns {
		tr = &trace{name: t.name(), last: time.Now()}
	}
	var err error
	_, _, tiled := p.Tiled()
	r := &runner{st: st, p: p, pl: pl, t: t, info: c.Info(), cols: cols, trace: tr,
		devCount: !tiled && out.CountOnly(), devPairs: !tiled && !out.CountOnly() && int64(pl.g.sr)*int64(pl.g.sc) < 1<<31}
	r.mark("plan")
	slots := make([]*slot, pl.slots)
	defer r.report()
	defer func() {
		c.Synchronize()
		for _, sl := range slots {
			if sl != nil {
				c.DestroyEvent(sl.ev)
				c.DestroyStream(sl.stream)
			}
		}
		for _, pc := range append(r.rBuf, r.sBuf) {
			if pc != nil {
				c.DestroyEvent(pc.ev)
			}
		}
		c.DestroyStream(r.up)
		st.devPool.Keep(c, r.owned, devKeep)
	}()
	for i := range slots {
		sl := &slot{id: i}
		slots[i] = sl
		if sl.stream, err = c.NewStream(); err != nil {
			return err
		}
		if sl.ev, err = c.NewEvent(); err != nil {
			return err
		}
		if sl.d, err = r.alloc(c, 4*int64(pl.g.sr)*int64(pl.ldd)); err != nil {
			return err
		}
		if r.devCount {
			if sl.count, err = r.alloc(c, 8); err != nil {
				return err
			}
			if err = c.Memset32(sl.count, 0, sl.stream); err != nil {
				return err
			}
			continue
		}
		if sl.pk, err = r.alloc(c, 4*int64(pl.g.sr)*int64(pl.g.sc)); err != nil {
			return err
		}
		if r.devPairs {
			if sl.count, err = r.alloc(c, 8); err != nil {
				return err
			}
		}
		// A pair plan's slot holds the pairs fetch copies, about 3 MiB
		// a super-tile on problems of 10^8 pairs: it starts small and
		// grows to what a super-tile needs (pinning costs 0.3-0.5 ms a
		// MiB, docs/GPU.md).
		full := 4 * pl.g.sr * pl.g.sc
		if r.devPairs {
			full = min(full, pairsHostStart)
		}
		if sl.host, err = st.pinnedBuf(c, i, full); err != nil {
			return err
		}
	}
	if r.up, err = c.NewStream(); err != nil {
		return err
	}
	if _, constant := p.ConstNeed(); (r.devCount || r.devPairs) && !constant {
		if err := r.uploadNeeds(c); err != nil {
			return err
		}
	}
	if t.usesColumns() {
		if r.colOf, err = r.alloc(c, 4*int64(p.Universe)); err != nil {
			return err
		}
		mu := st.dev.UploadLock()
		mu.Lock()
		err := st.stage.Upload(c, r.up, r.colOf.Slice(0, 4*p.Universe), gpurt.Bytes(r.cols.colOf))
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if usesIndex(t) {
		if r.start, err = r.alloc(c, 8*int64(p.Universe+1)); err != nil {
			return err
		}
		if r.fill, err = r.alloc(c, 4*int64(p.Universe)); err != nil {
			return err
		}
		if r.sums, err = r.alloc(c, 8*1024); err != nil {
			return err
		}
	}
	for range pl.rBufs {
		role := roleR
		if pl.shared {
			role |= roleS
		}
		pc, err := r.newPiece(c, role, pl.rBytes)
		if err != nil {
			return err
		}
		r.rBuf = append(r.rBuf, pc)
	}
	if pl.shared {
		r.sBuf = r.rBuf[0]
	} else if r.sBuf, err = r.newPiece(c, roleS, pl.sBytes); err != nil {
		return err
	}
	r.mark("allocate")
	return r.pipeline(ctx, c, slots, items, out, w)
}

// pipeline computes the super-tiles w takes, in their order (by pieces),
// each on its slot's stream, while the host delivers the previous ones and
// the next R piece is uploaded.
func (r *runner) pipeline(ctx context.Context, c *gpurt.Ctx, slots []*slot, items []item, out *allpairs.Output, w *gpurt.Worker) error {
	var (
		errMu sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
	}
	failed := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return first
	}
	// deliver hands the k-th super-tile this owner queued, s, to the host.
	deliver := func(k int, s super) error {
		sl := slots[k%len(slots)]
		start := time.Now()
		if err := c.Wait(sl.ev); err != nil {
			return err
		}
		if r.devPairs {
			if err := r.fetch(c, sl, s); err != nil {
				return err
			}
		}
		if r.trace != nil {
			r.trace.fetch += time.Since(start)
		}
		sl.done = make(chan struct{})
		wg.Add(1)
		go func(s super, sl *slot) {
			defer wg.Done()
			defer close(sl.done)
			if err := r.deliver(s, sl, out); err != nil {
				fail(err)
			}
		}(s, sl)
		return nil
	}
	// The next R piece, uploading into the buffer not in use.
	var next struct {
		u     *gpurt.Uploads
		pc    *piece
		steps int
	}
	// k counts the super-tiles this owner has queued; prev is the last
	// one's index in items. The indexes w hands out increase, so an owner
	// enters each block of items at most once.
	k, prev := 0, -1
	var err error
	for {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = failed(); err != nil {
			break
		}
		i, ok := w.Next()
		if !ok {
			break
		}
		it := items[i]
		newBlock := prev < 0 || it.a != items[prev].a || it.b != items[prev].b
		if newBlock {
			if err = r.enter(c, it, next.u, next.pc); err != nil {
				break
			}
			next.u, next.pc = nil, nil
			if k == 0 {
				r.mark("upload and build")
			}
		}
		sl := slots[k%len(slots)]
		if sl.done != nil {
			start := time.Now()
			<-sl.done // the host is done with the slot's last super-tile
			if r.trace != nil {
				r.trace.hostWait += time.Since(start)
			}
		}
		if err = r.queue(c, sl, it.s); err != nil {
			break
		}
		r.rp.lastUse, r.sp.lastUse = k, k
		if k > 0 {
			if err = deliver(k-1, items[prev].s); err != nil {
				break
			}
		}
		if newBlock && len(r.rBuf) > 1 {
			// Everything before this block is done: start the upload
			// of the next block's R piece into the other buffer. With
			// several owners, the next block is where this owner's
			// next super-tile most likely lies, not surely.
			end := i + 1
			for end < len(items) && items[end].a == it.a && items[end].b == it.b {
				end++
			}
			if end < len(items) && items[end].a != it.a {
				pc := r.rBuf[0]
				if pc == r.rp {
					pc = r.rBuf[1]
				}
				if want := r.pl.rPieces[items[end].a]; pc.lastUse < k && !(pc.loaded && pc.sp == want) {
					next.u, next.pc = r.st.stage.Uploads(r.up), pc
					if err = r.load(c, pc, want, next.u); err != nil {
						break
					}
					next.steps = max(1, (end-i-1)/w.Owners())
				}
			}
		}
		if next.u != nil && !next.u.Done() {
			// Spread the upload over the block's super-tiles.
			if err = next.u.Step(c, ceilDiv(next.u.Left(), next.steps)); err != nil {
				break
			}
			next.steps = max(1, next.steps-1)
		}
		prev = i
		k++
	}
	if err == nil && k > 0 {
		err = deliver(k-1, items[prev].s)
	}
	r.mark("count and copy")
	wg.Wait()
	if err == nil && r.devCount {
		err = r.deliverCount(c, slots, out)
	}
	r.mark("deliver")
	if err == nil {
		err = failed()
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// enter makes the pieces of it's block current: S's piece (loaded after
// the device is done with the last one), and R's, which may be on its way
// through u into pc.
func (r *runner) enter(c *gpurt.Ctx, it item, u *gpurt.Uploads, pc *piece) error {
	want := r.pl.sPieces[it.b]
	if !r.sBuf.loaded || r.sBuf.sp != want {
		if err := c.Synchronize(); err != nil {
			return err
		}
		if err := r.loadNow(c, r.sBuf, want); err != nil {
			return err
		}
	}
	r.sp = r.sBuf
	want = r.pl.rPieces[it.a]
	if r.pl.shared {
		r.rp = r.sBuf
		return nil
	}
	if u != nil {
		// Finished even when it is not it's piece (with several owners
		// the prefetch is a guess): it may serve a later block.
		if err := u.Flush(c); err != nil {
			return err
		}
		if err := r.built(c, pc); err != nil {
			return err
		}
	}
	for _, pc := range r.rBuf {
		if pc.loaded && pc.sp == want {
			r.rp = pc
			return c.Wait(pc.ev)
		}
	}
	// Not prefetched: load it into a buffer the device is done with.
	pc = r.rBuf[0]
	if len(r.rBuf) > 1 && pc == r.rp {
		pc = r.rBuf[1]
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	if err := r.loadNow(c, pc, want); err != nil {
		return err
	}
	r.rp = pc
	return nil
}

// queue queues one super-tile: its counts, then what leaves the device:
// for count-only plans the number of qualifying pairs (count_ge), for pair
// plans those pairs (compact_ge; fetch copies them), for tile plans every
// count, repacked into the caller's tiles and copied to the slot's pinned
// memory.
func (r *runner) queue(c *gpurt.Ctx, sl *slot, s super) error {
	if err := r.t.fill(c, r, sl, s); err != nil {
		return err
	}
	var err error
	switch {
	case r.devCount:
		err = r.launchSelect(c, "count_ge", sl, s, sl.count)
	case r.devPairs:
		if err = c.Memset32(sl.count.Slice(0, 4), 0, sl.stream); err != nil {
			return err
		}
		if err = r.launchSelect(c, "compact_ge", sl, s, sl.pk, uint32(sl.pk.Len()/12), sl.count); err != nil {
			return err
		}
		// The number of pairs comes back on the slot's stream: a copy on
		// the default stream would wait for the super-tiles queued after.
		err = c.CopyToHostAsync(sl.host[:4], sl.count.Slice(0, 4), sl.stream)
	default:
		err = r.repack(c, sl, s)
	}
	if err != nil {
		return err
	}
	return c.Record(sl.ev, sl.stream)
}

// superArgs returns the kernel arguments that describe super-tile s in
// sl.d, as repack, count_ge and compact_ge take them.
func (r *runner) superArgs(s super) (isFloat uint32, ldd uint64, sr, sc uint32, r0, c0 uint64, self uint32) {
	if _, ok := r.t.(mmTech); ok && r.pl.half {
		isFloat = 1
	}
	if r.pl.g.self {
		self = 1
	}
	return isFloat, uint64(r.pl.ldd), uint32(s.rows), uint32(s.cols), uint64(s.r0), uint64(s.c0), self
}

// launchSelect launches count_ge or compact_ge on super-tile s, with the
// problem's thresholds and the kernel's own last arguments.
func (r *runner) launchSelect(c *gpurt.Ctx, name string, sl *slot, s super, rest ...any) error {
	isFloat, ldd, sr, sc, r0, c0, self := r.superArgs(s)
	need, _ := r.p.ConstNeed()
	args := append([]any{sl.d, isFloat, ldd, sr, sc, r0, c0, self, need, r.needR, r.needS}, rest...)
	return r.launch(c, name, blocks(min(ceilDiv(s.rows*s.cols, 256), r.info.SMs*32)), threads, 0, sl.stream, args...)
}

// repack queues the repacking of super-tile s into the caller's tiles and
// their copy to the slot's pinned memory.
func (r *runner) repack(c *gpurt.Ctx, sl *slot, s super) error {
	g := r.pl.g
	n := s.rows * s.cols
	isFloat, ldd, sr, sc, r0, c0, self := r.superArgs(s)
	rows, cols := min(g.rows, s.rows), min(g.cols, s.cols)
	if err := r.launch(c, "repack", blocks(min(ceilDiv(n, 256), r.info.SMs*32)), threads, 0, sl.stream,
		sl.d, isFloat, ldd, sr, sc, uint32(rows), uint32(cols), r0, c0, self, sl.pk); err != nil {
		return err
	}
	// Copy only the tiles the caller gets (not those below the diagonal),
	// in runs of adjacent ones.
	spans := [][2]int{{0, n}}
	if _, _, ok := r.p.Tiled(); ok {
		spans = spans[:0]
		for _, t := range g.parts(s) {
			end := t.off + t.rows*t.cols
			if k := len(spans) - 1; k >= 0 && spans[k][1] == t.off {
				spans[k][1] = end
			} else {
				spans = append(spans, [2]int{t.off, end})
			}
		}
	}
	for _, sp := range spans {
		lo, hi := 4*sp[0], 4*sp[1]
		if err := c.CopyToHostAsync(sl.host[lo:hi], sl.pk.Slice(lo, hi-lo), sl.stream); err != nil {
			return err
		}
	}
	return nil
}

// fetch copies a pair plan's super-tile s, counted on sl's stream, to the
// slot's pinned memory: its qualifying pairs, or where more qualify than
// the slot holds, every count (sl.pairs < 0). Once the super-tile's event
// has passed: queue copied their number to the start of sl.host.
func (r *runner) fetch(c *gpurt.Ctx, sl *slot, s super) error {
	n := int(binary.LittleEndian.Uint32(sl.host[:4]))
	if n > sl.pk.Len()/12 {
		sl.pairs = -1
		if err := r.hostFor(c, sl, sl.pk.Len()); err != nil {
			return err
		}
		if err := r.repack(c, sl, s); err != nil {
			return err
		}
	} else {
		sl.pairs = n
		if err := r.hostFor(c, sl, 12*n); err != nil {
			return err
		}
		if n > 0 {
			if err := c.CopyToHostAsync(sl.host[:12*n], sl.pk.Slice(0, 12*n), sl.stream); err != nil {
				return err
			}
		}
	}
	return c.Sync(sl.stream)
}

// pairsHostStart is the size a pair plan's slot's pinned buffer starts at
// (a variable for the tests).
var pairsHostStart = 4 << 20

// hostFor makes sl's pinned buffer hold at least n bytes, doubling it at
// least (to the super-tile's every count at most), so that a run grows it
// a few times only. Nothing reads or writes it meanwhile: the host was done
// with it before the slot's super-tile was queued.
func (r *runner) hostFor(c *gpurt.Ctx, sl *slot, n int) error {
	if n <= len(sl.host) {
		return nil
	}
	n = max(n, min(2*len(sl.host), sl.pk.Len()))
	var err error
	sl.host, err = r.st.pinnedBuf(c, sl.id, n)
	return err
}

// deliver hands a super-tile, now in pinned memory, to out: the caller's
// tiles one by one, or for pair plans row strips filtered in parallel.
func (r *runner) deliver(s super, sl *slot, out *allpairs.Output) error {
	g := r.pl.g
	if r.devCount {
		out.Progress(pairsIn(g.self, s.r0, s.c0, s.rows, s.cols))
		return nil
	}
	if r.devPairs && sl.pairs >= 0 {
		return r.deliverPairs(s, sl, out)
	}
	all := gpurt.Uint32s(sl.host)
	if _, _, ok := r.p.Tiled(); ok {
		for _, t := range g.parts(s) {
			tile := &allpairs.Tile{Row0: t.row0, Col0: t.col0, Rows: t.rows, Cols: t.cols, Counts: all[t.off : t.off+t.rows*t.cols]}
			if err := out.Tile(tile); err != nil {
				return err
			}
			out.Progress(pairsIn(g.self, t.row0, t.col0, t.rows, t.cols))
		}
		return nil
	}
	strips := clamp(r.p.Threads, 1, s.rows)
	h := ceilDiv(s.rows, strips)
	var wg sync.WaitGroup
	errs := make([]error, strips)
	for k := 0; k < strips; k++ {
		x0 := k * h
		if x0 >= s.rows {
			break
		}
		x1 := min(s.rows, x0+h)
		wg.Add(1)
		go func(k, x0, x1 int) {
			defer wg.Done()
			tile := &allpairs.Tile{Row0: s.r0 + x0, Col0: s.c0, Rows: x1 - x0, Cols: s.cols, Counts: all[x0*s.cols : x1*s.cols]}
			errs[k] = out.Tile(tile)
			out.Progress(pairsIn(g.self, tile.Row0, tile.Col0, tile.Rows, tile.Cols))
		}(k, x0, x1)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deliverPairs reports the pairs fetch copied, in parallel parts.
func (r *runner) deliverPairs(s super, sl *slot, out *allpairs.Output) error {
	triples := gpurt.Uint32s(sl.host)[:3*sl.pairs]
	parts := clamp(r.p.Threads, 1, max(1, sl.pairs/(1<<14)))
	h := ceilDiv(sl.pairs, parts)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := k*h, min(sl.pairs, (k+1)*h)
		if lo >= hi {
			break
		}
		wg.Go(func() {
			w := out.Writer()
			w.AddTriples(s.r0, s.c0, triples[3*lo:3*hi])
			w.Close()
		})
	}
	wg.Wait()
	out.Progress(pairsIn(r.pl.g.self, s.r0, s.c0, s.rows, s.cols))
	return out.Err()
}

// uploadNeeds puts the sets' thresholds on the device for count_ge.
func (r *runner) uploadNeeds(c *gpurt.Ctx) error {
	up := func(k int, need func(int) uint32) (gpurt.Buffer, error) {
		v := make([]uint32, k)
		for i := range v {
			v[i] = need(i)
		}
		b, err := r.alloc(c, 4*int64(k))
		if err != nil || k == 0 {
			return b, err
		}
		mu := r.st.dev.UploadLock()
		mu.Lock()
		defer mu.Unlock()
		return b, r.st.stage.Upload(c, r.up, b, gpurt.Bytes(v))
	}
	var err error
	if r.needR, err = up(r.p.R.Len(), r.p.NeedR); err != nil {
		return err
	}
	if r.needS, err = up(r.p.S.Len(), r.p.NeedS); err != nil {
		return err
	}
	return c.Sync(r.up) // before the first count_ge, on another stream
}

// deliverCount adds the slots' numbers of pairs to out, once the device
// is done with them.
func (r *runner) deliverCount(c *gpurt.Ctx, slots []*slot, out *allpairs.Output) error {
	var n int64
	for _, sl := range slots {
		if err := c.Sync(sl.stream); err != nil {
			return err
		}
		var v [8]byte
		if err := c.CopyToHost(v[:], sl.count); err != nil {
			return err
		}
		n += int64(binary.LittleEndian.Uint64(v[:]))
	}
	w := out.Writer()
	w.AddCount(n)
	w.Close()
	return nil
}

// usesIndex reports whether t counts through scan-count's inverted index.
func usesIndex(t technique) bool {
	switch t.(type) {
	case scanTech, mmscanTech:
		return true
	}
	return false
}

// needsBLAS reports whether t multiplies matrices with cuBLAS.
func needsBLAS(t technique) bool {
	switch t.(type) {
	case mmTech, mmscanTech:
		return true
	}
	return false
}

// columnsFor is the column numbering t uses: mmscan's heavy elements, or
// every technique's shared columns.
func columnsFor(t technique, p *allpairs.Problem, info gpurt.Info) *columns {
	if t, ok := t.(mmscanTech); ok {
		return mmscanColumns(p, info, t.heavy).cols
	}
	return columnsOf(p)
}
