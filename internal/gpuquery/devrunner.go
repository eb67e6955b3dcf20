package gpuquery

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
)

//go:embed kernels
var kernelFiles embed.FS

var batchSrc = gpurt.EmbeddedSource(kernelFiles, "kernels/batch.cu")

// KernelSources returns the sources the engine loads, for
// internal/kernelgen to prebuild.
func KernelSources() []gpurt.Source { return []gpurt.Source{batchSrc} }

// Limits of kernels/batch.cu.
const (
	devMaxTerms = 32 // MAXT: longer queries are answered on the host
	jobBytes    = 40 // sizeof(Job)
	termBytes   = 16 // sizeof(Term)
	headWords   = 8  // C_WORDS
	qArrays     = 7  // Q_ARRAYS
	cOut        = 7  // C_OUT: the ids written to out
	// The per-query arrays of the header.
	qCount = 0
	qFlag  = 1
	qOff   = 2
	qN     = 3
	// maxScratch bounds the ids one batch keeps on the device; a query
	// that finds no room is answered on the host.
	maxScratch = 1 << 25
)

// devRunner is the GPU engine's Runner: queries go to the device as they
// are, their terms' ids, and the device prepares them (kernels/batch.cu).
// A search of many queries is cut into batches that flow through slots:
// the host packs batch k+1 into one slot and reads batch k-1's answers
// out of another while the device runs batch k.
type devRunner struct {
	dev     *gpurt.Device
	ix      *invindex.Index
	threads int
	cpu     *query.CPU // for the queries the host answers
	res     *resident
	// batchQueries is the most queries of a batch (at most maxQueries).
	batchQueries int

	mu sync.Mutex // one search at a time

	// Owned by the device's goroutine.
	prepare *gpurt.Kernel
	compact [2]*gpurt.Kernel // compact_queries, compact_jobs
	buckets [numBuckets]*gpurt.Kernel
	grids   [numBuckets + 1]int // persistent grids: the buckets', compact's
	slots   [numSlots]slot
	closed  bool
	// launches counts the batches launched; every timeEvery-th has its
	// kernels timed.
	launches int

	statsMu    sync.Mutex
	stats      stats
	closeOnce  sync.Once
	closeError error
}

// partScratch is what the parts of place and finish keep from batch to
// batch: each part's count of terms, and its list of queries for the
// host.
type partScratch struct {
	counts []int
	lists  [][]int
}

// lists returns k empty lists, reusing their memory.
func (ps *partScratch) reset(k int) {
	ps.counts = slices.Grow(ps.counts[:0], k)[:k]
	for len(ps.lists) < k {
		ps.lists = append(ps.lists, nil)
	}
	ps.lists = ps.lists[:k]
	for i := range ps.lists {
		ps.lists[i] = ps.lists[i][:0]
	}
}

// slot is one batch on its way: its host and device buffers, its stream
// and events, and what the batch needs to be read back.
type slot struct {
	stream         *gpurt.Stream
	ev             [4]*gpurt.Event              // start, uploaded, kernels done, end
	kev            [numBuckets + 2]*gpurt.Event // after prepare, each bucket (largest first), compact
	dUp, dSorted   gpurt.Buffer
	dJobs, dHead   gpurt.Buffer
	dPieces        gpurt.Buffer
	dScratch, dOut gpurt.Buffer
	up, down       gpurt.Registered

	// The batch in the slot.
	lo, nq, terms int // its queries are qs[lo : lo+nq]; their terms on the device
	upWords       int
	pieceCap      int
	scratchCap    int
	downHead      int
	outIDs        int
	host          []int // queries (in the batch) the host answers: more than devMaxTerms terms
	busy          bool  // launched and not collected
	timed         bool  // its kernels timed (kev recorded)
	scratch       partScratch
	ph            [numPhases]time.Duration
	kt            [numBuckets + 2]time.Duration
}

// defaultBatchQueries is the size of the batches a search is cut into
// (see numBatches): on the H100 host, a million queries ran at 180M
// queries/s in batches of 64Ki (docs/QUERY.md); an earlier version of
// this engine ran 99M in batches of 64Ki, 72M in batches of 32Ki.
const defaultBatchQueries = maxQueries

