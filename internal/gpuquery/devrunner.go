package gpuquery

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/conj"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/invindex"
)

//go:embed kernels/batch.cu
var batchSource string

var batchSrc = gpurt.Source{Name: "batch.cu", Code: batchSource}

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
type devRunner struct {
	dev     *gpurt.Device
	ix      *invindex.Index
	threads int
	cpu     *conj.CPU // for the queries the host answers
	res     *resident

	mu sync.Mutex // one batch at a time

	// Owned by the device's goroutine.
	prepare        *gpurt.Kernel
	compact        [2]*gpurt.Kernel // compact_queries, compact_jobs
	buckets        [numBuckets]*gpurt.Kernel
	grids          [numBuckets + 1]int // persistent grids: the buckets', compact's
	stream         *gpurt.Stream
	ev             [4]*gpurt.Event              // start, uploaded, kernels done, end
	kev            [numBuckets + 2]*gpurt.Event // after prepare, each bucket (largest first), compact
	dUp, dSorted   gpurt.Buffer
	dJobs, dHead   gpurt.Buffer
	dPieces        gpurt.Buffer
	dScratch, dOut gpurt.Buffer
	up, down       gpurt.Pinned
	closed         bool

	statsMu    sync.Mutex
	stats      stats
	closeOnce  sync.Once
	closeError error

	// Reused from batch to batch.
	starts   []int // each chunk's first term
	fallback []int
}

func newDevRunner(dev *gpurt.Device, ix *invindex.Index, threads int) (*devRunner, error) {
	res, err := acquire(dev, ix)
	if err != nil {
		return nil, err
	}
	r := &devRunner{dev: dev, ix: ix, threads: conj.Threads(threads), cpu: conj.NewCPU(ix, 1), res: res}
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
		if r.stream, err = c.NewStream(); err != nil {
			return err
		}
		for i := range r.ev {
			if r.ev[i], err = c.NewEvent(); err != nil {
				return err
			}
		}
		for i := range r.kev {
			if r.kev[i], err = c.NewEvent(); err != nil {
				return err
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

// Close frees the runner's device and pinned memory, and the index's
// lists once no runner uses them.
func (r *devRunner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.closed = true
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			errs := []error{c.Sync(r.stream)}
			for _, b := range []*gpurt.Buffer{&r.dUp, &r.dSorted, &r.dJobs, &r.dHead, &r.dPieces, &r.dScratch, &r.dOut} {
				errs = append(errs, c.Free(*b))
				*b = gpurt.Buffer{}
			}
			errs = append(errs, r.up.Free(c), r.down.Free(c))
			for _, e := range append(r.ev[:], r.kev[:]...) {
				errs = append(errs, c.DestroyEvent(e))
			}
			return errors.Join(append(errs, c.DestroyStream(r.stream))...)
		})
		r.closeError = errors.Join(err, release(r.dev, r.ix))
	})
	return r.closeError
}

// Notes describes the batches run so far.
func (r *devRunner) Notes() string {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	return r.stats.String()
}

