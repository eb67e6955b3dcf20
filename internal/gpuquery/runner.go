package gpuquery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/conj"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/invindex"
)

// deviceJob and deviceTerm are the kernels' Job and Term, byte for byte.
type deviceJob struct {
	off0                             uint64
	len0, term1, nother, cap, capOff uint32
	_                                uint32
}

type deviceTerm struct {
	off  uint64
	len  uint32
	slot int32
}

// Kernel modes (kernels/query.cu).
const (
	modeCount   = 0
	modeDirect  = 1
	modeCompact = 2
)

// The buckets: a job whose shortest slice has at most bucketMax[b]
// elements runs with groups of bucketGroup[b] threads.
var (
	bucketMax   = [...]uint32{64, 256, 1024, 4096, splitLen}
	bucketGroup = [...]int{32, 64, 128, 256, 512}
)

const (
	numBuckets = len(bucketMax)
	// splitLen is the longest slice of a shortest list one group takes:
	// a longer list is split into jobs that run side by side, so that one
	// huge query does not hold the device alone at the end of a batch.
	splitLen = 8192
	// maxQueries bounds the queries of one device batch, maxJobs its
	// jobs, maxIDs the ids it keeps (its scratch), so that a batch's
	// buffers stay within batchBytes.
	maxQueries = 1 << 16
	maxJobs    = 1 << 18
	maxIDs     = 1 << 24
	batchBytes = (32+16*4+12)*maxJobs + 8*maxIDs
	// directIDs: a batch keeping fewer ids than this (plus 16 a job) is
	// copied back with its scratch in one copy; a larger one is compacted
	// on the device and copied back in two.
	directIDs = 1 << 16
)

// runner is the GPU engine's Runner on one index.
type runner struct {
	dev     *gpurt.Device
	ix      *invindex.Index
	threads int
	cpu     *conj.CPU // for the queries the host answers
	res     *resident

	mu     sync.Mutex // one batch at a time
	chunks []*chunk

	// Owned by the device's goroutine.
	kernels    [numBuckets]*gpurt.Kernel
	stream     *gpurt.Stream
	evStart    *gpurt.Event
	evEnd      *gpurt.Event
	dUp, dRes  gpurt.Buffer
	dOut       gpurt.Buffer
	up, down   gpurt.Pinned
	closed     bool
	stats      stats
	statsMu    sync.Mutex
	closeOnce  sync.Once
	closeError error
}

// stats accumulate how the batches ran, for Notes.
type stats struct {
	batches, queries, jobs, host int
	prep, device, finish         time.Duration
	upBytes, downBytes           int64
}

func newRunner(dev *gpurt.Device, ix *invindex.Index, threads int) (*runner, error) {
	if ix.NumDocs > 0 && len(ix.Postings) > 0 && uint64(len(ix.Postings)) >= 1<<40 {
		return nil, fmt.Errorf("query: %d postings: too many for the GPU engine", len(ix.Postings))
	}
	res, err := acquire(dev, ix)
	if err != nil {
		return nil, err
	}
	r := &runner{dev: dev, ix: ix, threads: conj.Threads(threads), cpu: conj.NewCPU(ix, 1), res: res}
	err = dev.Do(func(c *gpurt.Ctx) error {
		m, err := c.Load(source)
		if err != nil {
			return err
		}
		for b, g := range bucketGroup {
			if r.kernels[b], err = m.Kernel(fmt.Sprintf("query_g%d", g)); err != nil {
				return err
			}
		}
		if r.stream, err = c.NewStream(); err != nil {
			return err
		}
		if r.evStart, err = c.NewEvent(); err != nil {
			return err
		}
		r.evEnd, err = c.NewEvent()
		return err
	})
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close frees the runner's device and pinned memory, and the index's
// lists once no runner uses them.
func (r *runner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.closed = true
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			return errors.Join(c.Sync(r.stream), c.Free(r.dUp), c.Free(r.dRes), c.Free(r.dOut),
				r.up.Free(c), r.down.Free(c), c.DestroyEvent(r.evStart), c.DestroyEvent(r.evEnd), c.DestroyStream(r.stream))
		})
		r.closeError = errors.Join(err, release(r.dev, r.ix))
	})
	return r.closeError
}

