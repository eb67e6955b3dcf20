package gpuallpairs

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

// MMJoin's heavy product is computed ahead in bands of rows, while the CPU
// runs the index part: a producer goroutine per device (per owner of the
// run's GPUs) queues bands on its device, each taking the next band when
// it has a free slot, in the order the CPU's workers will ask for them (a probe-major self-join
// asks for its last, widest rows first; an element-major one and a join in
// order), keeping at most a budget of them in host memory; a worker that asks for a band nobody has started
// gets it queued first, beyond the budget. A band's host memory is given
// back once every one of its rows has been read, so a product larger than
// host memory streams through. The device side is an interface, so that
// the scheduling is tested without a GPU.

// band is rows r0.. of the heavy product, columns [c0, c0+cols), in a
// host buffer with rows ld entries apart.
type band struct {
	r0, rows, c0, cols, ld int

	// Guarded by the cache's mutex.
	state   int
	dev     int // the device that computes it
	left    int // rows not read yet
	readers int // workers copying from buf

	ready chan struct{} // closed when buf holds the band (or it failed)
	err   error         // set before ready is closed
	buf   []uint32      // counts, or float32 bits for a float16 product
	host  any           // the device's handle of buf, for release
}

// Band states.
const (
	bandIdle     = iota // not asked for
	bandDemanded        // a worker waits for it; not queued yet
	bandQueued          // on the device or done
	bandFreed           // every row read; buf given back
)

// bandDevice computes bands. queue and finish are called from the
// device's producer goroutine only, slot in [0, slots()); release and
// direct from any goroutine.
type bandDevice interface {
	// slots is how many bands may be on the device at once.
	slots() int
	// queue starts computing b on slot, into a host buffer it sets as
	// b.buf (of at least b.rows*b.ld entries) and b.host.
	queue(b *band, slot int) error
	// finish waits until the band queued on slot is in b.buf.
	finish(b *band, slot int) error
	// release gives b's host buffer back.
	release(b *band)
	// direct computes rows × cols entries from (row0, col0) into dst,
	// rows stride apart, at once: for requests that no band covers.
	direct(ctx context.Context, row0, rows, col0, cols int, dst []uint32, stride int) error
	// float reports whether the counts are float32 bits.
	float() bool
}

// bandCache schedules the bands of an nr × ns product over its devices.
type bandCache struct {
	devs   []bandDevice
	self   bool // a self-join: only one side of the diagonal is read
	after  bool // the side after the diagonal, not the one before
	bands  []*band
	order  []int // the predicted order of the workers' requests
	budget int   // bands held at once for prefetching
	hold   int   // rows of a band

	mu      sync.Mutex
	cond    *sync.Cond
	demand  []*band
	next    int // position in order
	held    int // bands with a host buffer
	pending int // bands not queued yet
	stopped bool
	err     error
	failed  chan struct{} // closed with err
	done    chan struct{} // closed when every producer has returned

	// Where the time went, for the run's notes (read after stop): each
	// producer's bands and its span from its first queued band to its last
	// finished one, the producers' span from start, and the time workers
	// spent waiting for bands.
	started time.Time
	ended   time.Time
	per     []producerStats
	waited  atomic.Int64 // nanoseconds, all workers together
	queued  atomic.Int64
	outside atomic.Int64 // blocks read outside the bands (through direct)
}

// producerStats is one device's share of the bands.
type producerStats struct {
	bands                 int
	firstQueued, lastDone time.Time
}

// bandCols returns the columns [c0, c0+cols) that the band of rows [r0,
// r0+rows) of an nr × ns product holds: all of them in a join; in a
// self-join (nr == ns) those up to its last row, where the workers read
// the entries before the diagonal, or from its first row on, where they
// read those after it (after: allpairs.MMJoinSplit.ReadsAfterDiagonal).
func bandCols(ns int, self, after bool, r0, rows int) (c0, cols int) {
	switch {
	case !self:
		return 0, ns
	case after:
		return r0, ns - r0
	default:
		return 0, r0 + rows
	}
}