// timeEvery spaces the batches whose kernels are timed (for Notes): the
// events between kernels cost the device's goroutine a little.
const timeEvery = 8

// numSlots is the batches on their way at once: one being packed, two on
// the device (one queued, one waited for) and one being read back.
const numSlots = 4

func newDevRunner(dev *gpurt.Device, ix *invindex.Index, threads int) (*devRunner, error) {
	res, err := acquire(dev, ix)
	if err != nil {
		return nil, err
	}
	r := &devRunner{dev: dev, ix: ix, threads: query.Threads(threads), cpu: query.NewCPU(ix, 1), res: res,
		batchQueries: defaultBatchQueries}
	err = dev.Do(func(c *gpurt.Ctx) error {
		m, err := c.Load(batchSrc)
		if err != nil {
			return err
		}
		if r.prepare, err = m.Kernel("prepare"); err != nil {
			return err
		}
		for i, name := range []string{"compact_queries", "compact_jobs"} {
			if r.compact[i], err = m.Kernel(name); err != nil {
				return err
			}
		}
		sms := c.Info().SMs
		for b, g := range bucketGroup {
			if r.buckets[b], err = m.Kernel(fmt.Sprintf("bucket_%d", g)); err != nil {
				return err
			}
			per, err := c.Occupancy(r.buckets[b], bucketBlock(g), 0)
			if err != nil {
				return err
			}
			r.grids[b] = sms * max(per, 1)
		}
		per, err := c.Occupancy(r.compact[1], 256, 0)
		if err != nil {
			return err
		}
		r.grids[numBuckets] = sms * max(per, 1)
		for i := range r.slots {
			s := &r.slots[i]
			if s.stream, err = c.NewStream(); err != nil {
				return err
			}
			for j := range s.ev {
				if s.ev[j], err = c.NewEvent(); err != nil {
					return err
				}
			}
			for j := range s.kev {
				if s.kev[j], err = c.NewEvent(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close frees the runner's device and host memory, and the index's
// lists once no runner uses them.
func (r *devRunner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.closed = true
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			var errs []error
			for i := range r.slots {
				s := &r.slots[i]
				if s.stream != nil {
					errs = append(errs, c.Sync(s.stream))
				}
				for _, b := range []*gpurt.Buffer{&s.dUp, &s.dSorted, &s.dJobs, &s.dHead, &s.dPieces, &s.dScratch, &s.dOut} {
					errs = append(errs, c.Free(*b))
					*b = gpurt.Buffer{}
				}
				errs = append(errs, s.up.Free(c), s.down.Free(c))
				for _, e := range append(s.ev[:], s.kev[:]...) {
					errs = append(errs, c.DestroyEvent(e))
				}
				errs = append(errs, c.DestroyStream(s.stream))
			}
			return errors.Join(errs...)
		})
		r.closeError = errors.Join(err, release(r.dev, r.ix))
	})
	return r.closeError
}

// Concurrency is 1: a devRunner runs one search at a time.
func (r *devRunner) Concurrency() int { return 1 }

// Notes describes the batches run so far.
func (r *devRunner) Notes() string {
	st := r.snapshot()
	return st.describe("gpu")
}

// snapshot returns a copy of the runner's stats.
func (r *devRunner) snapshot() stats {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	st := r.stats
	st.phases = slices.Clone(st.phases)
	st.kernels = slices.Clone(st.kernels)
	return st
}

// add counts o's batches in s, for the notes of several runners in one.
func (s *stats) add(o stats) {
	s.batches += o.batches
	s.queries += o.queries
	s.host += o.host
	s.timed += o.timed
	s.upBytes += o.upBytes
	s.downBytes += o.downBytes
	s.fallback = s.fallback || o.fallback
	s.phases = append(s.phases, o.phases...)
	s.kernels = append(s.kernels, o.kernels...)
}

// describe writes the stats, each line starting with who ("gpu", "gpu
// 1").
func (s *stats) describe(who string) string {
	if s.batches == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d batches, %d queries (%d answered on the host); upload %s, download %s\n",
		who, s.batches, s.queries, s.host, bytesString(s.upBytes), bytesString(s.downBytes))
	if s.fallback {
		fmt.Fprintf(&b, "%s: Go memory could not be registered with the driver: host buffers from cuMemAllocHost\n", who)
	}
	fmt.Fprintf(&b, "%s: median batch:", who)
	for p := range numPhases {
		ts := make([]time.Duration, len(s.phases))
		for i, ph := range s.phases {
			ts[i] = ph[p]
		}
		slices.Sort(ts)
		fmt.Fprintf(&b, " %s %.0f us", phaseNames[p], float64(ts[len(ts)/2].Nanoseconds())/1e3)
	}
	if len(s.kernels) > 0 {
		fmt.Fprintf(&b, "\n%s: median kernels (%d batches timed):", who, s.timed)
		for k, name := range []string{"prepare", "bucket512", "bucket256", "bucket128", "bucket64", "bucket32", "compact"} {
			ts := make([]time.Duration, len(s.kernels))
			for i, kt := range s.kernels {
				ts[i] = kt[k]
			}
			slices.Sort(ts)
			fmt.Fprintf(&b, " %s %.0f us", name, float64(ts[len(ts)/2].Nanoseconds())/1e3)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// Search answers a batch: see query.Runner. The queries are cut into
// batches of at most r.batchQueries; each batch's host work (packing,
// reading back) overlaps the device's work on the one before or after.
func (r *devRunner) Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	if len(res) != len(qs) {
		return fmt.Errorf("query: %d results for %d queries", len(res), len(qs))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("query: Search on a closed searcher")
	}
	if len(qs) == 0 {
		return nil
	}
	err := r.search(ctx, qs, limit, countOnly, res)
	if err != nil {
		// Wait for the batches still on the device: their buffers are
		// reused by the next search.
		derr := r.dev.Do(func(c *gpurt.Ctx) error {
			var errs []error
			for i := range r.slots {
				if s := &r.slots[i]; s.busy {
					s.busy = false
					errs = append(errs, c.Sync(s.stream))
				}
			}
			return errors.Join(errs...)
		})
		if derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return err
}

func (r *devRunner) search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	nb := numBatches(len(qs), r.batchQueries)
	batch := func(k int) (lo, hi int) { return k * len(qs) / nb, (k + 1) * len(qs) / nb }
	if nb == 1 {
		s := &r.slots[0]
		if err := r.place(s, qs, 0, limit, countOnly); err != nil {
			return err
		}
		tDo := time.Now()
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			s.ph[phHandoff] = time.Since(tDo)
			if err := r.launch(c, s, limit, countOnly); err != nil {
				return err
			}
			return r.collect(c, s, countOnly)
		})
		if err != nil {
			return err
		}
		return r.finish(ctx, s, qs, limit, countOnly, res)
	}
	// Three stages on goroutines of their own, passing slots: one packs
	// the batches, this one queues each on the device and then waits for
	// the one before, and one reads the answers back.
	nslots := min(len(r.slots), nb)
	free, ready, done := make(chan *slot, nslots), make(chan *slot, nslots), make(chan *slot, nslots)
	for i := range nslots {
		free <- &r.slots[i]
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	fail := func() { stopOnce.Do(func() { close(stop) }) }
	var packErr, finishErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(ready)
		for k := range nb {
			var s *slot
			select {
			case s = <-free:
			case <-stop:
				return
			}
			if packErr = ctx.Err(); packErr == nil {
				lo, hi := batch(k)
				packErr = r.place(s, qs[lo:hi], lo, limit, countOnly)
			}
			if packErr != nil {
				fail()
				return
			}
			ready <- s
		}
	}()
	go func() {
		defer wg.Done()
		for s := range done {
			if finishErr == nil {
				if finishErr = r.finish(ctx, s, qs, limit, countOnly, res); finishErr != nil {
					fail()
				}
			}
			free <- s
		}
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var err error
	var prev *slot
	for s := range ready {
		if stopped() {
			break
		}
		tDo := time.Now()
		err = r.dev.Do(func(c *gpurt.Ctx) error {
			s.ph[phHandoff] = time.Since(tDo)
			if err := r.launch(c, s, limit, countOnly); err != nil {
				return err
			}
			if prev == nil {
				return nil
			}
			return r.collect(c, prev, countOnly)
		})
		if err != nil {
			break
		}
		if prev != nil {
			done <- prev
		}
		prev = s
	}
	// A batch still on the device after a failure is waited for by
	// Search.
	if err == nil && !stopped() {
		if err = r.dev.Do(func(c *gpurt.Ctx) error { return r.collect(c, prev, countOnly) }); err == nil {
			done <- prev
		}
	}
	if err != nil {
		fail()
	}
	close(done)
	wg.Wait()
	return cmp.Or(err, packErr, finishErr)
}

// numBatches returns the number of device batches for n queries: batches
// of at most per (and maxQueries), and at least two for more than
// 2*minSplit queries, so that their host work overlaps the device's.
func numBatches(n, per int) int {
	per = max(1, min(per, maxQueries))
	nb := (n + per - 1) / per
	if nb == 1 && n > 2*minSplit {
		nb = 2
	}
	return nb
}

// minSplit is the smallest batch a search is cut into for overlap: on the
// H100 host, a search of 31,432 queries ran faster as one batch than as
// two, one of 62,864 faster as two.
const minSplit = 16384

// bucketBlock is the block size of a bucket's kernel: four warps for the
// warp-sized groups, one group a block otherwise.
func bucketBlock(group int) int {
	if group == 32 {
		return 128
	}
	return group
}

// parts splits n items into up to r.threads parts of at least least items
// and runs fn on each, on goroutines when there are several.
func (r *devRunner) parts(n, least int, fn func(part, lo, hi int)) int {
	k := r.numParts(n, least)
	if k == 1 {
		fn(0, 0, n)
		return 1
	}
	var wg sync.WaitGroup
	for p := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p, p*n/k, (p+1)*n/k)
		}()
	}
	wg.Wait()
	return k
}

