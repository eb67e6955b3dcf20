package cli

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/settest"
)

// refQueries answers query lines over document lines by the definition,
// with maps: words are the fields of a line (term ids, or text already
// tokenised by refWords), a document matches when it holds them all, an
// empty query matches nothing. It returns one output line per query, as
// xsect query prints them.
func refQueries(docs, queries []string, words func(string) []string, count bool, limit int) string {
	sets := make([]map[string]bool, len(docs))
	for i, d := range docs {
		sets[i] = map[string]bool{}
		for _, w := range words(d) {
			sets[i][w] = true
		}
	}
	var b strings.Builder
	for _, q := range queries {
		ws := words(q)
		var ids []string
		for i, s := range sets {
			all := len(ws) > 0
			for _, w := range ws {
				all = all && s[w]
			}
			if all {
				ids = append(ids, strconv.Itoa(i))
			}
		}
		if count {
			b.WriteString(strconv.Itoa(len(ids)) + "\n")
			continue
		}
		if limit >= 0 && len(ids) > limit {
			ids = ids[:limit]
		}
		b.WriteString(strings.Join(ids, " ") + "\n")
	}
	return b.String()
}

// idWords normalises term ids ("007" is 7).
func idWords(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		v, _ := strconv.ParseUint(f, 10, 64)
		out = append(out, strconv.FormatUint(v, 10))
	}
	return out
}

func textWords(s string) []string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = ' '
		}
	}
	return strings.Fields(string(b))
}

// lines splits a file's content into lines as xsect reads them.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func devices(t *testing.T) []string {
	if gpurt.Available() == nil {
		return []string{"cpu", "gpu", "auto"}
	}
	return []string{"cpu", "auto"}
}

func TestQueryIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var docs, queries []string
	for range 400 {
		var d []string
		for range rng.IntN(8) {
			d = append(d, strconv.Itoa(rng.IntN(30)))
		}
		if rng.IntN(3) > 0 {
			d = append(d, "0", "1")
		}
		docs = append(docs, strings.Join(d, " "))
	}
	docs = append(docs, "", "29 5 5 29")
	for range 300 {
		var q []string
		for range rng.IntN(4) {
			q = append(q, strconv.Itoa(rng.IntN(35)))
		}
		queries = append(queries, strings.Join(q, "  "))
	}
	queries = append(queries, "", "0", "0 0", "1 0 1", "29", "34", "4294967295", "99999999999999", "\t007 1\r", "0 1 2 3 4 5 6")
	dir := t.TempDir()
	docsPath := filepath.Join(dir, "docs.sets")
	os.WriteFile(docsPath, []byte(strings.Join(docs, "\n")+"\n"), 0o644)
	// The same documents gzip-compressed build the same index.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Join(docs, "\n") + "\n"))
	zw.Close()
	gzPath := filepath.Join(dir, "docs.sets.gz")
	os.WriteFile(gzPath, z.Bytes(), 0o644)
	qPath := filepath.Join(dir, "q.sets")
	os.WriteFile(qPath, []byte(strings.Join(queries, "\n")+"\n"), 0o644)
	ix := filepath.Join(dir, "docs.idx")
	if code, _, stderr := run(t, "index", "build", docsPath, "-o", ix); code != ExitOK {
		t.Fatalf("index build: %d %s", code, stderr)
	}
	ixGz := filepath.Join(dir, "gz.idx")
	if code, _, stderr := run(t, "index", "build", gzPath, "-o", ixGz, "--dense-ratio", "-1"); code != ExitOK {
		t.Fatalf("index build: %d %s", code, stderr)
	}
	for _, index := range []string{ix, ixGz} {
		for _, device := range devices(t) {
			for _, tc := range []struct {
				flags []string
				count bool
				limit int
			}{{nil, false, -1}, {[]string{"--count"}, true, -1}, {[]string{"--limit", "2"}, false, 2}, {[]string{"--limit", "0"}, false, 0}} {
				args := append([]string{"query", index, qPath, "--device", device, "--threads", "3"}, tc.flags...)
				code, stdout, stderr := run(t, args...)
				want := refQueries(docs, queries, idWords, tc.count, tc.limit)
				if code != ExitOK || stdout != want {
					t.Fatalf("%v: code %d, stderr %q\n got %q\nwant %q", args, code, stderr, stdout[:min(len(stdout), 300)], want[:min(len(want), 300)])
				}
			}
		}
	}
	// -o writes the same; --repeat does not change the output.
	out := filepath.Join(dir, "out.txt")
	if code, _, stderr := run(t, "query", ix, qPath, "--count", "--repeat", "3", "--timings", "--explain", "-o", out); code != ExitOK ||
		readString(t, out) != refQueries(docs, queries, idWords, true, -1) || !strings.Contains(stderr, "timings:") || !strings.Contains(stderr, "svs") {
		t.Fatalf("-o: %d %s", code, stderr)
	}
	code, stdout, _ := run(t, "index", "info", ix)
	if code != ExitOK || !strings.Contains(stdout, "402 documents, 30 terms") {
		t.Errorf("index info: %d %q", code, stdout)
	}
}

