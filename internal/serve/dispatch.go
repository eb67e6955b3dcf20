package serve

import (
	"context"
	"errors"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// job is the queries of one request on their way through the dispatcher.
type job struct {
	qs     []Query
	limits []int // per query
	keys   []int // per query, the backend's sort key; nil when it has none
	res    []Result

	ctx     context.Context // the request's, with its deadline
	pending atomic.Int32    // pieces not yet answered
	started atomic.Bool     // a piece has reached the backend
	done    chan struct{}   // closed when pending reaches 0

	mu  sync.Mutex
	err error // the first error of a piece

	admitted bool         // counted in the dispatcher's admitted queries
	refs     atomic.Int32 // the handler and the pieces: the last to end releases the queries
	d        *dispatcher
}

// unref ends one of the two holders of an admitted job (the handler, once
// its answer is written; the pieces, once all are answered or dropped);
// the last releases its queries from the admission count: results stay
// counted until written.
func (j *job) unref() {
	if j.refs.Add(-1) == 0 {
		j.d.admitted.Add(-int64(len(j.qs)))
	}
}

func (j *job) fail(err error) {
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.mu.Unlock()
}

// finish records one piece answered.
func (j *job) finish() {
	if j.pending.Add(-1) == 0 {
		close(j.done)
		j.unref()
	}
}

// piece is a run of at most BatchSize queries of a job: a request with more
// queries than a batch holds is split, and its pieces may share batches
// with other requests' pieces.
type piece struct {
	j      *job
	lo, hi int
	enq    time.Time
}

// dispatcher gathers pieces into batches and runs them on the backend.
//
// Admission counts queries, not requests: admitted is the number of
// queries admitted and not yet answered (waiting, running, or their
// answers not yet written), at most Config.Queue, so that their results'
// memory is bounded too; queued counts those waiting. The channel in holds
// at most Config.Queue pieces, so a send never blocks. A batch closes
// when it holds BatchSize queries, or BatchWait after its oldest query
// arrived; it then waits for one of Concurrency slots, still taking
// queries while it has room, so that batches grow when the backend is busy
// and stay small (fast) when it is idle.
type dispatcher struct {
	s        *Server
	cfg      Config // the server's, with the device's defaults: set by start
	in       chan piece
	admitted atomic.Int64 // queries admitted and not yet released
	queued   atomic.Int64 // queries admitted and not yet running
	pooled   atomic.Int64 // queries gathered into the batch waiting to run
	slots    chan struct{}
	wg       sync.WaitGroup // batches running

	mu       sync.Mutex // orders start and close
	started  bool
	stop     chan struct{}
	stopped  atomic.Bool
	loopDone chan struct{}
}

func newDispatcher(s *Server) *dispatcher {
	return &dispatcher{
		s:        s,
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
}

// start runs the loop with cfg's batch size, queue and concurrency; it does
// nothing after close, or the second time.
func (d *dispatcher) start(cfg Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.stopped.Load() {
		return
	}
	d.started = true
	d.cfg = cfg
	d.in = make(chan piece, cfg.Queue)
	d.slots = make(chan struct{}, cfg.Concurrency)
	go d.loop()
}

// close stops the loop once the queue is empty and waits for the batches
// running.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped.Load() {
		return
	}
	d.stopped.Store(true)
	close(d.stop)
	if d.started {
		<-d.loopDone
		d.wg.Wait()
	}
}

