package query

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/intersect"
)

func init() { Register(cpuEngine{}) }

// cpuEngine answers queries on the CPU: terms shortest list first, the
// running result intersected with each next list (package intersect's
// SIMD merge for similar sizes, its batched searches for skewed ones, or a
// probe of the list's bitmap), stopping as soon as it is empty; the last
// step only counts when no ids are wanted; queries with only dense terms
// AND their bitmaps. A batch is split into chunks of queries that the
// goroutines take in turn, each with its own buffers.
type cpuEngine struct{}

func (cpuEngine) Name() string      { return "svs" }
func (cpuEngine) Kind() engine.Kind { return engine.CPU }

func (cpuEngine) Device() (engine.Device, error) { return engine.CPUDevice(), nil }

// The CPU cost model: a fixed cost per query, and per element of the
// running result compared with a list. Fitted to gcide with the TREC 2005
// efficiency log on the H100 host's 16 cores: 2.6 ms estimated for the
// 31,432 queries, 2.5 ms measured (docs/QUERY.md).
const (
	cpuQueryNS   = 150
	cpuElementNS = 1.5
)

// CostNS is the model's nanoseconds for one query on one thread, given
// its prepared terms: the shortest list compared with each other one,
// capped by the longer list's length for similar sizes.
func CostNS(ix *invindex.Index, terms []uint32) float64 {
	if len(terms) == 0 {
		return cpuQueryNS / 4
	}
	s := float64(ix.Len(terms[0]))
	ns := float64(cpuQueryNS)
	for _, t := range terms[1:] {
		l := float64(ix.Len(t))
		if ix.DenseSlot(t) >= 0 {
			ns += s * cpuElementNS / 2
		} else {
			ns += min(s*math.Log2(2+l/s), s+l) * cpuElementNS
		}
	}
	return ns
}

// SampleCost returns the model's total nanoseconds for w's sample, scaled
// to w.Queries, on one thread; without a sample, 0.
func SampleCost(w *Workload) float64 {
	if len(w.Sample) == 0 {
		return 0
	}
	var terms []uint32
	total := 0.0
	for _, q := range w.Sample {
		var ok bool
		terms, ok = Prepare(w.Index, q, terms)
		if !ok {
			terms = terms[:0]
		}
		total += CostNS(w.Index, terms)
	}
	return total * float64(max(w.Queries, len(w.Sample))) / float64(len(w.Sample))
}

func (cpuEngine) Estimate(w *Workload) (engine.Estimate, error) {
	threads := Threads(w.Threads)
	sec := SampleCost(w) * 1e-9 / float64(threads)
	return engine.Estimate{Seconds: sec, Memory: 0,
		Detail: fmt.Sprintf("shortest list first, SIMD merge / galloping / bitmap probes, %d threads", threads)}, nil
}

func (cpuEngine) Open(w *Workload) (Runner, error) {
	return NewCPU(w.Index, w.Threads), nil
}

// CPU is the CPU engine's Runner, also used by the GPU engine for the
// queries it leaves to the host.
type CPU struct {
	ix      *invindex.Index
	threads int
	pool    sync.Pool // *worker
}

// NewCPU returns a CPU runner on ix with up to threads goroutines a batch
// (0: GOMAXPROCS).
func NewCPU(ix *invindex.Index, threads int) *CPU {
	c := &CPU{ix: ix, threads: Threads(threads)}
	c.pool.New = func() any { return new(worker) }
	return c
}

func (c *CPU) Notes() string    { return "" }
func (c *CPU) Concurrency() int { return 0 }
func (c *CPU) Close() error     { return nil }

// chunkQueries is how many queries a goroutine takes at a time: enough to
// make the atomic counter's cost vanish, few enough to balance a batch
// whose costs vary by orders of magnitude.
const chunkQueries = 32

