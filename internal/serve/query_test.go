package serve

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// TestQuerySearcher serves the real CPU engine of package query to many
// concurrent clients and checks every answer against the reference.
func TestQuerySearcher(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	docs := testDocs(r, 2000, 40)
	ix, err := query.Build(sets.FromSets(docs...), query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, ts := newTestServer(t, Config{BatchSize: 64, Concurrency: 2, MaxQueries: 40}, s, nil)
	hammer(t, ts.URL, docs, 40, 16, 30)
}

// TestQueryText serves a text index: "q" goes through the index's
// vocabulary.
func TestQueryText(t *testing.T) {
	lines := []string{"the quick brown fox", "the lazy dog", "quick quick dog", "The Fox and the Dog", "", "fox42 x"}
	ix, err := query.BuildText(strings.NewReader(strings.Join(lines, "\n")+"\n"), "docs", query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, ts := newTestServer(t, Config{}, s, ix.ParseText)
	// The reference: the documents holding every word of the query.
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	}
	for _, q := range []string{"the dog", "DOG the", "quick", "fox cat", "", "fox42", "fox", "dog, dog; dog", "the the the"} {
		var ids []uint32
		if w := words(q); len(w) > 0 {
			for id, line := range lines {
				all := true
				for _, x := range w {
					all = all && slices.Contains(words(line), x)
				}
				if all {
					ids = append(ids, uint32(id))
				}
			}
		}
		body, _ := jsonString(q)
		a := postT(t, ts.URL, "/v1/search", `{"q":`+body+`}`)
		if want := wantResult(len(ids), ids) + "\n"; a.code != 200 || a.body != want {
			t.Errorf("q %q: %+v, want %s", q, a, want)
		}
	}
}

func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// TestGcide serves gcide's index on the CPU engine, and on the GPU engine
// where there is a GPU, and sends every TREC 2005 efficiency query (empty
// and one-term queries included) from 16 concurrent clients in batch
// requests of up to 50 queries: every answer must equal the CPU engine's
// own, and the counts of the queries of 2+ terms must sum to the anchor's
// 2,451,938 (../shared/NOTES.md).
func TestGcide(t *testing.T) {
	if testing.Short() {
		t.Skip("real data: not in -short")
	}
	docs, err := setio.Load(settest.SharedData(t, "ir", "gcide", "gcide.docs.sets.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := query.Build(docs, query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	qc, err := setio.Load(settest.SharedData(t, "ir", "gcide", "gcide.q.topics.terabyte05.efficiency.txt.sets"))
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := query.NewSearcher(ix, query.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	qs := make([]Query, qc.Len())
	for i := range qs {
		qs[i].Terms = qc.Set(i)
	}
	want := make([]Result, len(qs))
	if err := cpu.Search(context.Background(), qs, 10, false, want); err != nil {
		t.Fatal(err)
	}
	// gpu00: two owners of GPU 0, two searches at once on each; a batch of
	// 50 queries runs whole on the least-loaded owner.
	for _, device := range []string{"cpu", "gpu", "gpu00"} {
		t.Run(device, func(t *testing.T) {
			var b Backend = cpu
			cfg := Config{MaxQueries: 50}
			if device != "cpu" {
				opt := query.Options{Device: "gpu"}
				if device == "gpu00" {
					opt.GPUs = []int{0, 0}
				}
				gs, err := query.NewSearcher(ix, opt)
				gputest.Need(t, err)
				defer gs.Close()
				if want := 2 * max(len(opt.GPUs), 1); opt.GPUs != nil && gs.Concurrency() != want {
					t.Fatalf("concurrency %d, want %d", gs.Concurrency(), want)
				}
				b = gs
			}
			serveGcide(t, b, cfg, qs, want)
		})
	}
}

// serveGcide serves b with cfg and checks the answers to qs through the
// server against want.
func serveGcide(t *testing.T, b Backend, cfg Config, qs []Query, want []Result) {
	_, ts := newTestServer(t, cfg, b, nil)
	got := make([]string, len(qs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(50)) - 50
				if lo >= len(qs) {
					return
				}
				hi := min(lo+50, len(qs))
				var body strings.Builder
				body.WriteString(`{"queries":[`)
				for i := lo; i < hi; i++ {
					if i > lo {
						body.WriteByte(',')
					}
					terms, _ := json.Marshal(qs[i].Terms)
					if qs[i].Terms == nil {
						terms = []byte("[]")
					}
					body.WriteString(`{"terms":` + string(terms) + `}`)
				}
				body.WriteString("]}")
				a := postT(t, ts.URL, "/v1/search:batch", body.String())
				var resp struct{ Results []json.RawMessage }
				if err := json.Unmarshal([]byte(a.body), &resp); a.code != 200 || err != nil || len(resp.Results) != hi-lo {
					t.Errorf("queries %d to %d: %d %.200s", lo, hi, a.code, a.body)
					return
				}
				for i, r := range resp.Results {
					got[lo+i] = string(r)
				}
			}
		}()
	}
	wg.Wait()
	sum := 0
	for i := range qs {
		if w := wantResult(want[i].Count, want[i].IDs); got[i] != w {
			t.Fatalf("query %d %v: got %s, want %s", i, qs[i].Terms, got[i], w)
		}
		if len(qs[i].Terms) >= 2 {
			sum += want[i].Count
		}
	}
	if sum != 2451938 {
		t.Errorf("counts of the queries of 2+ terms sum to %d, want 2451938", sum)
	}
}