func (r *devRunner) numParts(n, least int) int { return max(1, min(r.threads, n/least)) }

// Parts of at least these many queries: packing and reading back cost
// some nanoseconds a query, starting a goroutine a few microseconds. On
// the H100 host, parts of 4Ki rather than 8Ki made searches of 31,432
// and 62,864 queries 22% faster, a million queries as fast
// (docs/QUERY.md).
const (
	packLeast   = 4096
	finishLeast = 4096
)

// place sizes a batch and packs its queries into s's upload buffer: nq+1
// starts, then the terms (none for a query of more than devMaxTerms,
// which the host answers), in parts on goroutines of their own (the
// device's goroutine, locked to its thread, would wait for them slowly).
func (r *devRunner) place(s *slot, qs []query.Query, lo, limit int, countOnly bool) error {
	t0 := time.Now()
	nq := len(qs)
	s.lo, s.nq, s.outIDs = lo, nq, 0
	// The device's capacities for this batch: every slice of every
	// query's shortest list a job (one per query, and one per SPLIT
	// elements more: pieces beyond a generous bound make queries that
	// the host answers), the ids kept.
	s.pieceCap = 2*nq + 1024
	s.scratchCap = 0
	if !countOnly {
		s.scratchCap = maxScratch
		if limit >= 0 {
			s.scratchCap = min(maxScratch, s.pieceCap*min(limit, splitLen))
		}
	}
	s.downHead = headWords + 2*nq // counts and flags
	if !countOnly {
		s.downHead = headWords + 4*nq // and the ids' places
	}
	terms, ok := r.pack(&s.scratch, qs, gpurt.Uint32s(s.up.Bytes()))
	if !ok {
		// Too small: grow (with room for more) and pack again.
		upWords := nq + 1 + terms
		if err := r.dev.Do(func(c *gpurt.Ctx) error { return s.up.Grow(c, 4*upWords+upWords) }); err != nil {
			return err
		}
		if terms, ok = r.pack(&s.scratch, qs, gpurt.Uint32s(s.up.Bytes())); !ok {
			return fmt.Errorf("query: packing %d queries: buffer of %d bytes too small", nq, s.up.Len())
		}
	}
	s.terms, s.upWords = terms, nq+1+terms
	s.host = s.host[:0]
	for _, h := range s.scratch.lists {
		s.host = append(s.host, h...)
	}
	s.ph[phPlace] = time.Since(t0)
	return nil
}