// Notes describes the batches run so far.
func (r *runner) Notes() string {
	r.statsMu.Lock()
	s := r.stats
	r.statsMu.Unlock()
	if s.batches == 0 {
		return ""
	}
	return fmt.Sprintf("gpu: %d batches, %d queries (%d jobs on the device, %d answered on the host); host preparation %.1f ms, device %.1f ms (upload %s, kernels, download %s), reading back %.1f ms\n",
		s.batches, s.queries, s.jobs, s.host, millis(s.prep), millis(s.device), bytesString(s.upBytes), bytesString(s.downBytes), millis(s.finish))
}

func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func bytesString(n int64) string { return gpurt.FormatBytes(uint64(n)) }

// chunk is one goroutine's share of a batch's queries, with its buffers
// kept from batch to batch.
type chunk struct {
	lo, hi   int             // its queries
	jobs     []deviceJob     // its jobs, in the order made
	bucket   []uint8         // each job's bucket
	terms    []deviceTerm    // its jobs' other terms
	first    []int32         // each query's first job, -1 when answered on the host
	pos      []int32         // each job's place in the batch's sorted order
	n        [numBuckets]int // its jobs in each bucket
	at       [numBuckets]int // the place of its first job of each bucket
	termBase int
	capBase  uint32
	caps     uint32 // ids its jobs keep
	tbuf     []uint32
	fallback []int // queries left to the CPU
}

// Search answers a batch: see conj.Runner.
func (r *runner) Search(ctx context.Context, qs []conj.Query, limit int, countOnly bool, res []conj.Result) error {
	if len(res) != len(qs) {
		return fmt.Errorf("query: %d results for %d queries", len(res), len(qs))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("query: Search on a closed searcher")
	}
	for lo := 0; lo < len(qs); lo += maxQueries {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+maxQueries, len(qs))
		if err := r.batch(ctx, qs[lo:hi], limit, countOnly, res[lo:hi]); err != nil {
			return err
		}
	}
	return nil
}

// parallel runs fn(c) for every chunk, on goroutines when there are
// several.
func (r *runner) parallel(n int, fn func(c *chunk)) {
	if n == 1 {
		fn(r.chunks[0])
		return
	}
	var wg sync.WaitGroup
	for _, c := range r.chunks[:n] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(c)
		}()
	}
	wg.Wait()
}

