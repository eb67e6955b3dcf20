package serve

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/query"
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
