package gpuallpairs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/gpu"
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
}

// technique is what differs between the engines: sizes, the device
// structures, and the kernel that fills a super-tile of counts.
type technique interface {
	name() string
	// prefCols is the super-tile width the technique works best with.
	prefCols(p *allpairs.Problem, info gpu.Info) int
	// usesColumns reports whether the technique needs the column map.
	usesColumns() bool
	// size returns the device bytes of the technique's resident structures
	// and of each slot's own, given left bytes to plan in; it may set the
	// plan's technique fields. An error wraps allpairs.ErrCannotRun.
	size(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan, left int64) (resident, perSlot int64, err error)
	// seconds estimates the device time of the technique's kernels.
	seconds(p *allpairs.Problem, cols *columns, info gpu.Info, pl *runPlan) float64
	// prepare queues the building of the resident structures on s.
	prepare(c *gpu.Ctx, r *runner, s *gpu.Stream) error
	// fill queues the counts of super-tile t into sl.d on sl.stream.
	fill(c *gpu.Ctx, r *runner, sl *slot, t super) error
}

func cannot(format string, args ...any) error {
	return fmt.Errorf("%w: %s", allpairs.ErrCannotRun, fmt.Sprintf(format, args...))
}

// inputBytes is the device memory of the collections (and column map).
func inputBytes(p *allpairs.Problem, withColumns bool) int64 {
	n := 4*int64(len(p.R.Elements)) + 8*int64(p.R.Len()+1)
	if !p.Self {
		n += 4*int64(len(p.S.Elements)) + 8*int64(p.S.Len()+1)
	}
	if withColumns {
		n += 4 * int64(p.Universe)
	}
	return n
}

// Throughputs of the cost model (first figures, to be calibrated on the
// H100): bytes per second to the device and back to pageable memory
// through pinned buffers, and the fixed costs of a run and a super-tile.
const (
	uploadRate   = 25e9
	downloadRate = 20e9
	runSetup     = 2e-3
	superSetup   = 30e-6
)

// plan sizes a run of t on p with budget bytes of device memory.
func plan(p *allpairs.Problem, t technique, info gpu.Info, budget int64) (*runPlan, error) {
	return planWith(p, t, info, budget, false)
}

