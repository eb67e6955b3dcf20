package serve

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// refBackend answers queries from posting lists by a plain merge, records
// the size of every batch, and can be held (gate) to test queues, deadlines
// and shutdown.
type refBackend struct {
	lists  [][]uint32
	device string

	entered chan []Query  // when set, Search sends its batch here first
	gate    chan struct{} // when set, Search then waits for a value or its closing
	fail    error         // when set, Search returns it

	mu      sync.Mutex
	sizes   []int // batch sizes, in the order they ran
	queries int
}

func newRefBackend(docs [][]uint32) *refBackend {
	b := &refBackend{device: "cpu"}
	for id, d := range docs {
		for _, t := range d {
			for int(t) >= len(b.lists) {
				b.lists = append(b.lists, nil)
			}
			if l := b.lists[t]; len(l) == 0 || l[len(l)-1] != uint32(id) {
				b.lists[t] = append(l, uint32(id))
			}
		}
	}
	return b
}

func (b *refBackend) Device() string { return b.device }

func (b *refBackend) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error {
	if len(res) != len(qs) || limit < 0 {
		panic("bad Search call")
	}
	b.mu.Lock()
	b.sizes = append(b.sizes, len(qs))
	b.queries += len(qs)
	b.mu.Unlock()
	if b.entered != nil {
		b.entered <- qs
	}
	if b.gate != nil {
		<-b.gate
	}
	if b.fail != nil {
		return b.fail
	}
	for i, q := range qs {
		ids := b.search(q)
		res[i].Count = len(ids)
		res[i].IDs = nil
		if !countOnly {
			res[i].IDs = ids[:min(limit, len(ids))]
		}
	}
	return nil
}

func (b *refBackend) search(q Query) []uint32 {
	if len(q.Terms) == 0 {
		return nil
	}
	var acc []uint32
	for k, t := range q.Terms {
		if int64(t) >= int64(len(b.lists)) {
			return nil
		}
		l := b.lists[t]
		if k == 0 {
			acc = slices.Clone(l)
			continue
		}
		out := acc[:0]
		for _, id := range acc {
			if _, ok := slices.BinarySearch(l, id); ok {
				out = append(out, id)
			}
		}
		acc = out
	}
	return acc
}

func (b *refBackend) batchSizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sizes)
}

// sortedBackend is a refBackend that asks for semi-sorted batches and
// records the keys of every batch in the order it received them.
type sortedBackend struct {
	*refBackend
	mu   sync.Mutex
	keys [][]int
}

func (b *sortedBackend) ShortestList(q Query) int {
	best := math.MaxInt
	for _, t := range q.Terms {
		n := 0
		if int(t) < len(b.lists) {
			n = len(b.lists[t])
		}
		best = min(best, n)
	}
	if best == math.MaxInt {
		return 0
	}
	return best
}

func (b *sortedBackend) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error {
	keys := make([]int, len(qs))
	for i, q := range qs {
		keys[i] = b.ShortestList(q)
	}
	b.mu.Lock()
	b.keys = append(b.keys, keys)
	b.mu.Unlock()
	return b.refBackend.Search(ctx, qs, limit, countOnly, res)
}

// brute is the reference: every document holding all of q's terms, by a
// scan of the documents.
func brute(docs [][]uint32, q Query) []uint32 {
	var ids []uint32
	if len(q.Terms) == 0 {
		return ids
	}
	for id, d := range docs {
		all := true
		for _, t := range q.Terms {
			if !slices.Contains(d, t) {
				all = false
				break
			}
		}
		if all {
			ids = append(ids, uint32(id))
		}
	}
	return ids
}

// testDocs returns n random documents over a vocabulary of v terms, with an
// empty document, one holding term 0 only, and heavy terms 0 and 1 (in most
// documents) so that queries have matches.
func testDocs(r *rand.Rand, n, v int) [][]uint32 {
	docs := make([][]uint32, n)
	for i := range docs {
		switch i {
		case 3:
			continue // empty
		case 4:
			docs[i] = []uint32{0}
			continue
		}
		set := map[uint32]bool{}
		if r.IntN(10) < 8 {
			set[0] = true
		}
		if r.IntN(10) < 6 {
			set[1] = true
		}
		for k := r.IntN(8); k > 0; k-- {
			set[uint32(r.IntN(v))] = true
		}
		for t := range set {
			docs[i] = append(docs[i], t)
		}
		slices.Sort(docs[i])
	}
	return docs
}

// randomQuery returns a query of 0 to 4 terms: heavy, random, repeated, or
// beyond the vocabulary.
func randomQuery(r *rand.Rand, v int) Query {
	var q Query
	for k := r.IntN(5); k > 0; k-- {
		var t uint32
		switch r.IntN(10) {
		case 0:
			t = 0
		case 1:
			t = 1
		case 2:
			t = uint32(v + r.IntN(3)) // absent
		case 3:
			t = math.MaxUint32
		case 4:
			if len(q.Terms) > 0 {
				t = q.Terms[0] // a duplicate
				break
			}
			fallthrough
		default:
			t = uint32(r.IntN(v))
		}
		q.Terms = append(q.Terms, t)
	}
	return q
}

// textVocab is the vocabulary of the text index in tests: word i is term i.
var textVocab = []string{"alpha", "beta", "gamma", "delta", "x1", "42"}

// parseText is a test ParseText: lowercase [a-z0-9]+ runs, an unknown word
// is term 2^32-1 (matches nothing).
func parseText(s string) Query {
	var q Query
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		t := uint32(math.MaxUint32)
		if i := slices.Index(textVocab, w); i >= 0 {
			t = uint32(i)
		}
		q.Terms = append(q.Terms, t)
	}
	return q
}

func TestRefBackend(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	docs := testDocs(r, 300, 40)
	b := newRefBackend(docs)
	for range 500 {
		q := randomQuery(r, 40)
		got := b.search(q)
		want := brute(docs, q)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%v: got %v, want %v", q, got, want)
		}
	}
}