func TestQueryText(t *testing.T) {
	docs := []string{"The cat sat on the mat.", "", "A DOG and a cat", "dogs, cats & mice!", "caf\xc3\xa9 au lait 42", "the the the"}
	queries := []string{"the cat", "CAT", "cat dog", "", "  ...  ", "mice", "zebra", "the zebra", "caf 42", "lait caf\xc3\xa9", "a", "The the THE"}
	dir := t.TempDir()
	docsPath := filepath.Join(dir, "docs.txt")
	os.WriteFile(docsPath, []byte(strings.Join(docs, "\r\n")), 0o644) // no final newline, CRLF
	qPath := filepath.Join(dir, "q.txt")
	os.WriteFile(qPath, []byte(strings.Join(queries, "\n")), 0o644)
	ix := filepath.Join(dir, "t.idx")
	if code, _, stderr := run(t, "index", "build", "--text", docsPath, "-o", ix); code != ExitOK {
		t.Fatalf("index build --text: %d %s", code, stderr)
	}
	for _, device := range devices(t) {
		for _, count := range []bool{false, true} {
			args := []string{"query", ix, qPath, "--device", device}
			if count {
				args = append(args, "--count")
			}
			code, stdout, stderr := run(t, args...)
			if want := refQueries(docs, queries, textWords, count, -1); code != ExitOK || stdout != want {
				t.Fatalf("%v: %d %s\n got %q\nwant %q", args, code, stderr, stdout, want)
			}
		}
	}
}

func TestQueryErrors(t *testing.T) {
	dir := t.TempDir()
	docs := writeFile(t, "docs.sets", "1 2\n2 3\n")
	ix := filepath.Join(dir, "ok.idx")
	if code, _, stderr := run(t, "index", "build", docs, "-o", ix); code != ExitOK {
		t.Fatal(stderr)
	}
	data, _ := os.ReadFile(ix)
	damaged := filepath.Join(dir, "damaged.idx")
	d := bytes.Clone(data)
	d[len(d)-1] ^= 1
	os.WriteFile(damaged, d, 0o644)
	truncated := filepath.Join(dir, "cut.idx")
	os.WriteFile(truncated, data[:len(data)-3], 0o644)
	q := writeFile(t, "q.sets", "1 2\n")
	badQ := writeFile(t, "bad.sets", "1 2\n\n3 x4\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad query", []string{"query", ix, badQ}, ExitUsage, "bad.sets:3:3"},
		{"negative term", []string{"query", ix, writeFile(t, "neg.sets", "-1\n")}, ExitUsage, "neg.sets:1:1"},
		{"damaged", []string{"query", damaged, q}, ExitUsage, "damaged.idx: damaged index file"},
		{"truncated", []string{"query", truncated, q}, ExitUsage, "cut.idx: truncated"},
		{"foreign", []string{"query", docs, q}, ExitUsage, "not an xsect index"},
		{"missing index", []string{"query", filepath.Join(dir, "none.idx"), q}, ExitUsage, "none.idx"},
		{"missing queries", []string{"query", ix, filepath.Join(dir, "none.q")}, ExitUsage, "none.q"},
		{"arity", []string{"query", ix}, ExitUsage, "INDEX and QUERIES"},
		{"limit", []string{"query", ix, q, "--limit", "-2"}, ExitUsage, "--limit"},
		{"device", []string{"query", ix, q, "--device", "tpu"}, ExitUsage, "tpu"},
		{"threads", []string{"query", ix, q, "--threads", "-1"}, ExitUsage, "--threads"},
		{"no -o", []string{"index", "build", docs}, ExitUsage, "-o INDEX"},
		{"no subcommand", []string{"index"}, ExitUsage, "build or info"},
		{"bad docs", []string{"index", "build", writeFile(t, "bad.docs", "1 a\n"), "-o", filepath.Join(dir, "x.idx")}, ExitUsage, "bad.docs:1:3"},
		{"no term 2^32-1", []string{"index", "build", writeFile(t, "max.docs", "4294967295\n"), "-o", filepath.Join(dir, "y.idx")}, ExitUsage, "4294967295"},
		{"over budget", []string{"index", "build", writeFile(t, "huge.docs", "0 4294967294\n"), "-o", filepath.Join(dir, "z.idx"), "--memory", "64"}, ExitFailure, "memory budget"},
		{"damaged info", []string{"index", "info", damaged}, ExitUsage, "damaged.idx"},
	} {
		code, stdout, stderr := run(t, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want %d and %q", tc.name, code, stdout, stderr, tc.code, tc.want)
		}
	}
	// A failed build leaves no file behind.
	for _, name := range []string{"x.idx", "y.idx", "z.idx"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written by a failed build", name)
		}
	}
	if code, _, stderr := run(t, "query", ix, q, "--device", "gpu"); gpurt.Available() != nil && (code == ExitOK || !strings.Contains(stderr, "cannot run")) {
		t.Errorf("--device gpu without a GPU: %d %q", code, stderr)
	}
}