// Search answers a batch; see Runner. Each goroutine that reads the index
// guards itself (invindex.Index.Guard): a mapped file that changes during
// the batch is an error, not a crash.
func (c *CPU) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) (err error) {
	if len(res) != len(qs) {
		return fmt.Errorf("query: %d results for %d queries", len(res), len(qs))
	}
	n := len(qs)
	workers := min(c.threads, (n+chunkQueries-1)/chunkQueries)
	if workers <= 1 {
		defer c.ix.Guard(&err)()
		w := c.pool.Get().(*worker)
		defer c.pool.Put(w)
		for lo := 0; lo < n; lo += 256 {
			if err := ctx.Err(); err != nil {
				return err
			}
			hi := min(lo+256, n)
			for i := lo; i < hi; i++ {
				w.answer(c.ix, qs[i], limit, countOnly, &res[i])
			}
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	done := ctx.Done()
	errs := make([]error, workers)
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.ix.Guard(&errs[k])()
			w := c.pool.Get().(*worker)
			defer c.pool.Put(w)
			for {
				if done != nil {
					select {
					case <-done:
						return
					default:
					}
				}
				lo := int(next.Add(chunkQueries)) - chunkQueries
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunkQueries, n); i++ {
					w.answer(c.ix, qs[i], limit, countOnly, &res[i])
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the same change, seen by every worker
		}
	}
	return ctx.Err()
}

// worker holds one goroutine's buffers, kept from batch to batch.
type worker struct {
	terms []uint32
	a, b  []uint32
	words []uint64
}

// answer answers q into r.
func (w *worker) answer(ix *invindex.Index, q Query, limit int, countOnly bool, r *Result) {
	var ok bool
	w.terms, ok = Prepare(ix, q, w.terms)
	var ids []uint32
	r.Count, ids = 0, nil
	if ok {
		r.Count, ids = w.intersect(ix, w.terms, countOnly)
	}
	if countOnly {
		r.IDs = nil
		return
	}
	if limit >= 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	r.IDs = append(r.IDs[:0], ids...)
}

// intersect returns the size of the intersection of the terms' lists
// (prepared: distinct, nonempty, shortest first) and, unless countOnly,
// the intersection itself, in a buffer of w or in the index.
func (w *worker) intersect(ix *invindex.Index, terms []uint32, countOnly bool) (int, []uint32) {
	cur := ix.List(terms[0])
	if len(terms) == 1 {
		return len(cur), cur
	}
	if allDense(ix, terms) {
		return w.andBitmaps(ix, terms, countOnly)
	}
	out, spare := w.a, w.b
	// Keep the buffers, grown as they are.
	defer func() { w.a, w.b = out, spare }()
	for j, t := range terms[1:] {
		last := j == len(terms)-2
		if bm := ix.Bitmap(t); bm != nil {
			if last && countOnly {
				return countBitmap(cur, bm), nil
			}
			out = filterBitmap(out[:0], cur, bm)
		} else {
			l := ix.List(t)
			if last && countOnly {
				return intersect.Count(cur, l), nil
			}
			out = intersect.Intersect(out[:0], cur, l)
		}
		cur = out
		out, spare = spare, out
		if len(cur) == 0 {
			break
		}
	}
	return len(cur), cur
}

// allDense reports whether every term has a bitmap.
func allDense(ix *invindex.Index, terms []uint32) bool {
	for _, t := range terms {
		if ix.DenseSlot(t) < 0 {
			return false
		}
	}
	return true
}

// filterBitmap appends the elements of s whose bit is set in bm to dst,
// without a branch per element.
func filterBitmap(dst, s []uint32, bm []uint64) []uint32 {
	start := len(dst)
	if cap(dst)-start < len(s) {
		dst = append(dst[:cap(dst)], make([]uint32, start+len(s)-cap(dst))...)
	}
	dst = dst[:start+len(s)]
	out := dst[start:]
	n := 0
	for _, x := range s {
		out[n] = x
		n += int(bm[x>>6] >> (x & 63) & 1)
	}
	return dst[:start+n]
}

// countBitmap returns how many elements of s have their bit set in bm.
func countBitmap(s []uint32, bm []uint64) int {
	n := 0
	for _, x := range s {
		n += int(bm[x>>6] >> (x & 63) & 1)
	}
	return n
}

// andBitmaps intersects terms that all have bitmaps: their AND, counted,
// and unless countOnly decoded into ids.
func (w *worker) andBitmaps(ix *invindex.Index, terms []uint32, countOnly bool) (int, []uint32) {
	first, second := ix.Bitmap(terms[0]), ix.Bitmap(terms[1])
	if len(terms) == 2 && countOnly {
		n := 0
		for i, x := range first {
			n += bits.OnesCount64(x & second[i])
		}
		return n, nil
	}
	acc := w.words[:0]
	if cap(acc) < len(first) {
		acc = make([]uint64, len(first))
	}
	acc = acc[:len(first)]
	for i, x := range first {
		acc[i] = x & second[i]
	}
	for _, t := range terms[2:] {
		bm := ix.Bitmap(t)
		for i := range acc {
			acc[i] &= bm[i]
		}
	}
	w.words = acc
	n := 0
	for _, x := range acc {
		n += bits.OnesCount64(x)
	}
	if countOnly || n == 0 {
		return n, nil
	}
	ids := w.a[:0]
	if cap(ids) < n {
		ids = make([]uint32, 0, n)
	}
	for i, x := range acc {
		for x != 0 {
			ids = append(ids, uint32(i*64+bits.TrailingZeros64(x)))
			x &= x - 1
		}
	}
	w.a = ids
	return n, ids
}