// batch answers at most maxQueries queries: prepared on the host, jobs on
// the device, answers read back. When the jobs or the ids would overflow
// the batch's buffers, it answers the two halves apart.
func (r *runner) batch(ctx context.Context, qs []conj.Query, limit int, countOnly bool, res []conj.Result) error {
	t0 := time.Now()
	// Chunks of at least 1024 queries: below that, a goroutine costs more
	// than it saves.
	n := max(1, min(r.threads, len(qs)/1024))
	for len(r.chunks) < n {
		r.chunks = append(r.chunks, &chunk{})
	}
	for i, c := range r.chunks[:n] {
		c.lo, c.hi = i*len(qs)/n, (i+1)*len(qs)/n
	}
	r.parallel(n, func(c *chunk) { r.prepare(c, qs, limit, countOnly, res) })
	// The batch's layout: jobs sorted by bucket, chunk by chunk.
	jobs, terms, host := 0, 0, 0
	var caps uint64
	var bucketStart [numBuckets + 1]int
	for _, c := range r.chunks[:n] {
		for b := range numBuckets {
			bucketStart[b+1] += c.n[b]
		}
		c.termBase = terms
		c.capBase = uint32(caps)
		jobs += len(c.jobs)
		terms += len(c.terms)
		caps += uint64(c.caps)
		host += len(c.fallback)
	}
	if (jobs > maxJobs || caps > maxIDs) && len(qs) > 1 {
		h := len(qs) / 2
		if err := r.batch(ctx, qs[:h], limit, countOnly, res[:h]); err != nil {
			return err
		}
		return r.batch(ctx, qs[h:], limit, countOnly, res[h:])
	}
	if jobs > maxJobs || caps > maxIDs {
		// prepare leaves a query that large to the CPU.
		return fmt.Errorf("query: internal error: one query makes %d jobs keeping %d ids", jobs, caps)
	}
	for b := range numBuckets {
		bucketStart[b+1] += bucketStart[b]
	}
	next := bucketStart
	for _, c := range r.chunks[:n] {
		for b := range numBuckets {
			c.at[b] = next[b]
			next[b] += c.n[b]
		}
	}
	mode := modeCount
	if !countOnly {
		mode = modeCompact
		if caps <= directIDs+16*uint64(jobs) {
			mode = modeDirect
		}
	}
	upBytes := 32*jobs + 16*terms
	downWords := 1 + 2*jobs + int(caps)
	var prep, dev time.Duration
	if jobs > 0 {
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			if err := r.grow(c, upBytes, downWords, int(caps)); err != nil {
				return err
			}
			up := r.up.Bytes()
			r.parallel(n, func(ch *chunk) { r.place(ch, up, jobs) })
			prep = time.Since(t0)
			t1 := time.Now()
			down, err := r.run(c, bucketStart, jobs, upBytes, downWords, mode)
			dev = time.Since(t1)
			if err != nil {
				return err
			}
			r.statsMu.Lock()
			r.stats.downBytes += int64(down)
			r.statsMu.Unlock()
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		prep = time.Since(t0)
	}
	t2 := time.Now()
	if jobs > 0 {
		words := gpurt.Uint32s(r.down.Bytes())
		r.parallel(n, func(ch *chunk) { r.finish(ch, words, jobs, limit, countOnly, mode, res) })
	}
	// The queries left to the CPU, one at a time.
	for _, ch := range r.chunks[:n] {
		for _, i := range ch.fallback {
			if err := r.cpu.Search(ctx, qs[i:i+1], limit, countOnly, res[i:i+1]); err != nil {
				return err
			}
		}
	}
	r.statsMu.Lock()
	r.stats.batches++
	r.stats.queries += len(qs)
	r.stats.jobs += jobs
	r.stats.host += len(qs) - countGPU(r.chunks[:n])
	r.stats.prep += prep
	r.stats.device += dev
	r.stats.finish += time.Since(t2)
	r.stats.upBytes += int64(upBytes)
	r.statsMu.Unlock()
	return nil
}

func countGPU(cs []*chunk) int {
	n := 0
	for _, c := range cs {
		for _, f := range c.first {
			if f >= 0 {
				n++
			}
		}
	}
	return n
}