// newBandCache plans bands of at most bandRows rows of an nr × ns product,
// their columns as bandCols says, computed on devs (at least one). The
// workers of a self-join that read before the diagonal ask for the last
// rows first, the others in order. At most budget bands are prefetched,
// over all the devices.
func newBandCache(devs []bandDevice, nr, ns int, self, after bool, bandRows, budget int) *bandCache {
	c := &bandCache{devs: devs, self: self, after: after, budget: max(budget, 1), hold: max(bandRows, 1), failed: make(chan struct{}), done: make(chan struct{}),
		per: make([]producerStats, len(devs))}
	c.cond = sync.NewCond(&c.mu)
	for r0 := 0; r0 < nr; r0 += c.hold {
		b := &band{r0: r0, rows: min(c.hold, nr-r0), ready: make(chan struct{})}
		b.c0, b.cols = bandCols(ns, self, after, r0, b.rows)
		b.ld = roundUp(b.cols, 16)
		b.left = b.rows
		c.bands = append(c.bands, b)
	}
	c.pending = len(c.bands)
	for i := range c.bands {
		if self && !after {
			c.order = append(c.order, len(c.bands)-1-i)
		} else {
			c.order = append(c.order, i)
		}
	}
	return c
}

// busy returns the producers' span, from the first queued band to the
// last finished one; only after stop.
func (c *bandCache) busy() time.Duration {
	var first, last time.Time
	for _, s := range c.per {
		if s.bands == 0 || s.lastDone.IsZero() {
			continue
		}
		if first.IsZero() || s.firstQueued.Before(first) {
			first = s.firstQueued
		}
		if s.lastDone.After(last) {
			last = s.lastDone
		}
	}
	if first.IsZero() {
		return 0
	}
	return last.Sub(first)
}

// report is the producers' account, device by device, as gpurt.Set.Run's;
// ordinals are the devices' GPUs. Only after stop.
func (c *bandCache) report(ordinals []int) gpurt.Report {
	rep := gpurt.Report{Owners: make([]gpurt.Usage, len(c.per)), Wall: c.ended.Sub(c.started)}
	for i, s := range c.per {
		u := gpurt.Usage{Owner: i, Ordinal: ordinals[i], Tiles: s.bands}
		if s.bands > 0 && !s.lastDone.IsZero() {
			u.Busy = s.lastDone.Sub(s.firstQueued)
		}
		rep.Owners[i] = u
	}
	return rep
}

// start runs a producer per device.
func (c *bandCache) start() {
	c.started = time.Now()
	var wg sync.WaitGroup
	for i := range c.devs {
		wg.Go(func() { c.produce(i) })
	}
	go func() {
		wg.Wait()
		c.ended = time.Now()
		close(c.done)
	}()
}

// stop makes the producers return once the bands on the devices are
// done, and waits for them.
func (c *bandCache) stop() {
	c.mu.Lock()
	c.stopped = true
	c.cond.Broadcast()
	c.mu.Unlock()
	<-c.done
}

// pick returns the next band to queue: one a worker waits for, else the
// next predicted one while the budget allows, else nil.
func (c *bandCache) pick() *band {
	for len(c.demand) > 0 {
		b := c.demand[0]
		c.demand = c.demand[1:]
		if b.state == bandDemanded {
			return b
		}
	}
	for c.next < len(c.order) {
		b := c.bands[c.order[c.next]]
		if b.state != bandIdle {
			c.next++
			continue
		}
		if c.held >= c.budget {
			return nil
		}
		c.next++
		return b
	}
	return nil
}

func (c *bandCache) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.failed)
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// produce queues bands on device d until none is left or the cache stops.
func (c *bandCache) produce(d int) {
	dev, st := c.devs[d], &c.per[d]
	slots := max(dev.slots(), 1)
	type flight struct {
		b    *band
		slot int
	}
	var inflight []flight
	free := make([]int, slots)
	for i := range free {
		free[i] = slots - 1 - i
	}
	finish := func() bool {
		f := inflight[0]
		inflight = inflight[1:]
		err := dev.finish(f.b, f.slot)
		st.lastDone = time.Now()
		free = append(free, f.slot)
		if err != nil {
			f.b.err = err
			close(f.b.ready)
			c.fail(err)
			return false
		}
		close(f.b.ready)
		return true
	}
	defer func() {
		// Whatever is on the device finishes before the device state goes.
		for len(inflight) > 0 {
			finish()
		}
	}()
	for {
		c.mu.Lock()
		b := c.pick()
		for b == nil && len(inflight) == 0 && !c.stopped && c.err == nil && c.pending > 0 {
			c.cond.Wait()
			b = c.pick()
		}
		quit := c.stopped || c.err != nil
		if b != nil && !quit {
			b.state = bandQueued
			b.dev = d
			c.pending--
			c.held++
		}
		c.mu.Unlock()
		if quit {
			return
		}
		if b == nil {
			if len(inflight) == 0 {
				return // every band is queued and done
			}
			if !finish() {
				return
			}
			continue
		}
		if len(inflight) == slots && !finish() {
			return
		}
		slot := free[len(free)-1]
		free = free[:len(free)-1]
		if st.bands == 0 {
			st.firstQueued = time.Now()
		}
		st.bands++
		c.queued.Add(1)
		if err := dev.queue(b, slot); err != nil {
			b.err = err
			close(b.ready)
			c.fail(err)
			return
		}
		inflight = append(inflight, flight{b, slot})
	}
}