func planWith(p *allpairs.Problem, t technique, info gpu.Info, budget int64, half bool) (*runPlan, error) {
	cols := columnsOf(p)
	pl := &runPlan{half: half}
	pl.g = newGrid(p, tileCounts, t.prefCols(p, info))
	if _, _, ok := p.Tiled(); ok && int64(pl.g.rows)*int64(pl.g.cols) > tileCounts {
		// The caller's tiles are larger than our super-tiles: one each.
		pl.g.sr, pl.g.sc = pl.g.rows, pl.g.cols
	}
	pl.ldd = roundUp(pl.g.sc, 16)
	outSlot := 4*int64(pl.g.sr)*int64(pl.ldd) + 4*int64(pl.g.sr)*int64(pl.g.sc)
	inputs := inputBytes(p, t.usesColumns())
	var resident, perSlot int64
	var err error
	for pl.slots = 3; pl.slots >= 2; pl.slots-- {
		left := budget - inputs - int64(pl.slots)*outSlot
		if left < 0 {
			err = cannot("needs %s for the sets and %d super-tiles of %dx%d counts, the device has %s to plan in",
				gpu.FormatBytes(uint64(inputs)), pl.slots, pl.g.sr, pl.g.sc, gpu.FormatBytes(uint64(max(budget, 0))))
			continue
		}
		resident, perSlot, err = t.size(p, cols, info, pl, left)
		if err == nil && resident+int64(pl.slots)*perSlot > left {
			err = cannot("needs %s of device memory, %s left", gpu.FormatBytes(uint64(resident+int64(pl.slots)*perSlot)), gpu.FormatBytes(uint64(left)))
		}
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	pl.memory = inputs + int64(pl.slots)*(outSlot+perSlot) + resident
	supers := pl.g.supers()
	var counts int64
	for _, s := range supers {
		counts += int64(s.rows) * int64(s.cols)
	}
	pl.seconds = runSetup + float64(inputs)/uploadRate + float64(4*counts)/downloadRate +
		superSetup*float64(len(supers)) + t.seconds(p, cols, info, pl)
	pl.detail = fmt.Sprintf("%d super-tiles of %dx%d, %d columns", len(supers), pl.g.sr, pl.g.sc, cols.k) + pl.detail
	return pl, nil
}

// runner is one run's device state.
type runner struct {
	st    *state
	p     *allpairs.Problem
	pl    *runPlan
	t     technique
	info  gpu.Info
	cols  *columns
	owned []gpu.Buffer

	rElems, rOffs, sElems, sOffs, colOf gpu.Buffer

	// Technique structures.
	mA, mB      gpu.Buffer // matrices or bitmaps of R and S
	start, post gpu.Buffer // inverted index of S
}

// slot is one super-tile in flight: its stream, its device counts, packed
// tiles and pinned host copy, and the event that says the copy is done.
type slot struct {
	stream *gpu.Stream
	ev     *gpu.Event
	d, pk  gpu.Buffer
	a, b   gpu.Buffer // the matrix product's slices, when not resident
	host   []byte
	done   chan struct{} // closed when the host is done with host
}

func (r *runner) alloc(c *gpu.Ctx, n int64) (gpu.Buffer, error) {
	b, err := c.Alloc(int(n))
	if err != nil {
		return gpu.Buffer{}, err
	}
	r.owned = append(r.owned, b)
	return b, nil
}

func (r *runner) launch(c *gpu.Ctx, name string, grid, block gpu.Dim, shared int, s *gpu.Stream, args ...any) error {
	k, err := r.st.mod.Kernel(name)
	if err != nil {
		return err
	}
	return c.Launch(k, grid, block, shared, s, args...)
}

// blocks returns a grid of n blocks, capped for grid-stride kernels.
func blocks(n int) gpu.Dim { return gpu.Dim{X: clamp(n, 1, 1<<20)} }

var threads = gpu.Dim{X: 256}

// uploadSets copies a collection to the device: elements and offsets from 0.
func (r *runner) uploadSets(c *gpu.Ctx, s *gpu.Stream, col *sets.Collection) (elems, offs gpu.Buffer, err error) {
	if elems, err = r.alloc(c, max(4*int64(len(col.Elements)), 4)); err != nil {
		return
	}
	if offs, err = r.alloc(c, 8*int64(col.Len()+1)); err != nil {
		return
	}
	o := make([]uint64, col.Len()+1)
	base := col.Offsets[0]
	for i := range o {
		o[i] = col.Offsets[i] - base
	}
	if err = r.st.upload(c, s, elems.Slice(0, 4*len(col.Elements)), gpu.Bytes(col.Elements)); err != nil {
		return
	}
	err = r.st.upload(c, s, offs, gpu.Bytes(o))
	return
}

// run computes p with t and delivers every super-tile through out.
func (st *state) run(ctx context.Context, p *allpairs.Problem, t technique, out *allpairs.Output) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.dev.Do(func(c *gpu.Ctx) error {
		if st.mod == nil {
			m, err := c.Load(source)
			if err != nil {
				return err
			}
			st.mod = m
		}
		half := false
		if _, ok := t.(mmTech); ok {
			half = !st.int8Works(c)
		}
		free, _, err := c.MemInfo()
		if err != nil {
			return err
		}
		pl, err := planWith(p, t, c.Info(), budget(int64(free)), half)
		if err != nil {
			return err
		}
		r := &runner{st: st, p: p, pl: pl, t: t, info: c.Info(), cols: columnsOf(p)}
		slots := make([]*slot, pl.slots)
		defer func() {
			c.Synchronize()
			for _, sl := range slots {
				if sl != nil {
					c.DestroyEvent(sl.ev)
					c.DestroyStream(sl.stream)
				}
			}
			for _, b := range r.owned {
				c.Free(b)
			}
		}()
		for i := range slots {
			sl := &slot{}
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
			if sl.pk, err = r.alloc(c, 4*int64(pl.g.sr)*int64(pl.g.sc)); err != nil {
				return err
			}
			if sl.host, err = st.pinnedBuf(c, i, 4*pl.g.sr*pl.g.sc); err != nil {
				return err
			}
		}
		s0 := slots[0].stream
		if r.rElems, r.rOffs, err = r.uploadSets(c, s0, p.R); err != nil {
			return err
		}
		r.sElems, r.sOffs = r.rElems, r.rOffs
		if !p.Self {
			if r.sElems, r.sOffs, err = r.uploadSets(c, s0, p.S); err != nil {
				return err
			}
		}
		if t.usesColumns() {
			if r.colOf, err = r.alloc(c, max(4*int64(p.Universe), 4)); err != nil {
				return err
			}
			if err := st.upload(c, s0, r.colOf.Slice(0, 4*p.Universe), gpu.Bytes(r.cols.colOf)); err != nil {
				return err
			}
		}
		if err := t.prepare(c, r, s0); err != nil {
			return err
		}
		if err := c.Sync(s0); err != nil {
			return err
		}
		return r.pipeline(ctx, c, slots, out)
	})
}