// pack writes qs to up (starts, then terms) and returns the number of
// terms packed; ok is false, and nothing packed, when up is too short.
// Each part counts its terms, all wait for each other, then each packs
// its own from its first term on. The queries with more than devMaxTerms
// terms are listed in ps.lists.
func (r *devRunner) pack(ps *partScratch, qs []query.Query, up []uint32) (terms int, ok bool) {
	nq := len(qs)
	k := r.numParts(nq, packLeast)
	ps.reset(k)
	count := func(p int) {
		n := 0
		for _, q := range qs[p*nq/k : (p+1)*nq/k] {
			if len(q.Terms) <= devMaxTerms {
				n += len(q.Terms)
			}
		}
		ps.counts[p] = n
	}
	// fill packs part p once every part has counted; it reports whether
	// the buffer holds the batch.
	fill := func(p int) bool {
		at, total := 0, 0
		for i, n := range ps.counts {
			if i < p {
				at += n
			}
			total += n
		}
		if len(up) < nq+1+total {
			return false
		}
		starts, ts := up[:nq+1], up[nq+1:nq+1+total]
		host := ps.lists[p][:0]
		// Queries whose terms follow each other within one slice's
		// capacity (xsect query reads a file into one array) are copied
		// as one run.
		var run []uint32 // the current run's source: run[:n]
		var runEnd uintptr
		runAt, n := at, 0
		for i := p * nq / k; i < (p+1)*nq/k; i++ {
			starts[i] = uint32(at)
			t := qs[i].Terms
			if len(t) > devMaxTerms {
				host = append(host, i)
				continue
			}
			if len(t) == 0 {
				continue
			}
			if ptr := uintptr(unsafe.Pointer(unsafe.SliceData(t))); ptr != runEnd || n+len(t) > cap(run) {
				copy(ts[runAt:runAt+n], run[:n])
				run, runAt, n = t, at, 0
			}
			n += len(t)
			at += len(t)
			runEnd = uintptr(unsafe.Pointer(unsafe.SliceData(run))) + 4*uintptr(n)
		}
		copy(ts[runAt:runAt+n], run[:n])
		ps.lists[p] = host
		if p == k-1 {
			starts[nq] = uint32(total)
		}
		return true
	}
	if k == 1 {
		count(0)
		return ps.counts[0], fill(0)
	}
	var counted, done sync.WaitGroup
	counted.Add(k)
	done.Add(k)
	fits := make([]bool, k)
	for p := range k {
		go func() {
			defer done.Done()
			count(p)
			counted.Done()
			counted.Wait()
			fits[p] = fill(p)
		}()
	}
	done.Wait()
	for _, n := range ps.counts {
		terms += n
	}
	return terms, !slices.Contains(fits, false)
}