// An index given as "-" is read from standard input, a redirected file
// or a pipe, as every command reads "-" (it was opened as a file named
// "-"); standard input given twice, or damaged, is a clear error.
func TestQueryIndexStdin(t *testing.T) {
	ix := buildIndexFile(t, "1 2\n2 3\n2\n", false)
	data, _ := os.ReadFile(ix)
	q := writeFile(t, "q.sets", "2\n1 2\n3 1\n")
	_, wantQuery, _ := run(t, "query", ix, q)
	_, wantInfo, _ := run(t, "index", "info", ix)
	if wantQuery != "0 1 2\n0\n\n" || !strings.HasPrefix(wantInfo, ix+": ") {
		t.Fatalf("from the file: %q, %q", wantQuery, wantInfo)
	}
	pipe := func(data []byte) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.Write(data)
			w.Close()
		}()
		t.Cleanup(func() { r.Close() })
		return r
	}
	redirect := func() *os.File {
		f, err := os.Open(ix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for how, stdin := range map[string]func() *os.File{"pipe": func() *os.File { return pipe(data) }, "file": redirect} {
		if code, stdout, stderr := runWith(t, stdin(), "query", "-", q); code != ExitOK || stdout != wantQuery {
			t.Errorf("query - (%s): %d %q %q; want %q", how, code, stdout, stderr, wantQuery)
		}
		want := "standard input: " + strings.TrimPrefix(wantInfo, ix+": ")
		if code, stdout, stderr := runWith(t, stdin(), "index", "info", "-"); code != ExitOK || stdout != want {
			t.Errorf("index info - (%s): %d %q %q; want %q", how, code, stdout, stderr, want)
		}
	}
	damaged := bytes.Clone(data)
	damaged[len(damaged)-1] ^= 1
	for _, tc := range []struct {
		args  []string
		stdin []byte
		want  string
	}{
		{[]string{"query", "-", "-"}, data, "xsect query: standard input (-) given twice"},
		{[]string{"index", "info", "-"}, damaged, "xsect index: standard input: damaged index file"},
		{[]string{"query", "-", q}, nil, "xsect query: standard input: "},
	} {
		code, stdout, stderr := runWith(t, pipe(tc.stdin), tc.args...)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%q: %d %q %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestQueryRealData answers the TREC 2005 efficiency log on gcide through
// the command line: the counts of the queries of 2+ terms sum to the
// anchors' 2,451,938.
func TestQueryRealData(t *testing.T) {
	docs := settest.SharedData(t, "ir", "gcide", "gcide.docs.sets.gz")
	queries := settest.SharedData(t, "ir", "gcide", "gcide.q.topics.terabyte05.efficiency.txt.sets")
	ix := filepath.Join(t.TempDir(), "gcide.idx")
	if code, _, stderr := run(t, "index", "build", docs, "-o", ix); code != ExitOK {
		t.Fatal(stderr)
	}
	code, stdout, stderr := run(t, "query", ix, queries, "--count")
	if code != ExitOK {
		t.Fatal(stderr)
	}
	qlines := lines(readString(t, queries))
	counts := lines(stdout)
	if len(counts) != len(qlines) {
		t.Fatalf("%d lines for %d queries", len(counts), len(qlines))
	}
	sum := 0
	for i, c := range counts {
		n, _ := strconv.Atoi(c)
		if len(strings.Fields(qlines[i])) >= 2 {
			sum += n
		}
	}
	if sum != 2451938 {
		t.Errorf("counts sum to %d, want 2451938", sum)
	}
	// The ids agree with the counts.
	_, ids, _ := run(t, "query", ix, queries)
	for i, l := range lines(ids) {
		if n, _ := strconv.Atoi(counts[i]); len(strings.Fields(l)) != n || !slices.IsSortedFunc(strings.Fields(l), func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		}) {
			t.Fatalf("query %d: %d ids, count %d", i, len(strings.Fields(l)), n)
		}
	}
}