func (s *stats) String() string {
	if s.batches == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gpu: %d batches, %d queries (%d answered on the host); upload %s, download %s\n",
		s.batches, s.queries, s.host, bytesString(s.upBytes), bytesString(s.downBytes))
	b.WriteString("gpu: median batch:")
	for p := range numPhases {
		ts := make([]time.Duration, len(s.phases))
		for i, ph := range s.phases {
			ts[i] = ph[p]
		}
		slices.Sort(ts)
		fmt.Fprintf(&b, " %s %.0f us", phaseNames[p], float64(ts[len(ts)/2].Nanoseconds())/1e3)
	}
	if len(s.kernels) > 0 {
		b.WriteString("\ngpu: median kernels:")
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

// Search answers a batch: see conj.Runner.
func (r *devRunner) Search(ctx context.Context, qs []conj.Query, limit int, countOnly bool, res []conj.Result) error {
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

// bucketBlock is the block size of a bucket's kernel: four warps for the
// warp-sized groups, one group a block otherwise.
func bucketBlock(group int) int {
	if group == 32 {
		return 128
	}
	return group
}

// parts splits n items into up to r.threads parts of at least min items
// and runs fn on each, on goroutines when there are several.
func (r *devRunner) parts(n, least int, fn func(part, lo, hi int)) int {
	k := max(1, min(r.threads, n/least))
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

// batch answers at most maxQueries queries.
func (r *devRunner) batch(ctx context.Context, qs []conj.Query, limit int, countOnly bool, res []conj.Result) error {
	t0 := time.Now()
	var ph [numPhases]time.Duration
	nq := len(qs)
	if nq == 0 {
		return nil
	}
	// The terms of each part of the batch, for packing in parallel.
	k := max(1, min(r.threads, nq/8192))
	r.starts = r.starts[:0]
	terms := 0
	for p := range k {
		r.starts = append(r.starts, terms)
		for _, q := range qs[p*nq/k : (p+1)*nq/k] {
			if len(q.Terms) <= devMaxTerms {
				terms += len(q.Terms)
			}
		}
	}
	// The device's capacities for this batch: every slice of every
	// query's shortest list a job (one per query, and one per SPLIT
	// elements more: pieces beyond a generous bound make queries that
	// the host answers), the ids kept.
	pieceCap := 2*nq + 1024
	scratchCap := 0
	if !countOnly {
		scratchCap = maxScratch
		if limit >= 0 {
			scratchCap = min(maxScratch, pieceCap*min(limit, splitLen))
		}
	}
	upWords := nq + 1 + terms
	headLen := headWords + qArrays*nq
	downHead := headWords + 2*nq // counts and flags
	if !countOnly {
		downHead = headWords + 4*nq // and the ids' places
	}
	ph[phPrepare] = time.Since(t0)
	tDo := time.Now()
	if r.small(upWords, terms, pieceCap, headLen, scratchCap, downHead) {
		err := r.dev.Do(func(c *gpurt.Ctx) error { return r.grow(c, upWords, terms, pieceCap, headLen, scratchCap, downHead) })
		if err != nil {
			return err
		}
	}
	// Packed by goroutines of their own: the device's goroutine, locked
	// to its thread, waits for them slowly.
	tPlace := time.Now()
	r.pack(qs, gpurt.Uint32s(r.up.Bytes())[:upWords], k)
	ph[phPlace] = time.Since(tPlace)
	var outIDs int
	var kt [numBuckets + 2]time.Duration
	tDo = time.Now()
	err := r.dev.Do(func(c *gpurt.Ctx) error {
		ph[phHandoff] = time.Since(tDo)
		var err error
		outIDs, err = r.run(c, nq, terms, upWords, pieceCap, scratchCap, downHead, limit, countOnly)
		if err != nil {
			return err
		}
		for i := range 3 {
			if ph[phUpload+i], err = c.Elapsed(r.ev[i], r.ev[i+1]); err != nil {
				return err
			}
		}
		prev := r.ev[1]
		for i, e := range r.kev {
			if countOnly && i == len(r.kev)-1 {
				break
			}
			if kt[i], err = c.Elapsed(prev, e); err != nil {
				return err
			}
			prev = e
		}
		return nil
	})
	if err != nil {
		return err
	}
	t2 := time.Now()
	words := gpurt.Uint32s(r.down.Bytes())
	head := words[headWords:downHead]
	ids := words[downHead : downHead+outIDs]
	fallbacks := make([][]int, max(1, min(r.threads, nq/2048)))
	r.parts(nq, 2048, func(p, lo, hi int) {
		var fb []int
		for i := lo; i < hi; i++ {
			rr := &res[i]
			if len(qs[i].Terms) > devMaxTerms || head[qFlag*nq+i] != 0 {
				fb = append(fb, i)
				continue
			}
			rr.Count = int(head[qCount*nq+i])
			if countOnly {
				rr.IDs = nil
				continue
			}
			rr.IDs = rr.IDs[:0]
			if n := head[qN*nq+i]; n > 0 {
				at := head[qOff*nq+i]
				rr.IDs = append(rr.IDs, ids[at:at+n]...)
			}
		}
		fallbacks[p] = fb
	})
	host := 0
	for _, fb := range fallbacks {
		for _, i := range fb {
			if err := r.cpu.Search(ctx, qs[i:i+1], limit, countOnly, res[i:i+1]); err != nil {
				return err
			}
			host++
		}
	}
	ph[phFinish] = time.Since(t2)
	r.statsMu.Lock()
	s := &r.stats
	if len(s.phases) < maxPhases {
		s.phases = append(s.phases, ph)
		s.kernels = append(s.kernels, kt)
	} else {
		s.phases[s.batches%maxPhases] = ph
		s.kernels[s.batches%maxPhases] = kt
	}
	s.batches++
	s.queries += nq
	s.host += host
	s.upBytes += 4 * int64(upWords)
	s.downBytes += 4 * int64(downHead+outIDs)
	r.statsMu.Unlock()
	return nil
}

// pack writes the batch's queries to the upload words: nq+1 starts, then
// the terms (none for a query of more than devMaxTerms, which the host
// answers), in k parts whose first terms are r.starts.
func (r *devRunner) pack(qs []conj.Query, up []uint32, k int) {
	nq := len(qs)
	starts, terms := up[:nq+1], up[nq+1:]
	work := func(p int) {
		at := r.starts[p]
		for i := p * nq / k; i < (p+1)*nq/k; i++ {
			starts[i] = uint32(at)
			if t := qs[i].Terms; len(t) <= devMaxTerms {
				at += copy(terms[at:], t)
			}
		}
	}
	if k == 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		for p := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(p)
			}()
		}
		wg.Wait()
	}
	starts[nq] = uint32(len(terms))
}

// small reports whether a buffer is too small for a batch.
func (r *devRunner) small(upWords, terms, pieceCap, headLen, scratchCap, downHead int) bool {
	for _, x := range r.needs(upWords, terms, pieceCap, headLen, scratchCap) {
		if x.b.Len() < max(x.n, 16) {
			return true
		}
	}
	return r.up.Len() < 4*upWords || r.down.Len() < 4*(downHead+scratchCap)
}