type need struct {
	b *gpurt.Buffer
	n int
}

func (s *slot) needs() []need {
	return []need{
		{&s.dUp, 4 * s.upWords}, {&s.dSorted, termBytes * s.terms}, {&s.dJobs, jobBytes * numBuckets * s.pieceCap},
		{&s.dHead, 4 * (headWords + qArrays*s.nq)}, {&s.dPieces, 3 * 4 * s.pieceCap}, {&s.dScratch, 4 * s.scratchCap},
		{&s.dOut, 4 * s.scratchCap},
	}
}

// grow makes s's device buffers and download buffer large enough for its
// batch.
func (s *slot) grow(c *gpurt.Ctx) error {
	for _, x := range s.needs() {
		n := max(x.n, 16)
		if x.b.Len() >= n {
			continue
		}
		if err := c.Sync(s.stream); err != nil {
			return err
		}
		if err := c.Grow(x.b, n); err != nil {
			return err
		}
	}
	if n := 4 * (s.downHead + s.scratchCap); s.down.Len() < n {
		if err := s.down.Grow(c, n+n/4); err != nil {
			return err
		}
	}
	return nil
}

// finish reads a collected batch's answers into res (in parts on
// goroutines), answers on the host the queries the device did not, and
// records the batch's statistics.
func (r *devRunner) finish(ctx context.Context, s *slot, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	t0 := time.Now()
	nq := s.nq
	qs, res = qs[s.lo:s.lo+nq], res[s.lo:s.lo+nq]
	words := gpurt.Uint32s(s.down.Bytes())
	head := words[headWords:s.downHead]
	ids := words[s.downHead : s.downHead+s.outIDs]
	counts, flags := head[qCount*nq:(qCount+1)*nq], head[qFlag*nq:(qFlag+1)*nq]
	k := r.numParts(nq, finishLeast)
	s.scratch.reset(k)
	flagged := s.scratch.lists
	r.parts(nq, finishLeast, func(p, lo, hi int) {
		fb := flagged[p][:0]
		if countOnly {
			for i := lo; i < hi; i++ {
				res[i] = query.Result{Count: int(counts[i]), IDs: nil}
				if flags[i] != 0 {
					fb = append(fb, i)
				}
			}
		} else {
			offs, ns := head[qOff*nq:(qOff+1)*nq], head[qN*nq:(qN+1)*nq]
			// The ids that do not fit in their result's memory share one
			// allocation for the part, not one each (a server's fresh
			// results hold none).
			need := 0
			for i := lo; i < hi; i++ {
				if flags[i] == 0 && int(ns[i]) > cap(res[i].IDs) {
					need += int(ns[i])
				}
			}
			var slab []uint32
			if need > 0 {
				slab = make([]uint32, 0, need)
			}
			for i := lo; i < hi; i++ {
				rr := &res[i]
				rr.Count = int(counts[i])
				rr.IDs = rr.IDs[:0]
				if flags[i] != 0 {
					fb = append(fb, i)
				} else if n := ns[i]; n > 0 {
					at := offs[i]
					if int(n) <= cap(rr.IDs) {
						rr.IDs = append(rr.IDs, ids[at:at+n]...)
					} else {
						k := len(slab)
						slab = append(slab, ids[at:at+n]...)
						rr.IDs = slab[k:len(slab):len(slab)] // capped: appending to it cannot reach the next
					}
				}
			}
		}
		flagged[p] = fb
	})
	host := len(s.host)
	answer := func(i int) error { return r.cpu.Search(ctx, qs[i:i+1], limit, countOnly, res[i:i+1]) }
	for _, i := range s.host {
		if err := answer(i); err != nil {
			return err
		}
	}
	for _, fb := range flagged {
		for _, i := range fb {
			if len(qs[i].Terms) > devMaxTerms {
				continue // answered above
			}
			if err := answer(i); err != nil {
				return err
			}
			host++
		}
	}
	s.ph[phFinish] = time.Since(t0)
	r.statsMu.Lock()
	st := &r.stats
	if len(st.phases) < maxPhases {
		st.phases = append(st.phases, s.ph)
	} else {
		st.phases[st.batches%maxPhases] = s.ph
	}
	if s.timed {
		if len(st.kernels) < maxPhases {
			st.kernels = append(st.kernels, s.kt)
		} else {
			st.kernels[st.timed%maxPhases] = s.kt
		}
		st.timed++
	}
	st.batches++
	st.queries += nq
	st.host += host
	st.upBytes += 4 * int64(s.upWords)
	st.downBytes += 4 * int64(s.downHead+s.outIDs)
	st.fallback = st.fallback || s.up.Fallback()
	r.statsMu.Unlock()
	return nil
}

