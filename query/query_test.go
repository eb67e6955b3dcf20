package query_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/query/querytest"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// save writes ix to a file and opens it again.
func save(t *testing.T, ix *query.Index) *query.Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ix")
	var b bytes.Buffer
	if _, err := ix.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opened, err := query.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	return opened
}

func TestSearchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	docs := querytest.RandomDocs(rng, 1500, 120, 9)
	built, err := query.Build(docs, query.BuildOptions{DenseRatio: 16})
	if err != nil {
		t.Fatal(err)
	}
	ix := save(t, built)
	if ix.Docs() != docs.Len() || ix.HasVocabulary() {
		t.Fatalf("docs %d, vocabulary %v", ix.Docs(), ix.HasVocabulary())
	}
	qs := querytest.AdversarialQueries(rng, ix.Terms(), 500)
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Device() != "cpu" {
		t.Errorf("device %q", s.Device())
	}
	for _, limit := range []int{-1, 2} {
		for _, countOnly := range []bool{false, true} {
			res := make([]query.Result, len(qs))
			if err := s.Search(context.Background(), qs, limit, countOnly, res); err != nil {
				t.Fatal(err)
			}
			querytest.CheckResults(t, docs, qs, res, limit, countOnly)
		}
	}
	var explain bytes.Buffer
	if err := s.Explain(&explain); err != nil || !strings.Contains(explain.String(), "svs") {
		t.Errorf("explain: %q, %v", explain.String(), err)
	}
}

func TestTextIndex(t *testing.T) {
	text := "Alpha beta\nbeta GAMMA beta\n\n\xffalpha-gamma!\ndelta"
	built, err := query.BuildText(strings.NewReader(text), "t", query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix := save(t, built)
	if !ix.HasVocabulary() || ix.Docs() != 5 || ix.Terms() != 4 {
		t.Fatalf("%v", ix)
	}
	words := []string{"alpha", "beta", "delta", "gamma"}
	for id, w := range words {
		if ix.Word(uint32(id)) != w {
			t.Errorf("term %d: %q, want %q", id, ix.Word(uint32(id)), w)
		}
	}
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		want []uint32
	}{
		{"alpha", []uint32{0, 3}}, {"ALPHA gamma", []uint32{3}}, {"beta beta", []uint32{0, 1}}, {"beta, gamma.", []uint32{1}},
		{"", nil}, {"  !! ", nil}, {"alpha zeta", nil}, {"zeta", nil}, {"delta", []uint32{4}}, {"alph", nil},
	} {
		q := ix.ParseText(tc.q)
		res := make([]query.Result, 1)
		if err := s.Search(context.Background(), []query.Query{q}, -1, false, res); err != nil {
			t.Fatal(err)
		}
		if res[0].Count != len(tc.want) || !slices.Equal(res[0].IDs, tc.want) && len(tc.want) > 0 {
			t.Errorf("%q (%v): %d %v, want %v", tc.q, q.Terms, res[0].Count, res[0].IDs, tc.want)
		}
	}
	// On an id index, every word is unknown.
	idx, _ := query.Build(sets.FromSets([]uint32{0, 1}), query.BuildOptions{})
	if q := idx.ParseText("1 a"); !slices.Equal(q.Terms, []uint32{query.NoTerm, query.NoTerm}) {
		t.Errorf("text on an id index: %v", q.Terms)
	}
}

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint32
		col  int // of the error, 0 for none
	}{
		{"", nil, 0}, {"  \t ", nil, 0}, {"1 2 3", []uint32{1, 2, 3}, 0}, {"007\t8\r", []uint32{7, 8}, 0},
		{"4294967294", []uint32{4294967294}, 0}, {"4294967295 4294967296 99999999999999999999999", []uint32{query.NoTerm, query.NoTerm, query.NoTerm}, 0},
		{"1 -2", nil, 3}, {"1 2.5", nil, 3}, {"x", nil, 1}, {"1,2", nil, 1}, {"3 4a", nil, 3}, {"+1", nil, 1}, {"1 \xff", nil, 3},
	} {
		q, err := query.ParseIDs(query.Query{}, []byte(tc.in))
		var se *query.SyntaxError
		switch {
		case tc.col == 0 && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.col == 0 && !slices.Equal(q.Terms, tc.want):
			t.Errorf("%q: %v, want %v", tc.in, q.Terms, tc.want)
		case tc.col != 0 && (!errors.As(err, &se) || se.Col != tc.col):
			t.Errorf("%q: error %v, want one at column %d", tc.in, err, tc.col)
		}
	}
}