// do runs the queries of j and waits for their results or ctx's end. When
// j.admitted is set on return, the caller must call j.unref once it has
// written the answer.
func (d *dispatcher) do(ctx context.Context, j *job) error {
	n := int64(len(j.qs))
	if d.stopped.Load() {
		return errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	for {
		a := d.admitted.Load()
		if a+n > int64(d.cfg.Queue) {
			return errorf(http.StatusTooManyRequests, "queue full: %d queries in flight, room for %d; retry later", a, d.cfg.Queue)
		}
		if d.admitted.CompareAndSwap(a, a+n) {
			break
		}
	}
	j.admitted, j.d = true, d
	j.refs.Store(2)
	d.queued.Add(n)
	size := d.cfg.BatchSize
	j.ctx = ctx
	j.done = make(chan struct{})
	j.pending.Store(int32((len(j.qs) + size - 1) / size))
	now := time.Now()
	for lo := 0; lo < len(j.qs); lo += size {
		d.in <- piece{j, lo, min(lo+size, len(j.qs)), now}
	}
	select {
	case <-j.done:
		if j.err != nil {
			if errors.Is(j.err, context.DeadlineExceeded) {
				return errorf(http.StatusGatewayTimeout, "deadline of %v passed while the queries ran", d.cfg.Deadline)
			}
			return errorf(http.StatusInternalServerError, "search failed: %v", j.err)
		}
		return nil
	case <-ctx.Done():
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorf(statusClientClosed, "the client closed the request")
	}
	if j.started.Load() {
		return errorf(http.StatusGatewayTimeout, "deadline of %v passed while the queries ran", d.cfg.Deadline)
	}
	return errorf(http.StatusServiceUnavailable, "deadline of %v passed before the queries could run (the server is overloaded)", d.cfg.Deadline)
}

// statusClientClosed is the status logged for a request whose client went
// away (nginx's convention); the client never sees it.
const statusClientClosed = 499

func (d *dispatcher) loop() {
	defer close(d.loopDone)
	size := d.cfg.BatchSize
	var timer *time.Timer
	var carry *piece // a piece that did not fit the last batch
	for {
		var batch []piece
		n := 0
		// add takes p into the batch if it fits, else keeps it for the next.
		add := func(p piece) {
			if p.j.ctx.Err() != nil {
				d.drop(p)
				return
			}
			if n+(p.hi-p.lo) > size {
				carry = &p
				return
			}
			batch = append(batch, p)
			n += p.hi - p.lo
			d.pooled.Store(int64(n))
		}
		if carry != nil {
			p := *carry
			carry = nil
			add(p)
		}
		for n == 0 {
			select {
			case p := <-d.in:
				add(p)
				continue
			default:
			}
			select {
			case p := <-d.in:
				add(p)
			case <-d.stop:
				return
			}
		}
		// Fill until full or BatchWait after the oldest query; a request
		// that ends meanwhile leaves, and the wait counts from the oldest
		// left. Stopping ends the wait: shutdown should not linger.
	fill:
		for n > 0 && n < size && carry == nil {
			wait := d.cfg.BatchWait - time.Since(batch[0].enq)
			if wait <= 0 {
				break
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case p := <-d.in:
				add(p)
			case <-timer.C:
			case <-batch[0].j.ctx.Done():
				live := batch[:0]
				n = 0
				for _, p := range batch {
					if p.j.ctx.Err() != nil {
						d.drop(p)
						continue
					}
					live = append(live, p)
					n += p.hi - p.lo
				}
				clear(batch[len(live):])
				batch = live
				d.pooled.Store(int64(n))
			case <-d.stop:
				timer.Stop()
				break fill
			}
			timer.Stop()
		}
		if n == 0 {
			continue
		}
		// Wait for a slot, taking queries while there is room.
	slot:
		for {
			if n >= size || carry != nil {
				d.slots <- struct{}{}
				break
			}
			select {
			case d.slots <- struct{}{}:
				break slot
			case p := <-d.in:
				add(p)
			}
		}
		d.pooled.Store(0)
		d.queued.Add(-int64(n))
		d.wg.Add(1)
		go d.run(batch)
	}
}

// drop answers nothing for a piece whose request has ended.
func (d *dispatcher) drop(p piece) {
	d.queued.Add(-int64(p.hi - p.lo))
	p.j.finish()
}

// run answers one batch and frees its slot.
func (d *dispatcher) run(batch []piece) {
	defer func() {
		<-d.slots
		d.wg.Done()
	}()
	rd := d.s.ready.Load()
	m := d.s.m
	start := time.Now()
	// Leave out the pieces whose request ended while the batch waited.
	live := batch[:0]
	n, limit := 0, 0
	var latest time.Time
	for _, p := range batch {
		if p.j.ctx.Err() != nil {
			p.j.finish()
			continue
		}
		p.j.started.Store(true)
		live = append(live, p)
		n += p.hi - p.lo
		for _, l := range p.j.limits[p.lo:p.hi] {
			limit = max(limit, l)
		}
		if dl, ok := p.j.ctx.Deadline(); ok && dl.After(latest) {
			latest = dl
		}
		m.queueWait.observe(int64(start.Sub(p.enq)))
	}
	if n == 0 {
		return
	}
	// The batch's queries and results are copied out before run returns:
	// their arrays serve the next batch.
	bb := batchPool.Get().(*batchBufs)
	defer bb.put()
	qs := bb.qs[:0]
	var keys []int
	if rd.key != nil {
		keys = make([]int, 0, n)
	}
	for _, p := range live {
		qs = append(qs, p.j.qs[p.lo:p.hi]...)
		if keys != nil {
			keys = append(keys, p.j.keys[p.lo:p.hi]...)
		}
	}
	bb.qs = qs
	var order []int32 // order[k]: the position in qs of the k-th query sent
	if keys != nil {
		order = semiSort(keys)
		sorted := make([]Query, n)
		for k, i := range order {
			sorted[k] = qs[i]
		}
		qs = sorted
	}
	if cap(bb.res) < n {
		bb.res = make([]Result, n)
	}
	bb.res = bb.res[:n]
	res := bb.res
	ctx := context.Background()
	if !latest.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	err := rd.b.Search(ctx, qs, limit, limit == 0, res)
	m.batch(n, rd.b.Device(), time.Since(start), err)
	if order != nil {
		unsorted := make([]Result, n)
		for k, i := range order {
			unsorted[i] = res[k]
		}
		res = unsorted
	}
	k := 0
	for _, p := range live {
		for i := p.lo; i < p.hi; i++ {
			r := res[k]
			k++
			if l := p.j.limits[i]; len(r.IDs) > l {
				r.IDs = r.IDs[:l:l]
			}
			p.j.res[i] = r
		}
		if err != nil {
			p.j.fail(err)
		}
		p.j.finish()
	}
}

// batchBufs holds the arrays of a batch's queries and results.
type batchBufs struct {
	qs  []Query
	res []Result
}

var batchPool = sync.Pool{New: func() any { return new(batchBufs) }}

// put clears the buffers (the ids belong to the answers now) and returns
// them to the pool.
func (bb *batchBufs) put() {
	clear(bb.qs)
	clear(bb.res)
	batchPool.Put(bb)
}

// semiSort returns the positions of keys ordered by the bit length of the
// key (buckets of sizes within a factor of 2), stable within a bucket: the
// semi-sort of Wu et al., enough to give a GPU block's threads alike work.
func semiSort(keys []int) []int32 {
	var count [65]int32
	for _, k := range keys {
		count[bucket(k)]++
	}
	var next [65]int32
	for b := 1; b < len(count); b++ {
		next[b] = next[b-1] + count[b-1]
	}
	order := make([]int32, len(keys))
	for i, k := range keys {
		b := bucket(k)
		order[next[b]] = int32(i)
		next[b]++
	}
	return order
}

func bucket(k int) int {
	if k <= 0 {
		return 0
	}
	return bits.Len64(uint64(k))
}