// kernelLimit is the kernels' limit: -1 for all ids, as is any limit
// beyond an int32 (no query has more matches than 2^32).
func kernelLimit(limit int) int32 {
	if limit < 0 || limit > math.MaxInt32 {
		return -1
	}
	return int32(limit)
}

// launch queues a placed batch on its slot's stream: the upload, the
// kernels and the copy of the header back. It does not wait.
func (r *devRunner) launch(c *gpurt.Ctx, s *slot, limit int, countOnly bool) error {
	t0 := time.Now()
	defer func() { s.ph[phLaunch] = time.Since(t0) }()
	if err := s.grow(c); err != nil {
		return err
	}
	st := s.stream
	if err := c.Record(s.ev[0], st); err != nil {
		return err
	}
	if err := c.CopyToDeviceAsync(s.dUp.Slice(0, 4*s.upWords), s.up.Bytes()[:4*s.upWords], st); err != nil {
		return err
	}
	if err := c.Memset32(s.dHead.Slice(0, 4*headWords), 0, st); err != nil {
		return err
	}
	if err := c.Record(s.ev[1], st); err != nil {
		return err
	}
	s.busy = true
	co := int32(0)
	if countOnly {
		co = 1
	}
	nq := s.nq
	qterms := s.dUp // never read when there are no terms
	if s.terms > 0 {
		qterms = s.dUp.Slice(4*(nq+1), 4*s.terms)
	}
	args := []any{
		s.dUp, qterms, r.res.table, uint32(r.ix.Terms()), r.res.postings, r.res.gbitmaps,
		uint32(r.ix.BitmapWords()), uint32(nq), kernelLimit(limit), co, s.dSorted, s.dJobs, uint32(s.pieceCap), s.dHead,
		s.dPieces, uint32(s.pieceCap), s.dScratch, uint32(s.scratchCap), s.dOut,
	}
	s.timed = r.launches%timeEvery == 0
	r.launches++
	// mark records the end of kernel i, on the batches timed.
	mark := func(i int) error {
		if !s.timed {
			return nil
		}
		return c.Record(s.kev[i], st)
	}
	if err := c.Launch(r.prepare, gpurt.Dim{X: (nq + 255) / 256}, gpurt.Dim{X: 256}, 0, st, args...); err != nil {
		return err
	}
	if err := mark(0); err != nil {
		return err
	}
	// The biggest jobs first, so that the small ones fill the tail.
	for b := numBuckets - 1; b >= 0; b-- {
		if err := c.Launch(r.buckets[b], gpurt.Dim{X: r.grids[b]}, gpurt.Dim{X: bucketBlock(bucketGroup[b])}, 0, st, args...); err != nil {
			return err
		}
		if err := mark(numBuckets - b); err != nil {
			return err
		}
	}
	if !countOnly {
		for _, k := range r.compact {
			if err := c.Launch(k, gpurt.Dim{X: r.grids[numBuckets]}, gpurt.Dim{X: 256}, 0, st, args...); err != nil {
				return err
			}
		}
		if err := mark(numBuckets + 1); err != nil {
			return err
		}
	}
	if err := c.Record(s.ev[2], st); err != nil {
		return err
	}
	if err := c.CopyToHostAsync(s.down.Bytes()[:4*s.downHead], s.dHead.Slice(0, 4*s.downHead), st); err != nil {
		return err
	}
	if countOnly {
		return c.Record(s.ev[3], st)
	}
	return nil
}