// FuzzParseIDs checks the parser against strings.Fields and ParseUint:
// it accepts exactly the lines of decimal tokens.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"1 2", "-1", "1e5", "\t4294967295\r", "99999999999", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		q, err := query.ParseIDs(query.Query{}, []byte(line))
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' })
		valid := true
		var want []uint32
		for _, f := range fields {
			if strings.Trim(f, "0123456789") != "" || f == "" {
				valid = false
				break
			}
			v := uint64(0)
			for _, c := range f {
				if v < 1<<40 {
					v = v*10 + uint64(c-'0')
				}
			}
			want = append(want, uint32(min(v, query.NoTerm)))
		}
		if valid != (err == nil) {
			t.Fatalf("%q: error %v, valid %v", line, err, valid)
		}
		if valid && !slices.Equal(q.Terms, want) {
			t.Fatalf("%q: %v, want %v", line, q.Terms, want)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "docs.sets")
	os.WriteFile(foreign, []byte("1 2\n"), 0o644)
	if _, err := query.Open(foreign); err == nil || !errors.Is(err, setio.ErrBadInput) || !strings.Contains(err.Error(), foreign) {
		t.Errorf("a sets file: %v", err)
	}
	if _, err := query.Open(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file opened")
	}
}

func TestDeviceErrors(t *testing.T) {
	ix, _ := query.Build(sets.FromSets([]uint32{0, 1}), query.BuildOptions{})
	if _, err := query.NewSearcher(ix, query.Options{Device: "tpu"}); err == nil {
		t.Error("device tpu accepted")
	}
	s, err := query.NewSearcher(ix, query.Options{Device: "gpu"})
	if err != nil {
		if !errors.Is(err, query.ErrCannotRun) || !errors.Is(err, query.ErrUnavailable) {
			t.Errorf("no GPU: %v", err)
		}
		// The searcher explains why it cannot run, and cannot search.
		var b strings.Builder
		if xerr := s.Explain(&b); xerr != nil || !strings.Contains(b.String(), "cannot run") {
			t.Errorf("Explain: %v\n%s", xerr, b.String())
		}
		if s.Device() != "" {
			t.Errorf("a searcher that cannot run is on %q", s.Device())
		}
		if serr := s.Search(context.Background(), []query.Query{{Terms: []uint32{0}}}, -1, false, make([]query.Result, 1)); serr == nil {
			t.Error("a searcher that cannot run searched")
		}
		return
	}
	defer s.Close()
	if s.Device() != "gpu" {
		t.Errorf("device %q", s.Device())
	}
}

func TestMemoryLimit(t *testing.T) {
	docs := sets.FromSets([]uint32{0, 1 << 30})
	_, err := query.Build(docs, query.BuildOptions{Memory: 1 << 20})
	var me *query.MemoryError
	if !errors.As(err, &me) || me.Need < 1<<30 {
		t.Errorf("a billion terms in a MiB: %v", err)
	}
	_, err = query.BuildText(strings.NewReader(strings.Repeat("many different words here\n", 5000)), "t", query.BuildOptions{Memory: 1 << 12})
	if !errors.As(err, &me) {
		t.Errorf("text over the limit: %v", err)
	}
}

// TestRealData runs the TREC 2005 efficiency log on gcide: the counts of
// the queries of 2+ terms sum to the anchors' 2,451,938.
func TestRealData(t *testing.T) {
	docs, err := setio.Load(settest.SharedData(t, "ir", "gcide", "gcide.docs.sets.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := query.Build(docs, query.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(settest.SharedData(t, "ir", "gcide", "gcide.q.topics.terabyte05.efficiency.txt.sets"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []query.Query
	for line := range bytes.Lines(data) {
		q, err := query.ParseIDs(query.Query{}, bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Terms) >= 2 {
			qs = append(qs, q)
		}
	}
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	res := make([]query.Result, len(qs))
	if err := s.Search(context.Background(), qs, -1, true, res); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range res {
		sum += r.Count
	}
	if len(qs) != 31432 || sum != 2451938 {
		t.Errorf("%d queries, counts sum to %d; want 31432 and 2451938", len(qs), sum)
	}
}