// prepare turns c's queries into jobs, answering on the host those with
// fewer than two terms that the index holds.
func (r *runner) prepare(c *chunk, qs []conj.Query, limit int, countOnly bool, res []conj.Result) {
	ix := r.ix
	c.jobs, c.bucket, c.terms, c.first, c.fallback = c.jobs[:0], c.bucket[:0], c.terms[:0], c.first[:0], c.fallback[:0]
	c.n = [numBuckets]int{}
	c.caps = 0
	for i := c.lo; i < c.hi; i++ {
		terms, ok := conj.Prepare(ix, qs[i], c.tbuf)
		c.tbuf = terms
		if !ok || len(terms) == 1 {
			c.first = append(c.first, -1)
			rr := &res[i]
			rr.Count = 0
			var ids []uint32
			if ok {
				ids = ix.List(terms[0])
				rr.Count = len(ids)
			}
			if countOnly {
				rr.IDs = nil
				continue
			}
			if limit >= 0 && len(ids) > limit {
				ids = ids[:limit]
			}
			rr.IDs = append(rr.IDs[:0], ids...)
			continue
		}
		l0 := uint64(ix.Len(terms[0]))
		// The ids the query may keep, over all its jobs.
		keep := uint64(0)
		if !countOnly {
			keep = l0
			if limit >= 0 {
				keep = min(l0, uint64(limit)*((l0+splitLen-1)/splitLen))
			}
		}
		if keep > maxIDs/2 || (l0+splitLen-1)/splitLen > maxJobs/2 {
			c.first = append(c.first, -1)
			c.fallback = append(c.fallback, i)
			continue
		}
		c.first = append(c.first, int32(len(c.jobs)))
		term1 := uint32(len(c.terms))
		for _, t := range terms[1:] {
			c.terms = append(c.terms, deviceTerm{off: ix.Offsets[t], len: uint32(ix.Len(t)), slot: int32(ix.DenseSlot(t))})
		}
		off := ix.Offsets[terms[0]]
		for s := uint64(0); s < l0; s += splitLen {
			n := uint32(min(splitLen, l0-s))
			cp := uint32(0)
			if !countOnly {
				cp = n
				if limit >= 0 {
					cp = min(n, uint32(limit))
				}
			}
			b := 0
			for n > bucketMax[b] {
				b++
			}
			c.jobs = append(c.jobs, deviceJob{off0: off + s, len0: n, term1: term1, nother: uint32(len(terms) - 1), cap: cp, capOff: c.caps})
			c.bucket = append(c.bucket, uint8(b))
			c.n[b]++
			c.caps += cp
		}
	}
}

// place writes c's jobs and terms to the pinned upload buffer, jobs at
// their places in the bucket order, terms and scratch offsets shifted to
// the batch's.
func (r *runner) place(c *chunk, up []byte, jobs int) {
	dj := unsafe.Slice((*deviceJob)(unsafe.Pointer(&up[0])), jobs)
	dt := unsafe.Slice((*deviceTerm)(unsafe.Pointer(&up[32*jobs])), (len(up)-32*jobs)/16)
	copy(dt[c.termBase:], c.terms)
	next := c.at
	c.pos = c.pos[:0]
	for k, j := range c.jobs {
		b := c.bucket[k]
		p := next[b]
		next[b]++
		j.term1 += uint32(c.termBase)
		j.capOff += c.capBase
		dj[p] = j
		c.pos = append(c.pos, int32(p))
	}
}

// grow makes the device and pinned buffers large enough for a batch.
func (r *runner) grow(c *gpurt.Ctx, upBytes, downWords, outWords int) error {
	need := func(b *gpurt.Buffer, n int) error {
		if b.Len() >= n {
			return nil
		}
		if err := c.Sync(r.stream); err != nil {
			return err
		}
		if err := c.Free(*b); err != nil {
			return err
		}
		*b = gpurt.Buffer{}
		nb, err := c.Alloc(n + n/2)
		if err != nil {
			return err
		}
		*b = nb
		return nil
	}
	if err := need(&r.dUp, upBytes); err != nil {
		return err
	}
	if err := need(&r.dRes, 4*downWords); err != nil {
		return err
	}
	if err := need(&r.dOut, max(4*outWords, 4)); err != nil {
		return err
	}
	if r.up.Len() < upBytes {
		if err := r.up.Grow(c, upBytes+upBytes/2); err != nil {
			return err
		}
	}
	if r.down.Len() < 4*downWords {
		if err := r.down.Grow(c, 4*downWords+2*downWords); err != nil {
			return err
		}
	}
	return nil
}