// collect waits for a launched batch, copies its ids back (how many is
// known once its header is back) and reads the device's timings.
func (r *devRunner) collect(c *gpurt.Ctx, s *slot, countOnly bool) error {
	t0 := time.Now()
	st := s.stream
	if err := c.Sync(st); err != nil {
		return err
	}
	if !countOnly {
		down := s.down.Bytes()
		n := int(gpurt.Uint32s(down)[cOut])
		if n > s.scratchCap {
			return fmt.Errorf("query: the device wrote %d ids, more than the %d kept", n, s.scratchCap)
		}
		s.outIDs = n
		if n > 0 {
			if err := c.CopyToHostAsync(down[4*s.downHead:4*(s.downHead+n)], s.dOut.Slice(0, 4*n), st); err != nil {
				return err
			}
		}
		if err := c.Record(s.ev[3], st); err != nil {
			return err
		}
		if err := c.Sync(st); err != nil {
			return err
		}
	}
	s.busy = false
	s.ph[phWait] = time.Since(t0)
	var err error
	for i := range 3 {
		if s.ph[phUpload+i], err = c.Elapsed(s.ev[i], s.ev[i+1]); err != nil {
			return err
		}
	}
	if !s.timed {
		return nil
	}
	prev := s.ev[1]
	for i, e := range s.kev {
		if countOnly && i == len(s.kev)-1 {
			s.kt[i] = 0
			break
		}
		if s.kt[i], err = c.Elapsed(prev, e); err != nil {
			return err
		}
		prev = e
	}
	return nil
}
