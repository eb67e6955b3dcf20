package gpusimjoin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/simjoin"
)

// runner is one run: the filters fill chunks (builder), the goroutine of
// each owner of the set uploads, verifies and downloads them (device; a
// free owner takes the next sealed chunk), and post goroutines report the
// similar pairs (post).
type runner struct {
	p     *simjoin.Problem
	out   *simjoin.Output
	pl    *runPlan
	bd    *builder
	exact uint32 // the kernels' exact: 1, every similar pair's overlap is wanted; 2, only their number

	results chan []uint32 // triples probe, candidate, overlap

	stop     chan struct{} // closed by the first failure
	failOnce sync.Once
	failErr  error

	st stats
	// filterEnd is when the filters, with the CPU's share of the tail,
	// were done (unix nanoseconds; 0 before): the device's work on a
	// chunk submitted later is not hidden behind them, and on one that
	// ends later only up to then.
	filterEnd atomic.Int64
}

// stats is where a run's time went, for its note.
type stats struct {
	chunks              int
	pairs, similar      int64
	filter, total, tail time.Duration // wall: filtering, the run, after filtering
	open, records       time.Duration // wall: waiting for the device, uploading the records
	upload, kernel      time.Duration // device: copying chunks in, verifying (with the count's copy back)
	exposed             time.Duration // device: of upload and kernel, after filtering (at most)
	cpuTail             time.Duration // wall: the CPU verifying the last chunk
	cpuPairs            int           // its candidates
	endDevice           int           // candidates left at the end that the device took
	download            time.Duration // wall: copying the similar pairs back
	starved, waited     time.Duration // wall: the device's goroutine waiting for chunks, for the device
	stalled             time.Duration // filters waiting for a free chunk, summed
	kernelName          string
	blockMin, blockMax  int
}

func (r *runner) fail(err error) {
	r.failOnce.Do(func() {
		r.failErr = err
		close(r.stop)
	})
}

func (r *runner) err() error {
	select {
	case <-r.stop:
		return r.failErr
	default:
		return nil
	}
}

// run verifies the candidates of pl's filter on p with plan pl.
func run(ctx context.Context, p *simjoin.Problem, pl *runPlan, out *simjoin.Output) error {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &runner{p: p, out: out, pl: pl, results: make(chan []uint32, 64), stop: make(chan struct{})}
	switch {
	case !out.CountOnly():
		r.exact = 1
	case out.CountsRecords():
		r.exact = 2 // the count alone comes back
	}
	r.bd = newBuilder(pl.hostChunks, pl.capProbes, pl.capCands, r.stop, func() error { return r.failErr })
	r.bd.endgame, r.bd.tailCands, r.bd.trip = endgame, pl.tailCands, sealTrip
	if !pl.shareOnly {
		r.bd.cpuNS, r.bd.devNS, r.bd.devTrip = pl.cpuNS, pl.devNS, sealTrip
	}
	r.st.kernelName = pl.kernel.String()

	// The filters, on every core, and of the chunks the device has not
	// taken when they are done, those that the CPU verifies in its share
	// (about a round trip to the device), and more while the device would
	// still be busy with the rest when the CPU is done: so the device
	// ends before the CPU's tail where the prices hold.
	var filterEnd time.Time
	filtered := make(chan error, 1)
	go func() {
		err := simjoin.Candidates(ctx, p, pl.filter, out, r.bd.emit)
		most := pl.cpuTail
		if err != nil {
			most = 0
		}
		if tail := r.bd.finishTail(most); tail != nil {
			t := time.Now()
			for _, pt := range tail {
				simjoin.VerifyBatch(p, &pt.b, out, p.Threads)
				r.st.cpuPairs += len(pt.b.Cands)
				if pt.own {
					r.bd.recycle(pt.ch)
				} // else the device recycles it
			}
			r.st.cpuTail = time.Since(t)
			if err == nil {
				err = out.Err()
			}
		}
		r.st.endDevice = r.bd.endDevice // set by finishTail
		filterEnd = time.Now()
		r.filterEnd.Store(filterEnd.UnixNano())
		filtered <- err
	}()

	// The post goroutines, one per core: they wait while no pairs come
	// back, and the caller's function, which may format every pair, runs
	// on them.
	var post sync.WaitGroup
	for range max(1, p.Threads) {
		post.Add(1)
		go func() {
			defer post.Done()
			r.post()
		}()
	}

	// The devices, meanwhile: every owner of the set takes sealed chunks
	// from the one queue, bd.filled, until the filters are done.
	derr := func() error {
		t := time.Now()
		set, err := gpurt.OpenSet(r.pl.gpus)
		r.st.open = time.Since(t)
		if err != nil {
			return err
		}
		if set.Len() == 0 {
			return errorf("no GPU to verify on")
		}
		// Free memory before any owner allocates: an owner's share of it.
		frees := make([]uint64, set.Len())
		for i := range frees {
			if frees[i], _, err = set.Owner(i).FreeMemory(); err != nil {
				return err
			}
		}
		owners := make([]stats, set.Len())
		rep, err := set.Run(ctx, set.Len(), func(ctx context.Context, w *gpurt.Worker) error {
			err := r.owner(w, frees[w.Index()], &owners[w.Index()])
			if err != nil {
				r.fail(err) // the other owners and the filters stop now
				cancel()
			}
			return err
		})
		for i, o := range owners {
			r.st.add(o)
			if i < len(rep.Owners) {
				rep.Owners[i].Tiles = o.chunks
			}
		}
		out.Note("verify on %s: %s", set, rep.Describe("chunks"))
		return err
	}()
	if derr != nil {
		r.fail(derr)
		cancel()
		// Give the chunks back so that no filter waits for one.
		for ch := range r.bd.filled {
			ch.writers.Wait()
		}
	}
	ferr := <-filtered
	close(r.results)
	post.Wait()
	r.bd.release()

	r.st.total = time.Since(start)
	r.st.filter = filterEnd.Sub(start)
	r.st.tail = max(0, time.Since(filterEnd))
	r.st.stalled = time.Duration(r.bd.stalled.Load())
	r.st.pairs = r.bd.pairs.Load()
	out.Note("%s", r.st.String(pl))
	switch {
	case derr != nil:
		return derr
	case ferr != nil:
		return ferr
	}
	return out.Err()
}

