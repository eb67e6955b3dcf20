// Package querytest holds what the tests of the query engines share: the
// reference answer, random documents and adversarial queries, and the
// comparison of results with the reference.
package querytest

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
	"github.com/xsect/xsect/sets"
)

// Reference answers q by the definition: the documents (by their sets in
// docs) that hold every term, with maps; an empty query matches nothing.
func Reference(docs *sets.Collection, q query.Query) []uint32 {
	out := []uint32{}
	if len(q.Terms) == 0 {
		return out
	}
	for d, has := range docMaps(docs) {
		all := true
		for _, t := range q.Terms {
			all = all && has[t]
		}
		if all {
			out = append(out, uint32(d))
		}
	}
	return out
}

// docMaps returns each document of docs as a map, built once per
// collection.
func docMaps(docs *sets.Collection) []map[uint32]bool {
	mapsMu.Lock()
	defer mapsMu.Unlock()
	if m, ok := mapsOf[docs]; ok {
		return m
	}
	m := make([]map[uint32]bool, docs.Len())
	for d := range m {
		m[d] = map[uint32]bool{}
		for _, t := range docs.Set(d) {
			m[d][t] = true
		}
	}
	mapsOf[docs] = m
	return m
}

var (
	mapsMu sync.Mutex
	mapsOf = map[*sets.Collection][]map[uint32]bool{}
)

// RandomDocs returns n documents over terms term ids: a few terms in most
// documents (for bitmaps and long lists), the rest rare.
func RandomDocs(rng *rand.Rand, n, terms, maxLen int) *sets.Collection {
	c := sets.New()
	for range n {
		var d []uint32
		for t := range min(terms, 6) {
			if rng.IntN(6) > t {
				d = append(d, uint32(t))
			}
		}
		for range rng.IntN(maxLen + 1) {
			d = append(d, uint32(rng.IntN(terms)))
		}
		c.AddUnsorted(d)
	}
	return c
}

// AdversarialQueries returns queries of every awkward shape over an index
// of terms terms (and random ones).
func AdversarialQueries(rng *rand.Rand, terms, n int) []query.Query {
	last := uint32(max(terms-1, 0))
	qs := []query.Query{
		{}, {Terms: []uint32{}}, {Terms: []uint32{0}}, {Terms: []uint32{last}}, {Terms: []uint32{0, last}},
		{Terms: []uint32{uint32(terms)}}, {Terms: []uint32{invindex.NoTerm}}, {Terms: []uint32{0, invindex.NoTerm}},
		{Terms: []uint32{0, 0}}, {Terms: []uint32{1, 1, 1}}, {Terms: []uint32{2, 1, 2, 1}}, {Terms: []uint32{0, 1, 2, 3, 4, 5}},
		{Terms: []uint32{5, 4, 3, 2, 1, 0, 0, 1}}, {Terms: []uint32{0, 1}}, {Terms: []uint32{1, 0}},
		{Terms: []uint32{0, 1, uint32(terms) + 5}},
	}
	for range n {
		k := 1 + rng.IntN(5)
		var q query.Query
		for range k {
			switch rng.IntN(10) {
			case 0:
				q.Terms = append(q.Terms, uint32(rng.IntN(6)))
			case 1:
				if len(q.Terms) > 0 {
					q.Terms = append(q.Terms, q.Terms[0])
				}
			default:
				q.Terms = append(q.Terms, uint32(rng.IntN(terms+1)))
			}
		}
		qs = append(qs, q)
	}
	// Many terms: more than the insertion sort takes.
	var long query.Query
	for i := range 40 {
		long.Terms = append(long.Terms, uint32(i%7))
	}
	return append(qs, long)
}

// CheckResults compares res with the reference answers.
func CheckResults(t *testing.T, docs *sets.Collection, qs []query.Query, res []query.Result, limit int, countOnly bool) {
	t.Helper()
	for i, q := range qs {
		want := Reference(docs, q)
		r := res[i]
		if r.Count != len(want) {
			t.Fatalf("query %d %v: count %d, want %d", i, q.Terms, r.Count, len(want))
		}
		if countOnly {
			if r.IDs != nil {
				t.Fatalf("query %d: ids %v when counting", i, r.IDs)
			}
			continue
		}
		if limit >= 0 && len(want) > limit {
			want = want[:limit]
		}
		if !slices.Equal(r.IDs, want) {
			t.Fatalf("query %d %v (limit %d): ids %v, want %v", i, q.Terms, limit, r.IDs, want)
		}
	}
}
