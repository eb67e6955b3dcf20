package gpuquery

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
	"github.com/xsect/xsect/internal/query/querytest"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// openRunner returns a GPU runner on ix, or skips saying why there is no
// GPU.
func openRunner(t testing.TB, ix *invindex.Index, threads int) query.Runner {
	t.Helper()
	gputest.Need(t, gpurt.Available())
	dev, err := gpurt.Default()
	if err != nil {
		t.Fatal(err)
	}
	r, err := newDevRunner(dev, ix, threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// compare runs qs on the GPU and the CPU in every mode and checks both
// against each other, and against the reference when docs is not nil.
func compare(t *testing.T, r query.Runner, ix *invindex.Index, docs *sets.Collection, qs []query.Query, limits []int) {
	t.Helper()
	cpu := query.NewCPU(ix, 0)
	for _, limit := range limits {
		for _, countOnly := range []bool{true, false} {
			got := make([]query.Result, len(qs))
			for i := range got {
				got[i] = query.Result{Count: -5, IDs: []uint32{1, 2, 3}} // stale
			}
			if err := r.Search(context.Background(), qs, limit, countOnly, got); err != nil {
				t.Fatal(err)
			}
			want := make([]query.Result, len(qs))
			if err := cpu.Search(context.Background(), qs, limit, countOnly, want); err != nil {
				t.Fatal(err)
			}
			for i := range qs {
				if got[i].Count != want[i].Count || !slices.Equal(got[i].IDs, want[i].IDs) || countOnly && got[i].IDs != nil {
					t.Fatalf("limit %d count %v: query %d %v: GPU %d %v, CPU %d %v", limit, countOnly, i, qs[i].Terms,
						got[i].Count, head(got[i].IDs), want[i].Count, head(want[i].IDs))
				}
			}
			if docs != nil {
				querytest.CheckResults(t, docs, qs, got, limit, countOnly)
			}
		}
	}
}

func head(s []uint32) []uint32 {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func TestGPUReference(t *testing.T) {
	referenceCases(t, rand.New(rand.NewPCG(21, 22)), func(ix *invindex.Index, docs *sets.Collection, qs []query.Query) {
		compare(t, openRunner(t, ix, 3), ix, docs, qs, []int{-1, 0, 1, 3})
	})
}

// referenceCases calls check with each of the random cases that the
// reference tests run: an index of random documents, with and without
// bitmaps, and adversarial queries, one of them of more terms than the
// device takes.
func referenceCases(t *testing.T, rng *rand.Rand, check func(ix *invindex.Index, docs *sets.Collection, qs []query.Query)) {
	t.Helper()
	for _, tc := range []struct{ n, terms, maxLen, ratio int }{
		{1, 3, 2, 0}, {100, 20, 5, 0}, {2000, 300, 12, 0}, {2000, 300, 12, -1}, {2000, 60, 10, 2},
	} {
		docs := querytest.RandomDocs(rng, tc.n, tc.terms, tc.maxLen)
		ix, err := invindex.FromDocs(docs, invindex.BuildOptions{DenseRatio: tc.ratio})
		if err != nil {
			t.Fatal(err)
		}
		qs := querytest.AdversarialQueries(rng, ix.Terms(), 3000)
		var long query.Query
		for i := range devMaxTerms + 3 {
			long.Terms = append(long.Terms, uint32(i%3))
		}
		check(ix, docs, append(qs, long))
	}
}

// longLists builds documents where a few terms have lists long enough for
// every bucket and for splitting (over splitLen), and queries on them.
func longLists(rng *rand.Rand, n int) (*sets.Collection, []query.Query) {
	docs := sets.New()
	for d := range n {
		var s []uint32
		// Term k holds about n/2^k of the documents; term 20+k every
		// (k+2)-th one: regular overlaps of every size.
		for k := range 16 {
			if rng.IntN(1<<k) == 0 {
				s = append(s, uint32(k))
			}
		}
		for k := range 6 {
			if d%(k+2) == 0 {
				s = append(s, uint32(20+k))
			}
		}
		docs.AddUnsorted(s)
	}
	var qs []query.Query
	for a := range uint32(26) {
		for b := range uint32(26) {
			qs = append(qs, query.Query{Terms: []uint32{a, b}})
			qs = append(qs, query.Query{Terms: []uint32{a, b, (a + b) % 26}})
		}
	}
	return docs, qs
}

func TestGPULongLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	docs, qs := longLists(rng, 40000)
	for _, ratio := range []int{-1, 0} {
		ix, err := invindex.FromDocs(docs, invindex.BuildOptions{DenseRatio: ratio})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, openRunner(t, ix, 2), ix, nil, qs, []int{-1, 0, 7, 10000})
	}
}

// TestGPUBatchSplit answers more queries than one device batch takes,
// whose ids overflow a batch's buffers: the batches split.
func TestGPUBatchSplit(t *testing.T) {
	ix, qs := longCase(t, rand.New(rand.NewPCG(25, 26)), 1<<15, invindex.BuildOptions{DenseRatio: -1}, maxQueries+1000)
	compare(t, openRunner(t, ix, 4), ix, nil, qs, []int{-1, 10})
}

func TestGPUClosed(t *testing.T) {
	ix, _ := invindex.FromDocs(sets.FromSets([]uint32{1, 2}), invindex.BuildOptions{})
	r := openRunner(t, ix, 1)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Search(context.Background(), make([]query.Query, 1), -1, false, make([]query.Result, 1)); err == nil {
		t.Error("Search after Close succeeded")
	}
}

// TestEngineWithoutGPU checks the engine's planning on any machine: with
// no GPU it reports why, and the planner falls back to the CPU.
func TestEngineWithoutGPU(t *testing.T) {
	ix, _ := invindex.FromDocs(sets.FromSets([]uint32{1, 2}), invindex.BuildOptions{})
	w := &query.Workload{Index: ix, Threads: 1}
	var e gpuEngine
	if e.Kind() != engine.GPU || e.Name() != "svs" {
		t.Fatal(e.Name(), e.Kind())
	}
	if _, err := e.Device(); err != nil {
		if gpurt.Present() == nil {
			t.Fatalf("a GPU is present, but: %v", err)
		}
		cs, _, err := query.Plan(w, engine.Choice{Device: "gpu"})
		if err == nil || len(cs) != 1 {
			t.Fatalf("device gpu without a GPU: %v", err)
		}
		cs, _, err = query.Plan(w, engine.Choice{Device: "auto"})
		if err != nil || cs[0].Engine.Kind() != engine.CPU {
			t.Fatalf("auto without a GPU: %v %v", cs, err)
		}
		return
	}
	est, err := e.Estimate(w)
	if err != nil || est.Memory <= 0 || est.Seconds <= 0 {
		t.Fatalf("estimate %+v, %v", est, err)
	}
}

// TestGPURealData runs the TREC 2005 efficiency queries on gcide on the
// GPU and the CPU: counts and ids must agree, the counts sum to the
// gcideTREC indexes gcide's documents and reads the TREC 2005 efficiency
// queries mapped to its term ids.
func gcideTREC(tb testing.TB) (*invindex.Index, []query.Query) {
	docs, err := setio.Load(settest.SharedData(tb, "ir", "gcide", "gcide.docs.sets.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := invindex.FromDocs(docs, invindex.BuildOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return ix, readQueries(tb, settest.SharedData(tb, "ir", "gcide", "gcide.q.topics.terabyte05.efficiency.txt.sets"))
}

// multiTerm returns the queries of 2 or more terms, as the anchors count.
func multiTerm(qs []query.Query) []query.Query {
	var out []query.Query
	for _, q := range qs {
		if len(q.Terms) >= 2 {
			out = append(out, q)
		}
	}
	return out
}

// anchors' 2,451,938.
func TestGPURealData(t *testing.T) {
	gputest.Need(t, gpurt.Available())
	ix, qs := gcideTREC(t)
	{
		r := openRunner(t, ix, 0)
		res := make([]query.Result, len(qs))
		if err := r.Search(context.Background(), qs, -1, true, res); err != nil {
			t.Fatal(err)
		}
		sum := 0
		for i, q := range qs {
			if len(q.Terms) >= 2 {
				sum += res[i].Count
			}
		}
		if sum != 2451938 {
			t.Errorf("counts of the queries of 2+ terms sum to %d, want 2451938", sum)
		}
		compare(t, r, ix, nil, qs, []int{-1, 10})
	}
}

func readQueries(t testing.TB, path string) []query.Query {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []query.Query
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q query.Query
		for _, w := range strings.Fields(sc.Text()) {
			v, err := strconv.ParseUint(w, 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			q.Terms = append(q.Terms, uint32(v))
		}
		qs = append(qs, q)
	}
	return qs
}

// BenchmarkGcide times batches of the TREC queries (2+ terms) on gcide,
// counting, and the CPU engine on every core beside it.
func BenchmarkGcide(b *testing.B) {
	ix, all := gcideTREC(b)
	qs := multiTerm(all)
	res := make([]query.Result, len(qs))
	run := func(b *testing.B, s query.Runner, limit int, countOnly bool) {
		start := time.Now()
		for b.Loop() {
			if err := s.Search(context.Background(), qs, limit, countOnly, res); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(qs))/time.Since(start).Seconds(), "queries/s")
	}
	b.Run("cpu/count", func(b *testing.B) { run(b, query.NewCPU(ix, 0), -1, true) })
	b.Run("cpu/ids", func(b *testing.B) { run(b, query.NewCPU(ix, 0), -1, false) })
	b.Run("gpu/count", func(b *testing.B) { run(b, openRunner(b, ix, 0), -1, true) })
	b.Run("gpu/ids", func(b *testing.B) { run(b, openRunner(b, ix, 0), -1, false) })
	b.Run("gpu/limit10", func(b *testing.B) { run(b, openRunner(b, ix, 0), 10, false) })
}

// TestGPUPipelined cuts searches into many small batches that flow
// through the two slots, with queries the host answers among them, and
// checks every mode against the CPU engine and the reference.
func TestGPUPipelined(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	docs, ix, qs := randomCase(t, rng, 3000, 200, 12, 9000)
	for i := 0; i < len(qs); i += 997 {
		var long query.Query
		for j := range devMaxTerms + 1 + i%5 {
			long.Terms = append(long.Terms, uint32((i+j)%7))
		}
		qs[i] = long
	}
	r := openRunner(t, ix, 3).(*devRunner)
	for _, per := range []int{1, 2, 700, 4500, 8999, 9000} {
		r.batchQueries = per
		some := qs
		if per < 10 {
			some = qs[:61]
		}
		compare(t, r, ix, docs, some, []int{-1, 0, 2})
		compare(t, r, ix, nil, qs[:1+per%7], []int{-1})
	}
}

func TestNumBatches(t *testing.T) {
	for _, c := range []struct{ n, per, want int }{
		{0, maxQueries, 0}, {1, maxQueries, 1}, {31432, maxQueries, 1}, {2 * minSplit, maxQueries, 1},
		{2*minSplit + 1, maxQueries, 2}, {62864, maxQueries, 2}, {maxQueries + 1, maxQueries, 2},
		{1005824, maxQueries, 16}, {1005824, 1 << 20, 16}, {10, 3, 4}, {10, 0, 10},
	} {
		if got := numBatches(c.n, c.per); got != c.want {
			t.Errorf("numBatches(%d, %d) = %d, want %d", c.n, c.per, got, c.want)
		}
	}
}

// cancelAfter is a context whose Err turns to Canceled after n calls.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func newCancelAfter(n int) *cancelAfter {
	c := &cancelAfter{Context: context.Background()}
	c.n.Store(int64(n))
	return c
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// randomCase is n random documents of up to maxLen of terms terms
// (querytest.RandomDocs), their index and queries adversarial queries.
func randomCase(t *testing.T, rng *rand.Rand, n, terms, maxLen, queries int) (*sets.Collection, *invindex.Index, []query.Query) {
	t.Helper()
	docs := querytest.RandomDocs(rng, n, terms, maxLen)
	ix, err := invindex.FromDocs(docs, invindex.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return docs, ix, querytest.AdversarialQueries(rng, ix.Terms(), queries)
}

// longCase is an index of n documents of long lists (longLists), built
// with opt, and at least atLeast queries: longLists' queries repeated.
func longCase(t *testing.T, rng *rand.Rand, n int, opt invindex.BuildOptions, atLeast int) (*invindex.Index, []query.Query) {
	t.Helper()
	docs, base := longLists(rng, n)
	ix, err := invindex.FromDocs(docs, opt)
	if err != nil {
		t.Fatal(err)
	}
	qs := base
	for len(qs) < atLeast {
		qs = append(qs, base...)
	}
	return ix, qs
}

// cancelCase is the index and the queries that the cancellation tests
// search: 20,000 documents of long lists and at least as many queries,
// several device batches.
func cancelCase(t *testing.T, rng *rand.Rand) (*invindex.Index, []query.Query) {
	t.Helper()
	return longCase(t, rng, 20000, invindex.BuildOptions{}, 20000)
}

// TestGPUCanceled stops a pipelined search between batches, with a batch
// still on the device, then checks that the next searches are right.
func TestGPUCanceled(t *testing.T) {
	ix, qs := cancelCase(t, rand.New(rand.NewPCG(29, 30)))
	r := openRunner(t, ix, 2).(*devRunner)
	r.batchQueries = 1000
	for _, n := range []int{0, 1, 3, 7} {
		for _, countOnly := range []bool{true, false} {
			res := make([]query.Result, len(qs))
			err := r.Search(newCancelAfter(n), qs, 10, countOnly, res)
			if err != context.Canceled {
				t.Fatalf("canceled after %d checks: %v", n, err)
			}
		}
		compare(t, r, ix, nil, qs, []int{-1, 10})
	}
}

// BenchmarkGcideBatches times counting searches of the TREC queries (2+
// terms) on gcide, once, twice and 32 times over (31,432, 62,864 and
// 1,005,824 queries), on the CPU on every core and on the GPU cut into
// batches of several sizes, side by side.
func BenchmarkGcideBatches(b *testing.B) {
	ix, all := gcideTREC(b)
	q2 := multiTerm(all)
	gpu := openRunner(b, ix, 0).(*devRunner)
	cpu := query.NewCPU(ix, 0)
	for _, times := range []int{1, 2, 32} {
		var qs []query.Query
		for range times {
			qs = append(qs, q2...)
		}
		qs = relayout(nil, qs, "one array") // as xsect query reads them
		res := make([]query.Result, len(qs))
		run := func(b *testing.B, s query.Runner) {
			start := time.Now()
			for b.Loop() {
				if err := s.Search(context.Background(), qs, -1, true, res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(qs))/time.Since(start).Seconds(), "queries/s")
		}
		b.Run(fmt.Sprintf("q%d/cpu", len(qs)), func(b *testing.B) { run(b, cpu) })
		for _, per := range []int{16384, 32768, 65536} {
			b.Run(fmt.Sprintf("q%d/gpu%d", len(qs), per), func(b *testing.B) {
				gpu.batchQueries = per
				run(b, gpu)
			})
		}
	}
	b.Log(gpu.Notes())
}