// product is MMJoin's HeavyProduct: dst[x*cols+y] is entry (row0+x,
// col0+y) of the heavy product; in a self-join only on the side of the
// diagonal that MMJoin reads (the others are left as they are).
func (c *bandCache) product(ctx context.Context, row0, rows, col0, cols int, dst []uint32) error {
	if rows <= 0 || cols <= 0 {
		return nil
	}
	if len(dst) < rows*cols {
		return errors.New("gpuallpairs: product block larger than its buffer")
	}
	for r := row0; r < row0+rows; {
		b := c.bands[r/c.hold]
		hi := min(row0+rows, b.r0+b.rows)
		if err := c.read(ctx, b, r, hi, col0, cols, dst[(r-row0)*cols:], cols); err != nil {
			return err
		}
		r = hi
	}
	return nil
}

// need returns the columns of [col0, end) that rows [lo, hi) read: all of
// them in a join; in a self-join those before the last row's diagonal, or
// after the first row's. Every band holds them.
func (c *bandCache) need(lo, hi, col0, end int) (int, int) {
	switch {
	case !c.self:
		return col0, end
	case c.after:
		return max(col0, lo+1), end
	default:
		return col0, min(end, hi-1)
	}
}

// read copies rows [lo, hi) of b, columns [col0, col0+cols), to dst, those
// that the rows read (need).
func (c *bandCache) read(ctx context.Context, b *band, lo, hi, col0, cols int, dst []uint32, stride int) error {
	base := col0
	col0, end := c.need(lo, hi, col0, col0+cols)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	if b.state == bandFreed || b.left <= 0 {
		// Read twice: the contract allows it, MMJoin never does it.
		c.mu.Unlock()
		if col0 >= end {
			return nil
		}
		c.outside.Add(1)
		return c.devs[0].direct(ctx, lo, hi-lo, col0, end-col0, dst[col0-base:], stride)
	}
	if b.state == bandIdle {
		b.state = bandDemanded
		c.demand = append(c.demand, b)
		c.cond.Broadcast()
	}
	b.readers++
	c.mu.Unlock()
	// A band is given back only once its device finished it: a reader
	// that stops waiting (an error, a cancellation) leaves it to
	// releaseAll, which runs after the producers drained their devices.
	finished := false
	defer func() {
		c.mu.Lock()
		b.readers--
		if finished {
			b.left -= hi - lo
		}
		if b.left <= 0 && b.readers == 0 && b.state == bandQueued && finished {
			b.state = bandFreed
			c.held--
			if b.host != nil { // a band whose queueing failed holds none
				c.devs[b.dev].release(b)
			}
			b.buf, b.host = nil, nil
			c.cond.Broadcast()
		}
		c.mu.Unlock()
	}()
	select {
	case <-b.ready:
	default:
		start := time.Now()
		select {
		case <-b.ready:
		case <-c.failed:
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
		c.waited.Add(int64(time.Since(start)))
	}
	finished = true
	if b.err != nil {
		return b.err
	}
	// The columns the band holds, then any beside it (none, as the bands
	// are cut: computed at once for the contract's sake).
	bandEnd := b.c0 + b.cols
	if in0, in1 := max(col0, b.c0), min(end, bandEnd); in0 < in1 {
		float := c.devs[0].float()
		for x := lo; x < hi; x++ {
			src := b.buf[(x-b.r0)*b.ld+in0-b.c0:][:in1-in0]
			row := dst[(x-lo)*stride+in0-base:][:in1-in0]
			if float {
				for y := range row {
					row[y] = uint32(math.Float32frombits(src[y]))
				}
			} else {
				copy(row, src)
			}
		}
	}
	if left := min(end, b.c0) - col0; left > 0 {
		c.outside.Add(1)
		if err := c.devs[0].direct(ctx, lo, hi-lo, col0, left, dst[col0-base:], stride); err != nil {
			return err
		}
	}
	if right := max(col0, bandEnd); right < end {
		c.outside.Add(1)
		return c.devs[0].direct(ctx, lo, hi-lo, right, end-right, dst[right-base:], stride)
	}
	return nil
}

// releaseAll gives back the host buffers of the bands nobody read in full
// (after an error or a cancellation); the producer must have returned.
func (c *bandCache) releaseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bands {
		if b.host != nil {
			c.devs[b.dev].release(b)
			b.buf, b.host = nil, nil
		}
	}
}
