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
	maxScratch = 1 << 24
)

// devRunner is the GPU engine's Runner: queries go to the device as they
// are, their terms' ids, and the device prepares them (kernels/batch.cu).
// A large Search is cut into sub-batches that run through two slots, each
// with its own stream and buffers: while the device answers one, the host
// packs the next and reads the answers of the one before.
type devRunner struct {
	dev     *gpurt.Device
	ix      *invindex.Index
	threads int
	cpu     *conj.CPU // for the queries the host answers
	res     *resident

	mu sync.Mutex // one Search at a time

	// Set when opened, then only read.
	prepare *gpurt.Kernel
	compact [2]*gpurt.Kernel // compact_queries, compact_jobs
	buckets [numBuckets]*gpurt.Kernel
	grids   [numBuckets + 1]int // persistent grids: the buckets', the compaction's
	slots   [2]*slot

	closed     bool
	statsMu    sync.Mutex
	stats      stats
	closeOnce  sync.Once
	closeError error
}

// slot is one sub-batch's buffers and stream, and the sub-batch in
// flight. Its device resources are touched only inside Do.
type slot struct {
	stream         *gpurt.Stream
	ev             [4]*gpurt.Event              // start, uploaded, kernels done, end
	kev            [numBuckets + 2]*gpurt.Event // after prepare, each bucket (largest first), the compaction
	dUp, dSorted   gpurt.Buffer
	dJobs, dHead   gpurt.Buffer
	dPieces        gpurt.Buffer
	dScratch, dOut gpurt.Buffer
	up, down       gpurt.Pinned

	// The sub-batch in flight.
	pending                                           bool
	qs                                                []conj.Query
	res                                               []conj.Result
	limit                                             int
	countOnly, bounded                                bool // bounded: the ids come back in one copy of the whole out buffer
	nq, terms, pieceCap, scratchCap, outCap, downHead int
	ids                                               int
	fallback                                          []int
	t0                                                time.Time
	ph                                                [numPhases]time.Duration
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
		for i := range r.slots {
			s := &slot{}
			r.slots[i] = s
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

// bucketBlock is the block size of a bucket's kernel: four warps for the
// warp-sized groups, one group a block otherwise.
func bucketBlock(group int) int {
	if group == 32 {
		return 128
	}
	return group
}

// Close frees the runner's device and pinned memory, and the index's
// lists once no runner uses them.
func (r *devRunner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.closed = true
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			var errs []error
			for _, s := range r.slots {
				if s == nil {
					continue
				}
				errs = append(errs, c.Sync(s.stream))
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

// Sub-batches: a Search of at least 2*minSub queries is cut into parts of
// about a quarter of it, at least minSub, so that the host's work on one
// overlaps the device's on another.
const minSub = 8192

// boundedIDs: when a sub-batch keeps at most this many ids (a small
// limit), its whole out buffer comes back with the header in one pass,
// and sub-batches overlap; otherwise the header comes first and then
// exactly the ids, and the sub-batches run one after the other.
const boundedIDs = 1 << 20

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
	n := len(qs)
	sub := maxQueries
	if n >= 2*minSub {
		sub = min(maxQueries, max(minSub, (n+3)/4))
	}
	var err error
	k := 0
	for lo := 0; lo < n && err == nil; lo += sub {
		if err = ctx.Err(); err != nil {
			break
		}
		hi := min(lo+sub, n)
		s := r.slots[k%2]
		k++
		if s.pending {
			if err = r.complete(ctx, s); err != nil {
				break
			}
		}
		if err = r.stage(s, qs[lo:hi], res[lo:hi], limit, countOnly); err != nil {
			break
		}
		if !s.bounded {
			err = r.complete(ctx, s)
		}
	}
	// The slots in flight, in order.
	for i := range 2 {
		s := r.slots[(k+i)%2]
		if s.pending {
			if e := r.complete(ctx, s); err == nil {
				err = e
			}
		}
	}
	return err
}

// stage packs a sub-batch into s's pinned buffer and queues its upload,
// kernels and download on s's stream.
func (r *devRunner) stage(s *slot, qs []conj.Query, res []conj.Result, limit int, countOnly bool) error {
	s.t0 = time.Now()
	s.ph = [numPhases]time.Duration{}
	nq := len(qs)
	s.qs, s.res, s.limit, s.countOnly, s.nq = qs, res, limit, countOnly, nq
	// The device's capacities: every slice of every query's shortest list
	// a job (one per query, and one per SPLIT elements more: slices
	// beyond a generous bound make queries that the host answers), the
	// ids kept.
	s.pieceCap = 2*nq + 1024
	s.scratchCap = 0
	if !countOnly {
		s.scratchCap = maxScratch
		if limit >= 0 {
			s.scratchCap = min(maxScratch, s.pieceCap*min(limit, splitLen))
		}
	}
	// out holds at most limit ids a query.
	s.outCap = s.scratchCap
	if limit >= 0 {
		s.outCap = min(s.scratchCap, nq*min(limit, maxScratch))
	}
	s.bounded = countOnly || s.outCap <= boundedIDs
	s.downHead = headWords + 2*nq // counts and flags
	if !countOnly {
		s.downHead = headWords + 4*nq // and the ids' places
	}
	// Pinned memory for the worst case: every query of devMaxTerms terms.
	maxUp := 4 * (nq + 1 + nq*devMaxTerms)
	maxDown := 4 * (s.downHead + s.outCap)
	if s.up.Len() < maxUp || s.down.Len() < maxDown {
		err := r.dev.Do(func(c *gpurt.Ctx) error {
			if err := s.up.Grow(c, maxUp+maxUp/4); err != nil {
				return err
			}
			return s.down.Grow(c, maxDown+maxDown/4)
		})
		if err != nil {
			return err
		}
	}
	s.ph[phPrepare] = time.Since(s.t0)
	t := time.Now()
	s.terms, s.fallback = pack(qs, gpurt.Uint32s(s.up.Bytes()), s.fallback[:0])
	s.ph[phPlace] = time.Since(t)
	tDo := time.Now()
	err := r.dev.Do(func(c *gpurt.Ctx) error {
		s.ph[phHandoff] = time.Since(tDo)
		if err := s.grow(c, nq, s.terms, s.pieceCap, s.scratchCap, s.outCap); err != nil {
			return err
		}
		return r.enqueue(c, s)
	})
	if err != nil {
		r.dev.Do(func(c *gpurt.Ctx) error { return c.Sync(s.stream) })
		return err
	}
	s.pending = true
	return nil
}

// pack writes queries to up: nq+1 starts, then the terms (none for a
// query of more than devMaxTerms, whose index goes to fallback instead:
// the host answers it). It returns the number of terms.
func pack(qs []conj.Query, up []uint32, fallback []int) (int, []int) {
	nq := len(qs)
	starts, terms := up[:nq+1:nq+1], up[nq+1:]
	at := 0
	for i, q := range qs {
		starts[i] = uint32(at)
		t := q.Terms
		if len(t) > devMaxTerms {
			fallback = append(fallback, i)
			continue
		}
		dst := terms[at : at+len(t)]
		for j, x := range t {
			dst[j] = x
		}
		at += len(t)
	}
	starts[nq] = uint32(at)
	return at, fallback
}

// grow makes s's device buffers large enough for a sub-batch.
func (s *slot) grow(c *gpurt.Ctx, nq, terms, pieceCap, scratchCap, outCap int) error {
	for _, x := range []struct {
		b *gpurt.Buffer
		n int
	}{
		{&s.dUp, 4 * (nq + 1 + terms)}, {&s.dSorted, termBytes * terms}, {&s.dJobs, jobBytes * numBuckets * pieceCap},
		{&s.dHead, 4 * (headWords + qArrays*nq)}, {&s.dPieces, 3 * 4 * pieceCap}, {&s.dScratch, 4 * scratchCap}, {&s.dOut, 4 * outCap},
	} {
		n := max(x.n, 16)
		if x.b.Len() >= n {
			continue
		}
		if err := c.Sync(s.stream); err != nil {
			return err
		}
		if err := c.Free(*x.b); err != nil {
			return err
		}
		*x.b = gpurt.Buffer{}
		nb, err := c.Alloc(n + n/4)
		if err != nil {
			return err
		}
		*x.b = nb
	}
	return nil
}

// enqueue queues s's sub-batch: the upload, the kernels, the download of
// the header (and, bounded, of the whole out buffer).
func (r *devRunner) enqueue(c *gpurt.Ctx, s *slot) error {
	st := s.stream
	nq, terms := s.nq, s.terms
	upWords := nq + 1 + terms
	if err := c.Record(s.ev[0], st); err != nil {
		return err
	}
	if err := c.CopyToDeviceAsync(s.dUp.Slice(0, 4*upWords), s.up.Bytes()[:4*upWords], st); err != nil {
		return err
	}
	if err := c.Memset32(s.dHead.Slice(0, 4*headWords), 0, st); err != nil {
		return err
	}
	if err := c.Record(s.ev[1], st); err != nil {
		return err
	}
	co := int32(0)
	if s.countOnly {
		co = 1
	}
	qterms := s.dUp // never read when there are no terms
	if terms > 0 {
		qterms = s.dUp.Slice(4*(nq+1), 4*terms)
	}
	args := []any{
		s.dUp, qterms, r.res.table, uint32(r.ix.Terms()), r.res.postings, r.res.gbitmaps,
		uint32(r.ix.BitmapWords()), uint32(nq), kernelLimit(s.limit), co, s.dSorted, s.dJobs, uint32(s.pieceCap), s.dHead,
		s.dPieces, uint32(s.pieceCap), s.dScratch, uint32(s.scratchCap), s.dOut,
	}
	if err := c.Launch(r.prepare, gpurt.Dim{X: (nq + 255) / 256}, gpurt.Dim{X: 256}, 0, st, args...); err != nil {
		return err
	}
	if err := c.Record(s.kev[0], st); err != nil {
		return err
	}
	// The biggest jobs first, so that the small ones fill the tail.
	for b := numBuckets - 1; b >= 0; b-- {
		if err := c.Launch(r.buckets[b], gpurt.Dim{X: r.grids[b]}, gpurt.Dim{X: bucketBlock(bucketGroup[b])}, 0, st, args...); err != nil {
			return err
		}
		if err := c.Record(s.kev[numBuckets-b], st); err != nil {
			return err
		}
	}
	if !s.countOnly {
		for _, k := range r.compact {
			if err := c.Launch(k, gpurt.Dim{X: r.grids[numBuckets]}, gpurt.Dim{X: 256}, 0, st, args...); err != nil {
				return err
			}
		}
		if err := c.Record(s.kev[numBuckets+1], st); err != nil {
			return err
		}
	}
	if err := c.Record(s.ev[2], st); err != nil {
		return err
	}
	down := s.down.Bytes()
	if err := c.CopyToHostAsync(down[:4*s.downHead], s.dHead.Slice(0, 4*s.downHead), st); err != nil {
		return err
	}
	if !s.countOnly && s.bounded && s.outCap > 0 {
		if err := c.CopyToHostAsync(down[4*s.downHead:4*(s.downHead+s.outCap)], s.dOut.Slice(0, 4*s.outCap), st); err != nil {
			return err
		}
	}
	return c.Record(s.ev[3], st)
}

// kernelLimit is the kernels' limit: -1 for all ids, as is any limit
// beyond an int (no query has more matches than 2^32).
func kernelLimit(limit int) int32 {
	if limit < 0 || limit > math.MaxInt32 {
		return -1
	}
	return int32(limit)
}

// complete waits for s's sub-batch, copies back the ids when they were
// not yet, and fills its results.
func (r *devRunner) complete(ctx context.Context, s *slot) error {
	s.pending = false
	var kt [numBuckets + 2]time.Duration
	tDo := time.Now()
	err := r.dev.Do(func(c *gpurt.Ctx) error {
		handoff := time.Since(tDo)
		if err := c.Sync(s.stream); err != nil {
			return err
		}
		s.ph[phHandoff] += handoff
		down := s.down.Bytes()
		s.ids = 0
		if !s.countOnly {
			s.ids = int(gpurt.Uint32s(down)[cOut])
			if s.ids > s.outCap {
				return fmt.Errorf("query: the device wrote %d ids, more than the %d it has room for", s.ids, s.outCap)
			}
		}
		if !s.bounded && s.ids > 0 {
			if err := c.CopyToHostAsync(down[4*s.downHead:4*(s.downHead+s.ids)], s.dOut.Slice(0, 4*s.ids), s.stream); err != nil {
				return err
			}
			if err := c.Record(s.ev[3], s.stream); err != nil {
				return err
			}
			if err := c.Sync(s.stream); err != nil {
				return err
			}
		}
		var err error
		for i := range 3 {
			if s.ph[phUpload+i], err = c.Elapsed(s.ev[i], s.ev[i+1]); err != nil {
				return err
			}
		}
		prev := s.ev[1]
		for i, e := range s.kev {
			if s.countOnly && i == len(s.kev)-1 {
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
	t := time.Now()
	nq := s.nq
	words := gpurt.Uint32s(s.down.Bytes())
	counts := words[headWords : headWords+nq]
	flags := words[headWords+nq : headWords+2*nq]
	if s.countOnly {
		res := s.res[:nq]
		for i, c := range counts {
			if flags[i] != 0 {
				s.fallback = append(s.fallback, i)
			}
			res[i] = conj.Result{Count: int(c)}
		}
	} else {
		offs := words[headWords+2*nq : headWords+3*nq]
		ns := words[headWords+3*nq : headWords+4*nq]
		ids := words[s.downHead : s.downHead+s.ids]
		fill := func(lo, hi int) {
			for i := lo; i < hi; i++ {
				rr := &s.res[i]
				rr.Count = int(counts[i])
				rr.IDs = rr.IDs[:0]
				if n := ns[i]; n > 0 {
					rr.IDs = append(rr.IDs, ids[offs[i]:offs[i]+n]...)
				}
			}
		}
		// Copying ids is worth a few goroutines.
		k := max(1, min(r.threads, 4, nq/4096))
		if k == 1 {
			fill(0, nq)
		} else {
			var wg sync.WaitGroup
			for p := range k {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fill(p*nq/k, (p+1)*nq/k)
				}()
			}
			wg.Wait()
		}
		for i, f := range flags {
			if f != 0 {
				s.fallback = append(s.fallback, i)
			}
		}
	}
	for _, i := range s.fallback {
		if err := r.cpu.Search(ctx, s.qs[i:i+1], s.limit, s.countOnly, s.res[i:i+1]); err != nil {
			return err
		}
	}
	s.ph[phFinish] = time.Since(t)
	r.statsMu.Lock()
	st := &r.stats
	if len(st.phases) < maxPhases {
		st.phases = append(st.phases, s.ph)
		st.kernels = append(st.kernels, kt)
	} else {
		st.phases[st.batches%maxPhases] = s.ph
		st.kernels[st.batches%maxPhases] = kt
	}
	st.batches++
	st.queries += nq
	st.host += len(s.fallback)
	st.upBytes += 4 * int64(nq+1+s.terms)
	down := s.downHead + s.ids
	if s.bounded && !s.countOnly {
		down = s.downHead + s.outCap
	}
	st.downBytes += 4 * int64(down)
	r.statsMu.Unlock()
	return nil
}