// slot is a device buffer set for one chunk in flight, on its own stream,
// kept from run to run.
type slot struct {
	stream                      *gpurt.Stream
	evStart, evKernel, evEnd    *gpurt.Event
	probes, starts, cands, need gpurt.Buffer
	count, out                  gpurt.Buffer
	host                        *gpurt.HostBuffer // the count, copied back
	busy                        bool
	late                        bool // submitted after the filters were done
}

// owner is w's part of the run: with its state held, in its share of its
// GPU's free memory, on its goroutine.
func (r *runner) owner(w *gpurt.Worker, free uint64, acct *stats) error {
	dev := w.Device()
	st := stateOf(dev)
	st.mu.Lock()
	defer st.mu.Unlock()
	if may := int64(free)/int64(w.Share()) + st.pooled(); r.pl.devMemory > may {
		return errorf("GPU %d needs %s of device memory for the records and two chunks; an owner of it may use %s (%s free, %d owners)",
			dev.Info().Ordinal, gpurt.FormatBytes(uint64(r.pl.devMemory)), gpurt.FormatBytes(uint64(may)), gpurt.FormatBytes(free), w.Share())
	}
	return dev.Do(func(c *gpurt.Ctx) error { return r.device(c, st, dev.UploadLock(), acct) })
}

// device runs on an owner's goroutine: it uploads the records (holding
// upload, which the owners of its GPU share), then verifies the chunks it
// takes as the filters seal them, two in flight, and hands their similar
// pairs to the post goroutines. Its account goes to acct.
func (r *runner) device(c *gpurt.Ctx, st *state, upload *sync.Mutex, acct *stats) error {
	if st.mod == nil {
		mod, err := c.Load(source)
		if err != nil {
			return err
		}
		st.mod = mod
	}
	k, err := st.mod.Kernel(r.pl.kernel.entry())
	if err != nil {
		return err
	}
	slots, err := st.slotsFor(c, r.pl.capProbes, r.pl.capCands)
	if err != nil {
		return err
	}
	defer c.Synchronize() // nothing of this run left queued

	// The records, once: each side's caller's elements and every record's
	// start and length in them, in a buffer kept for the next run.
	t := time.Now()
	upload.Lock()
	unlock := sync.OnceFunc(upload.Unlock)
	defer unlock() // when the records are on the device, or failed
	type side struct{ elems, recs gpurt.Buffer }
	load := func(s *simjoin.Side, buf *gpurt.Buffer) (side, error) {
		var d side
		recs := make([]uint32, 2*s.Len())
		for x := range s.Len() {
			recs[2*x] = uint32(s.Orig.Offsets[s.ID[x]])
			recs[2*x+1] = s.Size(x)
		}
		eb := (4*len(s.Orig.Elements) + 7) &^ 7
		n := max(eb+4*len(recs), 8)
		if err := c.Grow(buf, n); err != nil {
			return d, err
		}
		b := buf.Slice(0, n)
		d.elems, d.recs = b.Slice(0, eb), b.Slice(eb, b.Len()-eb)
		u := st.stage.Uploads(st.up)
		if err := u.Add(d.elems.Slice(0, 4*len(s.Orig.Elements)), gpurt.Bytes(s.Orig.Elements)); err != nil {
			return d, err
		}
		if err := u.Add(d.recs.Slice(0, 4*len(recs)), gpurt.Bytes(recs)); err != nil {
			return d, err
		}
		return d, u.Flush(c)
	}
	sr, err := load(r.p.R, &st.recs[0])
	if err != nil {
		return err
	}
	ss := sr
	if !r.p.Self {
		if ss, err = load(r.p.S, &st.recs[1]); err != nil {
			return err
		}
	}
	if err := c.Sync(st.up); err != nil {
		return err
	}
	unlock()
	acct.records = time.Since(t)

	// submit queues chunk ch on sl: its upload, the kernel, the count back.
	submit := func(sl *slot, ch *chunk) error {
		s := sl.stream
		if err := c.Record(sl.evStart, s); err != nil {
			return err
		}
		u := st.stage.Uploads(s)
		for _, a := range []struct {
			dst gpurt.Buffer
			src []uint32
		}{{sl.probes, ch.probes[:ch.np]}, {sl.starts, ch.starts[:ch.np+1]}, {sl.cands, ch.cands[:ch.nc]}, {sl.need, ch.need[:ch.nc]}} {
			if err := u.Add(a.dst.Slice(0, 4*len(a.src)), gpurt.Bytes(a.src)); err != nil {
				return err
			}
		}
		if err := u.Flush(c); err != nil {
			return err
		}
		if err := c.Memset32(sl.count, 0, s); err != nil {
			return err
		}
		if err := c.Record(sl.evKernel, s); err != nil {
			return err
		}
		np, nc := uint32(ch.np), uint32(ch.nc)
		args := []any{sr.elems, sr.recs, ss.elems, ss.recs, sl.probes, sl.starts, sl.cands, sl.need, np, r.exact, sl.count, sl.out}
		var grid, block, shared int
		switch r.pl.kernel {
		case kThread:
			block = 128
			grid = (ch.np + block - 1) / block
		case kBlock:
			block = blockFor(ch.np, ch.nc)
			grid = ch.np
			shared = 4 * r.pl.shCap
			args = append(args, uint32(r.pl.shCap))
		case kPair:
			tile := r.pl.tile
			block = 128 // several tiles of a warp or less
			if tile > 32 {
				block = tile // one tile, adding up through shared memory
				shared = 4 * block / 32
			}
			grid = (ch.nc + block/tile - 1) / (block / tile)
			args = append(args, nc, uint32(tile))
		}
		acct.blockMin = min(acct.blockMin, block)
		acct.blockMax = max(acct.blockMax, block)
		if err := c.Launch(k, gpurt.Dim{X: grid}, gpurt.Dim{X: block}, shared, s, args...); err != nil {
			return err
		}
		if err := c.CopyToHostAsync(sl.host.Bytes(), sl.count, s); err != nil {
			return err
		}
		sl.busy = true
		sl.late = r.filterEnd.Load() != 0
		r.bd.onDevice.Add(int64(ch.nc))
		return c.Record(sl.evEnd, s)
	}

	// finish waits for sl's chunk and hands its similar pairs on.
	finish := func(sl *slot, nc int) error {
		t := time.Now()
		if err := c.Wait(sl.evEnd); err != nil {
			return err
		}
		done := time.Now()
		acct.waited += done.Sub(t)
		sl.busy = false
		r.bd.onDevice.Add(-int64(nc))
		if d, err := c.Elapsed(sl.evStart, sl.evEnd); err == nil {
			// Submitted after the filters were done: none of it hidden.
			// Else, if it was seen done after them, the part after them
			// at most.
			if fe := r.filterEnd.Load(); sl.late {
				acct.exposed += d
			} else if fe != 0 && done.UnixNano() > fe {
				acct.exposed += min(d, time.Duration(done.UnixNano()-fe))
			}
		}
		if d, err := c.Elapsed(sl.evStart, sl.evKernel); err == nil {
			acct.upload += d
		}
		if d, err := c.Elapsed(sl.evKernel, sl.evEnd); err == nil {
			acct.kernel += d
		}
		n := int(sl.host.Uint32s()[0])
		if n > nc {
			return errorf("the kernel reported %d similar pairs of %d candidates", n, nc)
		}
		if n == 0 {
			return nil
		}
		if r.exact == 2 {
			acct.similar += int64(n)
			w := r.out.Writer()
			w.AddCount(int64(n))
			w.Close()
			return nil
		}
		t = time.Now()
		res := make([]uint32, 3*n)
		if err := st.stage.Download(c, sl.stream, gpurt.Bytes(res), sl.out.Slice(0, 12*n)); err != nil {
			return err
		}
		acct.download += time.Since(t)
		acct.similar += int64(n)
		// In pieces, so that every post goroutine takes a share.
		for len(res) > 0 {
			piece := res[:min(len(res), 3*postPiece)]
			res = res[len(piece):]
			select {
			case r.results <- piece:
			case <-r.stop:
				return r.failErr
			}
		}
		return nil
	}

	acct.blockMin = 1 << 30
	type flight struct {
		sl *slot
		nc int
	}
	var inflight []flight
	for next := 0; ; {
		var ch *chunk
		var ok bool
		if len(inflight) > 0 {
			select {
			case ch, ok = <-r.bd.filled:
			default:
				// No chunk ready: collect the oldest one's pairs meanwhile.
				if err := finish(inflight[0].sl, inflight[0].nc); err != nil {
					return err
				}
				inflight = inflight[1:]
				continue
			}
		} else {
			t := time.Now()
			ch, ok = <-r.bd.filled
			acct.starved += time.Since(t)
		}
		if !ok {
			break
		}
		if err := r.err(); err != nil {
			ch.writers.Wait()
			return err
		}
		sl := slots[next%numSlots]
		next++
		if sl.busy {
			// The oldest in flight.
			if err := finish(inflight[0].sl, inflight[0].nc); err != nil {
				ch.writers.Wait()
				return err
			}
			inflight = inflight[1:]
		}
		ch.writers.Wait()
		if err := submit(sl, ch); err != nil {
			return err
		}
		inflight = append(inflight, flight{sl, ch.nc})
		acct.chunks++
		r.bd.recycle(ch) // its copy is queued: the filters may refill it
	}
	for _, f := range inflight {
		if err := finish(f.sl, f.nc); err != nil {
			return err
		}
	}
	if acct.blockMin > acct.blockMax {
		acct.blockMin = 0
	}
	return nil
}

