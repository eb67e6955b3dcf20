package gpubatmap

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/par"
)

// maxBatchEntries bounds the entries (compacted pairs, or dense counts)
// one batch may write, unless Options.maxEntries lowers it.
const maxBatchEntries int64 = 1 << 24

// pinnedBytes is the size each of the two pinned host buffers that outputs
// come back through and batmaps go up through starts at.
const pinnedBytes = 8 << 20

// reserve is device memory left unplanned: the context, other users.
const reserve = 512 << 20

// state is one device's: the pinned buffers, kept from run to run (the
// modules stay loaded in the device's context).
type state struct {
	dev         *gpurt.Device
	mu          sync.Mutex // one run at a time
	pinnedBytes int        // the pinned buffers' size at first (tests make it small)
	pinned      [2]gpurt.Pinned
	meta        [2]gpurt.Pinned
}

var states gpurt.PerDevice[*state]

func stateOf(dev *gpurt.Device) *state {
	return states.Get(dev, func() *state { return &state{dev: dev, pinnedBytes: pinnedBytes} })
}

// warm allocates the pinned buffers. Inside Do.
func (st *state) warm(c *gpurt.Ctx) error {
	for i := range st.pinned {
		if err := st.pinned[i].Grow(c, st.pinnedBytes); err != nil {
			return err
		}
	}
	return nil
}

// metaBuf returns slot i's pinned buffer for counters and runs, at least n
// bytes.
func (st *state) metaBuf(c *gpurt.Ctx, i, n int) ([]byte, error) {
	if err := st.meta[i].Grow(c, max(n, 64<<10)); err != nil {
		return nil, err
	}
	return st.meta[i].Bytes()[:n], nil
}

// growPinned makes both pinned buffers at least n bytes.
func (st *state) growPinned(c *gpurt.Ctx, n int) error {
	for i := range st.pinned {
		if err := st.pinned[i].Grow(c, n); err != nil {
			return err
		}
	}
	return nil
}