// run uploads the batch, launches a kernel per bucket and copies the
// results back into r.down: the header (cursor, counts, places) and then
// the ids (the scratch in direct mode, the compacted ids otherwise). It
// returns the bytes copied back.
func (r *runner) run(c *gpurt.Ctx, bucketStart [numBuckets + 1]int, jobs, upBytes, downWords, mode int) (int, error) {
	s := r.stream
	if err := c.Record(r.evStart, s); err != nil {
		return 0, err
	}
	if err := c.CopyToDeviceAsync(r.dUp.Slice(0, upBytes), r.up.Bytes()[:upBytes], s); err != nil {
		return 0, err
	}
	if mode == modeCompact {
		if err := c.Memset32(r.dRes.Slice(0, 4), 0, s); err != nil {
			return 0, err
		}
	}
	jobsBuf := r.dUp.Slice(0, 32*jobs)
	termsBuf := r.dUp.Slice(32*jobs, upBytes-32*jobs)
	if upBytes == 32*jobs {
		termsBuf = r.dUp.Slice(0, 16) // no terms; never read
	}
	words := uint32(r.ix.BitmapWords())
	for b := range numBuckets {
		count := bucketStart[b+1] - bucketStart[b]
		if count == 0 {
			continue
		}
		grid, block := count, bucketGroup[b]
		if block == 32 {
			grid, block = (count+3)/4, 128
		}
		err := c.Launch(r.kernels[b], gpurt.Dim{X: grid}, gpurt.Dim{X: block}, 0, s,
			jobsBuf, termsBuf, r.res.postings, r.res.bitmaps, words, uint32(bucketStart[b]), uint32(count),
			uint32(jobs), r.dRes, r.dOut, int32(mode))
		if err != nil {
			return 0, err
		}
	}
	down := r.down.Bytes()
	head := 1 + 2*jobs
	switch mode {
	case modeCount:
		head = 1 + jobs
	case modeDirect:
		head = downWords
	}
	if err := c.CopyToHostAsync(down[:4*head], r.dRes.Slice(0, 4*head), s); err != nil {
		return 0, err
	}
	copied := 4 * head
	if mode == modeCompact {
		if err := c.Sync(s); err != nil {
			return 0, err
		}
		n := int(gpurt.Uint32s(down)[0])
		if n > downWords-head {
			return 0, fmt.Errorf("query: the device wrote %d ids, more than the %d kept", n, downWords-head)
		}
		if n > 0 {
			if err := c.CopyToHostAsync(down[4*head:4*(head+n)], r.dOut.Slice(0, 4*n), s); err != nil {
				return 0, err
			}
			copied += 4 * n
		}
	}
	if err := c.Record(r.evEnd, s); err != nil {
		return 0, err
	}
	return copied, c.Sync(s)
}

// finish reads c's answers back: each query's count is the sum of its
// jobs', its ids theirs in order, up to limit.
func (r *runner) finish(c *chunk, words []uint32, jobs, limit int, countOnly bool, mode int, res []conj.Result) {
	counts := words[1 : 1+jobs]
	var places, ids []uint32
	switch mode {
	case modeDirect:
		ids = words[1+2*jobs:]
	case modeCompact:
		places = words[1+jobs : 1+2*jobs]
		ids = words[1+2*jobs:]
	}
	for q, f := range c.first {
		if f < 0 {
			continue
		}
		i := c.lo + q
		end := len(c.jobs)
		for k := q + 1; k < len(c.first); k++ {
			if c.first[k] >= 0 {
				end = int(c.first[k])
				break
			}
		}
		rr := &res[i]
		total := 0
		if !countOnly {
			rr.IDs = rr.IDs[:0]
		}
		for k := int(f); k < end; k++ {
			p := c.pos[k]
			cnt := int(counts[p])
			total += cnt
			if countOnly || limit >= 0 && len(rr.IDs) >= limit {
				continue
			}
			kept := min(cnt, int(c.jobs[k].cap))
			var got []uint32
			if mode == modeDirect {
				at := int(c.capBase + c.jobs[k].capOff)
				got = ids[at : at+kept]
			} else {
				at := int(places[p])
				got = ids[at : at+kept]
			}
			if limit >= 0 {
				got = got[:min(len(got), limit-len(rr.IDs))]
			}
			rr.IDs = append(rr.IDs, got...)
		}
		rr.Count = total
		if countOnly {
			rr.IDs = nil
		}
	}
}