// postPiece is the most similar pairs a post goroutine takes at once.
const postPiece = 1 << 13

// post reports the similar pairs of the results as they come back.
func (r *runner) post() {
	w := r.out.Writer()
	defer w.Close()
	for res := range r.results {
		if r.out.Err() != nil || r.err() != nil {
			continue // drain
		}
		for i := 0; i+2 < len(res); i += 3 {
			w.Add(int(res[i+1]), int(res[i]), res[i+2]) // R's record, S's record
		}
	}
}

// add adds an owner's account o to s: the device's times summed over
// the owners, the records' upload the longest.
func (s *stats) add(o stats) {
	s.chunks += o.chunks
	s.similar += o.similar
	s.records = max(s.records, o.records)
	s.upload += o.upload
	s.kernel += o.kernel
	s.exposed += o.exposed
	s.download += o.download
	s.starved += o.starved
	s.waited += o.waited
	if s.kernelName == "" {
		s.kernelName = o.kernelName
	}
	if o.blockMax > 0 {
		if s.blockMax == 0 {
			s.blockMin = o.blockMin
		}
		s.blockMin = min(s.blockMin, o.blockMin)
		s.blockMax = max(s.blockMax, o.blockMax)
	}
}

// String is the run's account for its note.
func (s *stats) String(pl *runPlan) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	busy := s.upload + s.kernel
	hidden := 100.0
	if busy > 0 {
		hidden = max(0, 100*(1-float64(s.exposed)/float64(busy)))
	}
	block := ""
	if s.blockMax > 0 {
		block = " block " + strconv.Itoa(s.blockMin)
		if s.blockMax != s.blockMin {
			block += "-" + strconv.Itoa(s.blockMax)
		}
	}
	if pl.kernel == kPair {
		block += ", " + strconv.Itoa(pl.tile) + " threads per pair"
	}
	tail := "none"
	if s.cpuPairs > 0 {
		tail = fmt.Sprintf("%d pairs in %.2f ms", s.cpuPairs, ms(s.cpuTail))
	}
	tail += fmt.Sprintf(", %d left to the device", s.endDevice)
	return fmt.Sprintf("gpu: filter %s, kernel %s%s, %d chunks of up to %d (%d at the end), %d pairs verified, %d similar; filtering %.1f ms (filters waited %.1f ms for chunks; the end on the CPU: %s), "+
		"device busy %.1f ms (upload %.1f, verify %.1f), results back %.1f ms, device waited %.1f ms for chunks, opening %.1f ms, records %.1f ms; "+
		"after filtering: device %.2f ms at most (%.0f%% of its work hidden), wall %.1f ms; run %.1f ms",
		pl.filter, s.kernelName, block, s.chunks, pl.capCands, pl.tailCands, s.pairs, s.similar, ms(s.filter), ms(s.stalled), tail,
		ms(busy), ms(s.upload), ms(s.kernel), ms(s.download), ms(s.starved), ms(s.open), ms(s.records),
		ms(s.exposed), hidden, ms(s.tail), ms(s.total))
}