func u64s(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// kernelName returns the kernel for the batmaps' entries: the one opt
// names, if any, else the one their width and sizes call for.
func kernelName(b *batmap.Batmaps, opt Options) string {
	if opt.kernel != "" {
		return opt.kernel
	}
	switch b.Layout.EntryBits {
	case 8:
		if maxSize(b) >= 1<<25 {
			return "batmap8popc" // DP4A's 128 per match would overflow
		}
		return "batmap8"
	case 16:
		return "batmap16"
	}
	return "batmap32"
}

func maxSize(b *batmap.Batmaps) int {
	m := 0
	for _, s := range b.Sizes {
		m = max(m, int(s))
	}
	return m
}

func planFor(b *batmap.Batmaps, m mode, budget int64, opt Options, owners int) (*plan, error) {
	maxEntries := maxBatchEntries
	if opt.maxEntries > 0 {
		maxEntries = opt.maxEntries
	}
	return newPlanShared(planInput{offsets: b.Offsets, maxSize: maxSize(b)}, m, maxEntries, budget,
		4*int64(b.Len()+1)+12*int64(len(b.Failed)), minBatches(owners))
}

// minBatches is the fewest batches a run on owners owners is cut into,
// so that the dynamic scheduling has batches to even out (the first row
// groups' batches are the heaviest): none for one owner.
func minBatches(owners int) int {
	if owners <= 1 {
		return 0
	}
	return 8 * owners
}

// Workers returns the number of worker ids a run of Pairs on set may pass
// its fn: each owner decodes its batches on Threads/owners goroutines (at
// least one), with ids of its own.
func Workers(opt Options, set *gpurt.Set) int {
	return set.Len() * perOwner(opt.threads(), set.Len())
}

func perOwner(threads, owners int) int { return max(1, threads/max(owners, 1)) }

// run computes the batmaps' pairs on the owners of set in mode m, which
// take batches from one queue, delivering them through emit (modePairs)
// or tileFn (modeDense: on the first owner only, since the tiles go in
// order); modeCount returns the count.
func run(ctx context.Context, set *gpurt.Set, b *batmap.Batmaps, opt Options, m mode,
	emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
	start := time.Now()
	if b.Len() < 2 {
		return 0, ctx.Err()
	}
	if m == modeDense && set.Len() > 1 {
		set = gpurt.NewSet(set.Owner(0))
	}
	sts := make([]*state, set.Len())
	for i := range sts {
		sts[i] = stateOf(set.Owner(i))
	}
	defer set.LockOwners(func(i int) *sync.Mutex { return &sts[i].mu })()
	// One plan for every owner, in the least memory of any.
	frees, err := set.OwnerMemory(func(i int, c *gpurt.Ctx) error { return sts[i].warm(c) })
	if err != nil {
		return 0, err
	}
	budget := slices.Min(frees) - reserve
	if opt.Memory > 0 {
		budget = min(budget, opt.Memory)
	}
	pl, err := planFor(b, m, budget, opt, set.Len())
	if err != nil {
		return 0, err
	}
	var (
		total      atomic.Int64
		progressMu sync.Mutex
		done       int64
		totalPairs int64
		statsMu    sync.Mutex
		agg        Stats
	)
	for _, bt := range pl.batches {
		totalPairs += bt.pairs
	}
	if opt.Progress != nil {
		opt.Progress(0, totalPairs)
	}
	// Progress is the caller's, called under a lock: owners finish
	// batches at once.
	progress := func(pairs int64) {
		progressMu.Lock()
		defer progressMu.Unlock()
		done += pairs
		if opt.Progress != nil {
			opt.Progress(done, totalPairs)
		}
	}
	per := perOwner(opt.threads(), set.Len())
	rep, err := set.Run(ctx, len(pl.batches), func(ctx context.Context, w *gpurt.Worker) error {
		st := sts[w.Index()]
		return st.dev.Do(func(c *gpurt.Ctx) error {
			o := opt
			o.Threads = per
			d := newDecoder(b, pl, o)
			off := w.Index() * per
			if emit != nil {
				d.emit = func(k int, ps []Pair) error { return emit(off+k, ps) }
			}
			d.tileFn = tileFn
			r := &runner{st: st, c: c, b: b, pl: pl, d: d, opt: o, w: w, progress: progress}
			defer r.release()
			n, err := r.run(ctx)
			total.Add(n)
			statsMu.Lock()
			agg.Entries += r.entries
			agg.Upload = max(agg.Upload, r.upload)
			agg.KernelDev = max(agg.KernelDev, r.kernelDev)
			statsMu.Unlock()
			return err
		})
	})
	if opt.Stats != nil {
		s := opt.Stats
		s.Kernel, s.Batches, s.Tiles, s.WordPairs, s.Memory = kernelName(b, opt), len(pl.batches), len(pl.tiles), pl.wordPairs, pl.memory()
		s.Entries, s.Upload, s.KernelDev = agg.Entries, agg.Upload, agg.KernelDev
		s.GPUs, s.Owners = set.String(), rep
		s.Total = time.Since(start)
	}
	return total.Load(), err
}

// runner is one run's device state.
type runner struct {
	st  *state
	c   *gpurt.Ctx
	b   *batmap.Batmaps
	pl  *plan
	d   *decoder
	opt Options

	owned   []gpurt.Buffer
	streams [2]*gpurt.Stream
	metaEv  [2]*gpurt.Event // after each slot's counters and runs are copied back
	doneEv  [2]*gpurt.Event // after each slot's last kernel
	pinEv   [2]*gpurt.Event // after each pinned buffer's last upload
	first   *gpurt.Event    // before the first kernel
	ran     [2]bool

	kernel                     *gpurt.Kernel
	words, ginfo, gbase, tiles gpurt.Buffer
	need, foff, fel, fh        gpurt.Buffer
	out, meta                  [2]gpurt.Buffer

	w        *gpurt.Worker     // the owner's view of the shared queue of batches
	progress func(pairs int64) // counts the pairs of a batch done

	entries   int64
	upload    time.Duration
	kernelDev time.Duration
}

func (r *runner) alloc(n int64) (gpurt.Buffer, error) {
	buf, err := r.c.Alloc(int(max(n, 8)))
	if err != nil {
		return gpurt.Buffer{}, err
	}
	r.owned = append(r.owned, buf)
	return buf, nil
}

func (r *runner) release() {
	c := r.c
	c.Synchronize()
	for i := range r.streams {
		c.DestroyEvent(r.metaEv[i])
		c.DestroyEvent(r.doneEv[i])
		c.DestroyEvent(r.pinEv[i])
		c.DestroyStream(r.streams[i])
	}
	c.DestroyEvent(r.first)
	for _, buf := range r.owned {
		c.Free(buf)
	}
}

func (r *runner) run(ctx context.Context) (int64, error) {
	c, pl, b := r.c, r.pl, r.b
	var err error
	name := kernelName(b, r.opt)
	mod, err := c.Load(sourceOf(name))
	if err != nil {
		return 0, err
	}
	if r.kernel, err = mod.Kernel(name); err != nil {
		return 0, err
	}
	for i := range r.streams {
		if r.streams[i], err = c.NewStream(); err != nil {
			return 0, err
		}
		if r.metaEv[i], err = c.NewEvent(); err != nil {
			return 0, err
		}
		if r.doneEv[i], err = c.NewEvent(); err != nil {
			return 0, err
		}
		if r.pinEv[i], err = c.NewEvent(); err != nil {
			return 0, err
		}
	}
	if r.first, err = c.NewEvent(); err != nil {
		return 0, err
	}
	// Device memory, as planned.
	G := len(pl.groups)
	if r.words, err = r.alloc(4 * pl.words); err != nil {
		return 0, err
	}
	if r.ginfo, err = r.alloc(16 * int64(G)); err != nil {
		return 0, err
	}
	if r.gbase, err = r.alloc(8 * int64(G)); err != nil {
		return 0, err
	}
	if r.tiles, err = r.alloc(8 * int64(len(pl.tiles))); err != nil {
		return 0, err
	}
	n := int64(pl.n)
	if r.need, err = r.alloc(4 * n); err != nil {
		return 0, err
	}
	if r.foff, err = r.alloc(4 * (n + 1)); err != nil {
		return 0, err
	}
	F := int64(len(b.Failed))
	if r.fel, err = r.alloc(4 * F); err != nil {
		return 0, err
	}
	if r.fh, err = r.alloc(8 * F); err != nil {
		return 0, err
	}
	metaBytes := 32 + 8*int64(pl.maxTiles)
	for i := range r.out {
		if r.out[i], err = r.alloc(pl.entryBytes() * max(pl.maxEntries, 1)); err != nil {
			return 0, err
		}
		if r.meta[i], err = r.alloc(metaBytes); err != nil {
			return 0, err
		}
	}
	// Upload: the batmaps through the pinned buffers, the small arrays
	// straight from Go memory (the driver stages them).
	// One owner of the GPU at a time (see gpurt.Device.UploadLock).
	mu := r.st.dev.UploadLock()
	mu.Lock()
	locked := true
	defer func() {
		if locked {
			mu.Unlock()
		}
	}()
	t0 := time.Now()
	s0 := r.streams[0]
	if err := r.uploadWords(s0); err != nil {
		return 0, err
	}
	ginfo := make([]uint32, 4*G)
	gbase := make([]uint64, G)
	for g, gr := range pl.groups {
		ginfo[4*g], ginfo[4*g+1], ginfo[4*g+2] = uint32(gr.start), uint32(gr.len), uint32(gr.width)
		gbase[g] = gr.base
	}
	tiles := make([]uint32, 2*len(pl.tiles))
	for i, t := range pl.tiles {
		tiles[2*i], tiles[2*i+1] = t.g, t.h
	}
	// The failed elements, by position, with their hashes for tables 1
	// and 2, for the exact corrections.
	if F >= 1<<32 {
		return 0, fmt.Errorf("gpubatmap: %d failed insertions, at most 2^32-1", F)
	}
	foff := make([]uint32, n+1)
	for p := range foff {
		foff[p] = uint32(b.FailOffsets[p])
	}
	fh := make([]uint32, 2*F)
	for k, x := range b.Failed {
		fh[2*k], fh[2*k+1] = b.Layout.Hash(0, x), b.Layout.Hash(1, x)
	}
	for _, u := range []struct {
		dst gpurt.Buffer
		src []byte
	}{
		{r.ginfo, gpurt.Bytes(ginfo)}, {r.gbase, gpurt.Bytes(gbase)}, {r.tiles, gpurt.Bytes(tiles)},
		{r.need, gpurt.Bytes(r.d.deviceNeed())}, {r.foff, gpurt.Bytes(foff)},
		{r.fel, gpurt.Bytes(b.Failed)}, {r.fh, gpurt.Bytes(fh)},
	} {
		if len(u.src) > 0 {
			if err := c.CopyToDeviceAsync(u.dst.Slice(0, len(u.src)), u.src, s0); err != nil {
				return 0, err
			}
		}
	}
	if err := c.Sync(s0); err != nil {
		return 0, err
	}
	r.upload = time.Since(t0)
	mu.Unlock()
	locked = false
	if pl.mode == modeDense {
		// Whole rows of a batch come back in one piece.
		if err := r.st.growPinned(c, int(4*n)); err != nil {
			return 0, err
		}
	}
	total, err := r.pipeline(ctx)
	if err == nil {
		for i := range r.doneEv {
			if !r.ran[i] {
				continue
			}
			if t, e := c.Elapsed(r.first, r.doneEv[i]); e == nil {
				r.kernelDev = max(r.kernelDev, t)
			}
		}
	}
	return total, err
}

// uploadWords copies the batmaps to the device through the two pinned
// buffers: goroutines fill one while the device reads the other.
func (r *runner) uploadWords(s *gpurt.Stream) error {
	c := r.c
	src := gpurt.Bytes(r.b.Words)
	piece := r.st.pinned[0].Len()
	var used [2]bool
	threads := r.d.threads
	for i, off := 0, 0; off < len(src); i, off = i+1, off+piece {
		k := i % 2
		if used[k] {
			if err := c.Wait(r.pinEv[k]); err != nil {
				return err
			}
		}
		m := min(piece, len(src)-off)
		dst := r.st.pinned[k].Bytes()[:m]
		parallelCopy(dst, src[off:off+m], threads)
		if err := c.CopyToDeviceAsync(r.words.Slice(off, m), dst, s); err != nil {
			return err
		}
		if err := c.Record(r.pinEv[k], s); err != nil {
			return err
		}
		used[k] = true
	}
	return nil
}

// parallelCopy copies src to dst on up to threads goroutines.
func parallelCopy(dst, src []byte, threads int) {
	const grain = 1 << 20
	T := min(threads, (len(src)+grain-1)/grain)
	if T <= 1 {
		copy(dst, src)
		return
	}
	par.For(len(src), T, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// queue queues batch bi, the k-th this owner takes, on slot k%2: zeroed
// counters (and dense output), the kernel, the copy of the counters and
// runs to pinned memory.
func (r *runner) queue(k, bi int) error {
	c, pl := r.c, r.pl
	bt := &pl.batches[bi]
	s := k % 2
	st := r.streams[s]
	if k == 0 {
		if err := c.Record(r.first, st); err != nil {
			return err
		}
	}
	if err := c.Memset32(r.meta[s].Slice(0, 32), 0, st); err != nil {
		return err
	}
	ldo := uint64(pl.n - bt.rows[0])
	if pl.mode == modeDense {
		if err := c.Memset32(r.out[s].Slice(0, int(4*bt.entries)), 0, st); err != nil {
			return err
		}
	}
	wide := uint32(b2i(pl.wide))
	nt := len(bt.tiles)
	capEntries := uint64(max(bt.entries, 0))
	if pl.mode != modeDense && capEntries >= 1<<32-1 {
		return fmt.Errorf("gpubatmap: batch of %d entries (at most 2^32-2)", capEntries)
	}
	if err := c.Launch(r.kernel, gpurt.Dim{X: nt}, gpurt.Dim{X: 256}, 0, st,
		r.words, r.ginfo, r.gbase, r.tiles.Slice(8*bt.firstTile, 8*nt), r.need, r.foff, r.fel, r.fh,
		uint32(r.b.Layout.Shift), uint32(r.b.Layout.R0), uint32(pl.mode), wide, uint32(bt.rows[0]), ldo, r.out[s], capEntries,
		r.meta[s].Slice(32, 8*nt), r.meta[s].Slice(0, 32)); err != nil {
		return err
	}
	if err := c.Record(r.doneEv[s], st); err != nil {
		return err
	}
	r.ran[s] = true
	host, err := r.st.metaBuf(c, s, 32+8*nt)
	if err != nil {
		return err
	}
	if err := c.CopyToHostAsync(host, r.meta[s].Slice(0, 32+8*nt), st); err != nil {
		return err
	}
	return c.Record(r.metaEv[s], st)
}

// pipeline runs the batches the owner takes, two in flight, and decodes
// each one's output while the next runs: pieces of it are copied into the
// two pinned buffers in turn, and the decoder's workers take each piece
// in small jobs, so that they stay busy while the next piece is copied.
func (r *runner) pipeline(ctx context.Context) (int64, error) {
	c, pl := r.c, r.pl
	// mine lists the batches taken, in order; the k-th runs on slot k%2.
	var mine []int
	take := func() error {
		bi, ok := r.w.Next()
		if !ok {
			return nil
		}
		mine = append(mine, bi)
		return r.queue(len(mine)-1, bi)
	}
	for range 2 {
		if err := take(); err != nil {
			return 0, err
		}
	}
	// Dense pieces are delivered in order by one goroutine; pairs by the
	// decoder's workers.
	var dense chan error
	waitDense := func() error {
		if dense == nil {
			return nil
		}
		err := <-dense
		dense = nil
		return err
	}
	var pinUse [2]sync.WaitGroup // the jobs still reading each pinned buffer
	if pl.mode == modePairs {
		r.d.start()
	}
	defer func() {
		waitDense()
		r.d.stop()
	}()
	var counted int64
	eb := pl.entryBytes()
	pin := 0
	for k := 0; k < len(mine); k++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := r.d.err(); err != nil {
			return 0, err
		}
		bi, s := mine[k], k%2
		bt := &pl.batches[bi]
		if err := c.Wait(r.metaEv[s]); err != nil {
			return 0, err
		}
		meta := r.st.meta[s].Bytes()
		counters := u64s(meta[:32])
		if counters[2] != 0 {
			return 0, fmt.Errorf("gpubatmap: batch %d overflowed its %d entries (a bug)", bi, bt.entries)
		}
		var entries int64
		var spans []span
		switch pl.mode {
		case modeDense:
			entries = bt.entries
		case modePairs:
			entries = int64(counters[0])
			spans = spansOf(bt, gpurt.Uint32s(meta[32:32+8*len(bt.tiles)]))
		case modeCount:
			counted += int64(counters[1])
		}
		r.entries += entries
		per := int64(r.st.pinned[0].Len()) / eb
		cols := int64(pl.n - bt.rows[0])
		if pl.mode == modeDense {
			per = per / cols * cols // whole rows
		}
		for off := int64(0); off < entries; off += per {
			cnt := min(per, entries-off)
			pinUse[pin].Wait()
			if pl.mode == modeDense {
				if err := waitDense(); err != nil {
					return 0, err
				}
			}
			dst := r.st.pinned[pin].Bytes()[:cnt*eb]
			if err := c.CopyToHostAsync(dst, r.out[s].Slice(int(off*eb), int(cnt*eb)), r.streams[s]); err != nil {
				return 0, err
			}
			if err := c.Sync(r.streams[s]); err != nil {
				return 0, err
			}
			words := gpurt.Uint32s(dst)
			if pl.mode == modeDense {
				row0, rows := bt.rows[0]+int(off/cols), int(cnt/cols)
				dense = make(chan error, 1)
				go func() { dense <- r.d.dense(row0, bt.rows[0], rows, words) }()
			} else {
				r.d.submit(spans, words, off, &pinUse[pin])
			}
			pin ^= 1
		}
		// The slot's output has been copied: the slot takes the next
		// batch.
		if err := take(); err != nil {
			return 0, err
		}
		r.progress(bt.pairs)
	}
	if err := waitDense(); err != nil {
		return 0, err
	}
	if err := r.d.stop(); err != nil {
		return 0, err
	}
	return counted, nil
}
