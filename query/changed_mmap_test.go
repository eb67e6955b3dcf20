//go:build !purego && (linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package query_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/query/querytest"
	"github.com/xsect/xsect/query"
)

// writeIndex writes ix to path.
func writeIndex(t *testing.T, ix *query.Index, path string) {
	t.Helper()
	var b bytes.Buffer
	if _, err := ix.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openSearcher opens the index at path and a CPU searcher on it, both
// closed at the end of the test.
func openSearcher(t *testing.T, path string) (*query.Index, *query.Searcher) {
	t.Helper()
	ix, err := query.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu", Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ix, s
}

// A mapped index whose file is replaced by a rename keeps answering from
// the file it mapped; one whose file is overwritten in place (cp over it:
// truncated, then written shorter) makes every search an error matching
// ErrChanged, naming the file, on one goroutine or many. Reading past the
// file's new end faulted (SIGBUS) and crashed the process.
func TestIndexFileChanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	docs := querytest.RandomDocs(rng, 20000, 300, 40)
	big, err := query.Build(docs, query.BuildOptions{DenseRatio: 16})
	if err != nil {
		t.Fatal(err)
	}
	small, err := query.BuildText(strings.NewReader("alpha beta\n"), "small", query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "live.idx")
	writeIndex(t, big, path)
	ix, s := openSearcher(t, path)
	qs := querytest.AdversarialQueries(rng, ix.Terms(), 300)

	// Renamed over: the mapping keeps the old file.
	writeIndex(t, small, filepath.Join(dir, "new.idx"))
	if err := os.Rename(filepath.Join(dir, "new.idx"), path); err != nil {
		t.Fatal(err)
	}
	res := make([]query.Result, len(qs))
	if err := s.Search(context.Background(), qs, -1, false, res); err != nil {
		t.Fatalf("after a rename over the index: %v", err)
	}
	querytest.CheckResults(t, docs, qs, res, -1, false)

	// Overwritten in place, as cp does.
	writeIndex(t, big, path)
	_, s2 := openSearcher(t, path)
	writeIndex(t, small, path)
	for _, batch := range [][]query.Query{qs, qs[:1]} {
		err := s2.Search(context.Background(), batch, -1, false, make([]query.Result, len(batch)))
		if !errors.Is(err, query.ErrChanged) || !strings.Contains(err.Error(), path) {
			t.Errorf("a batch of %d queries on an index overwritten in place: %v; want ErrChanged naming %s", len(batch), err, path)
		}
	}
}

// Parsing text against a vocabulary whose file was cut short does not
// crash; the search says the file changed.
func TestTextIndexFileChanged(t *testing.T) {
	var text strings.Builder
	for i := range 200000 {
		text.WriteString("w" + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + "\n")
	}
	built, err := query.BuildText(strings.NewReader(text.String()), "text", query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "text.idx")
	writeIndex(t, built, path)
	ix, s := openSearcher(t, path)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	q := ix.ParseText("wxxxc wxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxd")
	if err := s.Search(context.Background(), []query.Query{q}, -1, false, make([]query.Result, 1)); !errors.Is(err, query.ErrChanged) {
		t.Errorf("a search on a text index cut short: %v; want ErrChanged", err)
	}
}