// pipeline computes the super-tiles, each on its slot's stream, while the
// host delivers the previous ones.
func (r *runner) pipeline(ctx context.Context, c *gpu.Ctx, slots []*slot, out *allpairs.Output) error {
	g := r.pl.g
	supers := g.supers()
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
	deliver := func(i int) error {
		sl := slots[i%len(slots)]
		if err := c.Wait(sl.ev); err != nil {
			return err
		}
		sl.done = make(chan struct{})
		wg.Add(1)
		go func(s super, sl *slot) {
			defer wg.Done()
			defer close(sl.done)
			if err := r.deliver(s, sl, out); err != nil {
				fail(err)
			}
		}(supers[i], sl)
		return nil
	}
	var err error
	for i, s := range supers {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = failed(); err != nil {
			break
		}
		sl := slots[i%len(slots)]
		if sl.done != nil {
			<-sl.done // the host is done with the slot's last super-tile
		}
		if err = r.queue(c, sl, s); err != nil {
			break
		}
		if i > 0 {
			if err = deliver(i - 1); err != nil {
				break
			}
		}
	}
	if err == nil && len(supers) > 0 {
		err = deliver(len(supers) - 1)
	}
	wg.Wait()
	if err == nil {
		err = failed()
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// queue queues one super-tile: its counts, the repacking into the
// caller's tiles, and the copy to the slot's pinned memory.
func (r *runner) queue(c *gpu.Ctx, sl *slot, s super) error {
	g := r.pl.g
	if err := r.t.fill(c, r, sl, s); err != nil {
		return err
	}
	n := s.rows * s.cols
	self := uint32(0)
	if g.self {
		self = 1
	}
	isFloat := uint32(0)
	if _, ok := r.t.(mmTech); ok && r.pl.half {
		isFloat = 1
	}
	rows, cols := min(g.rows, s.rows), min(g.cols, s.cols)
	if err := r.launch(c, "repack", blocks(min(ceilDiv(n, 256), r.info.SMs*32)), threads, 0, sl.stream,
		sl.d, isFloat, uint64(r.pl.ldd), uint32(s.rows), uint32(s.cols), uint32(rows), uint32(cols),
		uint64(s.r0), uint64(s.c0), self, sl.pk); err != nil {
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
	return c.Record(sl.ev, sl.stream)
}

// deliver hands a super-tile, now in pinned memory, to out: the caller's
// tiles one by one, or for pair plans row strips filtered in parallel.
func (r *runner) deliver(s super, sl *slot, out *allpairs.Output) error {
	all := asUint32s(sl.host)
	g := r.pl.g
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