type need struct {
	b *gpurt.Buffer
	n int
}

func (r *devRunner) needs(upWords, terms, pieceCap, headLen, scratchCap int) []need {
	return []need{
		{&r.dUp, 4 * upWords}, {&r.dSorted, termBytes * terms}, {&r.dJobs, jobBytes * numBuckets * pieceCap},
		{&r.dHead, 4 * headLen}, {&r.dPieces, 3 * 4 * pieceCap}, {&r.dScratch, 4 * scratchCap}, {&r.dOut, 4 * scratchCap},
	}
}

// grow makes the device and pinned buffers large enough for a batch.
func (r *devRunner) grow(c *gpurt.Ctx, upWords, terms, pieceCap, headLen, scratchCap, downHead int) error {
	need := func(b *gpurt.Buffer, n int) error {
		n = max(n, 16)
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
		nb, err := c.Alloc(n + n/4)
		if err != nil {
			return err
		}
		*b = nb
		return nil
	}
	for _, x := range r.needs(upWords, terms, pieceCap, headLen, scratchCap) {
		if err := need(x.b, x.n); err != nil {
			return err
		}
	}
	if r.up.Len() < 4*upWords {
		if err := r.up.Grow(c, 4*upWords+upWords); err != nil {
			return err
		}
	}
	if n := 4 * (downHead + scratchCap); r.down.Len() < n {
		if err := r.down.Grow(c, n+n/4); err != nil {
			return err
		}
	}
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

// run uploads the batch, runs the kernels and copies the header (and the
// ids) back into r.down; it returns the number of ids.
func (r *devRunner) run(c *gpurt.Ctx, nq, terms, upWords, pieceCap, scratchCap, downHead, limit int, countOnly bool) (int, error) {
	s := r.stream
	if err := c.Record(r.ev[0], s); err != nil {
		return 0, err
	}
	if err := c.CopyToDeviceAsync(r.dUp.Slice(0, 4*upWords), r.up.Bytes()[:4*upWords], s); err != nil {
		return 0, err
	}
	if err := c.Memset32(r.dHead.Slice(0, 4*headWords), 0, s); err != nil {
		return 0, err
	}
	if err := c.Record(r.ev[1], s); err != nil {
		return 0, err
	}
	co := int32(0)
	if countOnly {
		co = 1
	}
	qterms := r.dUp // never read when there are no terms
	if terms > 0 {
		qterms = r.dUp.Slice(4*(nq+1), 4*terms)
	}
	args := []any{
		r.dUp, qterms, r.res.table, uint32(r.ix.Terms()), r.res.postings, r.res.gbitmaps,
		uint32(r.ix.BitmapWords()), uint32(nq), kernelLimit(limit), co, r.dSorted, r.dJobs, uint32(pieceCap), r.dHead,
		r.dPieces, uint32(pieceCap), r.dScratch, uint32(scratchCap), r.dOut,
	}
	if err := c.Launch(r.prepare, gpurt.Dim{X: (nq + 255) / 256}, gpurt.Dim{X: 256}, 0, s, args...); err != nil {
		return 0, err
	}
	if err := c.Record(r.kev[0], s); err != nil {
		return 0, err
	}
	// The biggest jobs first, so that the small ones fill the tail.
	for b := numBuckets - 1; b >= 0; b-- {
		if err := c.Launch(r.buckets[b], gpurt.Dim{X: r.grids[b]}, gpurt.Dim{X: bucketBlock(bucketGroup[b])}, 0, s, args...); err != nil {
			return 0, err
		}
		if err := c.Record(r.kev[numBuckets-b], s); err != nil {
			return 0, err
		}
	}
	if !countOnly {
		for _, k := range r.compact {
			if err := c.Launch(k, gpurt.Dim{X: r.grids[numBuckets]}, gpurt.Dim{X: 256}, 0, s, args...); err != nil {
				return 0, err
			}
		}
		if err := c.Record(r.kev[numBuckets+1], s); err != nil {
			return 0, err
		}
	}
	if err := c.Record(r.ev[2], s); err != nil {
		return 0, err
	}
	down := r.down.Bytes()
	if err := c.CopyToHostAsync(down[:4*downHead], r.dHead.Slice(0, 4*downHead), s); err != nil {
		return 0, err
	}
	n := 0
	if !countOnly {
		if err := c.Sync(s); err != nil {
			return 0, err
		}
		n = int(gpurt.Uint32s(down)[cOut])
		if n > scratchCap {
			return 0, fmt.Errorf("query: the device wrote %d ids, more than the %d kept", n, scratchCap)
		}
		if n > 0 {
			if err := c.CopyToHostAsync(down[4*downHead:4*(downHead+n)], r.dOut.Slice(0, 4*n), s); err != nil {
				return 0, err
			}
		}
	}
	if err := c.Record(r.ev[3], s); err != nil {
		return 0, err
	}
	return n, c.Sync(s)
}