// slotsFor returns the device slots, kept from the last run when they
// hold chunks of the given capacities, else made anew. It runs on the
// device's goroutine.
func (st *state) slotsFor(c *gpurt.Ctx, capProbes, capCands int) ([numSlots]*slot, error) {
	if st.up == nil {
		up, err := c.NewStream()
		if err != nil {
			return st.slots, err
		}
		st.up = up
	}
	if st.slots[0] != nil && st.slotProbes >= capProbes && st.slotCands >= capCands {
		for _, sl := range st.slots {
			sl.busy = false
		}
		return st.slots, nil
	}
	if err := st.freeSlots(c); err != nil {
		return st.slots, err
	}
	for i := range st.slots {
		sl := &slot{}
		var err error
		if sl.stream, err = c.NewStream(); err != nil {
			return st.slots, err
		}
		st.slots[i] = sl // freed with what it holds so far if the rest fails
		for _, ev := range []**gpurt.Event{&sl.evStart, &sl.evKernel, &sl.evEnd} {
			if *ev, err = c.NewEvent(); err != nil {
				return st.slots, err
			}
		}
		for _, b := range []struct {
			dst *gpurt.Buffer
			n   int
		}{{&sl.probes, 4 * capProbes}, {&sl.starts, 4 * (capProbes + 1)}, {&sl.cands, 4 * capCands}, {&sl.need, 4 * capCands}, {&sl.count, 4}, {&sl.out, 12 * capCands}} {
			if *b.dst, err = c.Alloc(b.n); err != nil {
				return st.slots, err
			}
		}
		if sl.host, err = c.AllocHost(4); err != nil {
			return st.slots, err
		}
	}
	st.slotProbes, st.slotCands = capProbes, capCands
	return st.slots, nil
}

// freeSlots frees the device slots.
func (st *state) freeSlots(c *gpurt.Ctx) error {
	if err := c.Synchronize(); err != nil {
		return err
	}
	var errs []error
	for i, sl := range st.slots {
		if sl == nil {
			continue
		}
		errs = append(errs, c.DestroyStream(sl.stream), c.DestroyEvent(sl.evStart), c.DestroyEvent(sl.evKernel), c.DestroyEvent(sl.evEnd), c.FreeHost(sl.host))
		for _, b := range []gpurt.Buffer{sl.probes, sl.starts, sl.cands, sl.need, sl.count, sl.out} {
			errs = append(errs, c.Free(b))
		}
		st.slots[i] = nil
	}
	st.slotProbes, st.slotCands = 0, 0
	return errors.Join(errs...)
}
