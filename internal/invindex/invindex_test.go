package invindex

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// randomDocs returns n documents over terms term ids, each of up to
// maxLen terms, some terms common (the first few are in most documents),
// some documents empty.
func randomDocs(rng *rand.Rand, n, terms, maxLen int) *sets.Collection {
	c := sets.New()
	for range n {
		var d []uint32
		for t := range min(terms, 4) {
			if rng.IntN(4) > 0 {
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

// referenceLists inverts docs with maps: term -> sorted doc ids.
func referenceLists(docs *sets.Collection) map[uint32][]uint32 {
	m := map[uint32][]uint32{}
	for d := range docs.Len() {
		for _, t := range docs.Set(d) {
			m[t] = append(m[t], uint32(d))
		}
	}
	return m
}

func checkIndex(t *testing.T, ix *Index, docs *sets.Collection, ratio int) {
	t.Helper()
	if err := ix.Validate(); err != nil {
		t.Fatal(err)
	}
	if ix.NumDocs != docs.Len() {
		t.Fatalf("%d docs, want %d", ix.NumDocs, docs.Len())
	}
	ref := referenceLists(docs)
	maxT := -1
	for tm := range ref {
		maxT = max(maxT, int(tm))
	}
	if ix.Terms() != maxT+1 {
		t.Fatalf("%d terms, want %d", ix.Terms(), maxT+1)
	}
	for tm := range ix.Terms() {
		got, want := ix.List(uint32(tm)), ref[uint32(tm)]
		if !slices.Equal(got, want) {
			t.Fatalf("term %d: list %v, want %v", tm, got, want)
		}
		dense := ratio > 0 && len(want) > 0 && len(want)*ratio >= docs.Len()
		bm := ix.Bitmap(uint32(tm))
		if (bm != nil) != dense {
			t.Fatalf("term %d (%d of %d docs, ratio %d): bitmap %v", tm, len(want), docs.Len(), ratio, bm != nil)
		}
		for d := range docs.Len() {
			if bm != nil && (bm[d/64]>>(d%64)&1 == 1) != slices.Contains(want, uint32(d)) {
				t.Fatalf("term %d: bitmap bit %d wrong", tm, d)
			}
		}
	}
	if ix.Len(uint32(ix.Terms())) != 0 || ix.Len(NoTerm) != 0 || ix.Bitmap(NoTerm) != nil || ix.DenseSlot(NoTerm) != -1 {
		t.Fatal("a term beyond the index has a list")
	}
}

func TestFromDocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, terms, maxLen, ratio int }{
		{0, 1, 0, 32}, {1, 1, 0, 32}, {1, 5, 3, 32}, {50, 10, 5, 32}, {300, 1000, 20, 32}, {300, 1000, 20, 4},
		{300, 1000, 20, -1}, {1000, 50, 8, 1}, {129, 3, 2, 2},
	} {
		docs := randomDocs(rng, tc.n, tc.terms, tc.maxLen)
		ix, err := FromDocs(docs, BuildOptions{DenseRatio: tc.ratio})
		if err != nil {
			t.Fatal(err)
		}
		ratio := tc.ratio
		if ratio == 0 {
			ratio = DefaultDenseRatio
		}
		checkIndex(t, ix, docs, ratio)
		if ix.HasVocabulary() || ix.Lookup([]byte("a")) != NoTerm {
			t.Error("an id index has a vocabulary")
		}
	}
}

func TestFromDocsExtremes(t *testing.T) {
	// Term 0 only, empty documents around it.
	docs := sets.FromSets([]uint32{}, []uint32{0}, []uint32{}, []uint32{0})
	ix, err := FromDocs(docs, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, ix, docs, DefaultDenseRatio)
	// No terms at all.
	ix, err = FromDocs(sets.FromSets([]uint32{}, []uint32{}), BuildOptions{})
	if err != nil || ix.Terms() != 0 || ix.NumDocs != 2 {
		t.Fatalf("empty documents: %v, %v", ix, err)
	}
	// The id 2^32-1 cannot be a term.
	if _, err := FromDocs(sets.FromSets([]uint32{NoTerm}), BuildOptions{}); err == nil {
		t.Error("term 2^32-1 accepted")
	}
}

func TestBuildMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	docs := randomDocs(rng, 500, 300, 30)
	ix, err := FromDocs(docs, BuildOptions{DenseRatio: 8})
	if err != nil {
		t.Fatal(err)
	}
	if pred := BuildMemory(docs.Len(), ix.Terms(), int64(len(ix.Postings)), BuildOptions{DenseRatio: 8}); pred < ix.Memory() {
		t.Errorf("predicted %d bytes, the index takes %d", pred, ix.Memory())
	}
}

// encode returns the file bytes of ix.
func encode(t testing.TB, ix *Index) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := ix.WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo: %d bytes, %v (wrote %d)", n, err, b.Len())
	}
	return b.Bytes()
}

func sameIndex(t *testing.T, got, want *Index) {
	t.Helper()
	if got.NumDocs != want.NumDocs || !slices.Equal(got.Offsets, want.Offsets) || !slices.Equal(got.Postings, want.Postings) ||
		!slices.Equal(got.DenseTerms, want.DenseTerms) || !slices.Equal(got.Bitmaps, want.Bitmaps) ||
		!slices.Equal(got.WordOffsets, want.WordOffsets) || !bytes.Equal(got.Words, want.Words) ||
		got.HasVocabulary() != want.HasVocabulary() {
		t.Fatalf("decoded index differs: %v, want %v", got, want)
	}
	for tm := range want.Terms() {
		if got.DenseSlot(uint32(tm)) != want.DenseSlot(uint32(tm)) {
			t.Fatalf("term %d: slot %d, want %d", tm, got.DenseSlot(uint32(tm)), want.DenseSlot(uint32(tm)))
		}
	}
}

func testIndexes(t testing.TB) []*Index {
	rng := rand.New(rand.NewPCG(5, 6))
	var out []*Index
	for _, ratio := range []int{-1, 0, 3} {
		ix, err := FromDocs(randomDocs(rng, 200, 150, 12), BuildOptions{DenseRatio: ratio})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ix)
	}
	ix, err := FromText(strings.NewReader("The cat sat\non the MAT, the end.\n\nzebra 42 cat"), "text", BuildOptions{DenseRatio: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := FromDocs(sets.New(), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	emptyText, err := FromText(strings.NewReader(""), "empty", BuildOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, ix, empty, emptyText)
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for i, ix := range testIndexes(t) {
		data := encode(t, ix)
		got, err := Decode(data, "mem")
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		sameIndex(t, got, ix)
		if again := encode(t, got); !bytes.Equal(again, data) {
			t.Fatalf("index %d: re-encoding differs", i)
		}
		// Unaligned: decoded into copies.
		un := make([]byte, len(data)+1)[1:]
		copy(un, data)
		got, err = Decode(un, "unaligned")
		if err != nil {
			t.Fatal(err)
		}
		sameIndex(t, got, ix)
		// From a file: mapped where possible, and read.
		path := filepath.Join(dir, "ix")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err = Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sameIndex(t, got, ix)
		if got.Path != path {
			t.Errorf("Path %q", got.Path)
		}
		if err := got.Close(); err != nil {
			t.Error(err)
		}
		if err := got.Close(); err != nil {
			t.Error("second Close:", err)
		}
		got, err = readFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sameIndex(t, got, ix)
		got, err = Read(bytes.NewReader(data), "reader", -1)
		if err != nil {
			t.Fatal(err)
		}
		sameIndex(t, got, ix)
	}
}

// TestCopyDecode checks the decoding that unaligned data and big-endian
// machines use, on this machine.
func TestCopyDecode(t *testing.T) {
	for _, ix := range testIndexes(t) {
		data := encode(t, ix)
		h, err := decodeHeader(data, "x", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(u64s(data[h.at[0]:h.at[0]+h.length[0]], false), ix.Offsets) ||
			!slices.Equal(u32s(data[h.at[1]:h.at[1]+h.length[1]], false), ix.Postings) {
			t.Fatal("copying decode differs")
		}
	}
}

func badInput(err error) bool {
	var pe *setio.ParseError
	return errors.Is(err, setio.ErrBadInput) && errors.As(err, &pe)
}

// TestDamaged changes every byte of small index files, cuts them at every
// length and adds bytes: each must be refused with an error naming the
// file.
func TestDamaged(t *testing.T) {
	for i, ix := range testIndexes(t) {
		data := encode(t, ix)
		for at := range data {
			for _, flip := range []byte{1, 0x80} {
				d := bytes.Clone(data)
				d[at] ^= flip
				if _, err := Decode(d, "damaged.idx"); err == nil || !badInput(err) || !strings.Contains(err.Error(), "damaged.idx") {
					t.Fatalf("index %d: byte %d ^ %#x: %v", i, at, flip, err)
				}
			}
		}
		for n := range len(data) {
			if _, err := Decode(data[:n], "cut.idx"); err == nil || !badInput(err) || !strings.Contains(err.Error(), "cut.idx") {
				t.Fatalf("index %d cut at %d: %v", i, n, err)
			}
		}
		if _, err := Decode(append(bytes.Clone(data), 0), "long.idx"); err == nil || !strings.Contains(err.Error(), "after its end") {
			t.Fatalf("index %d with a byte more: %v", i, err)
		}
	}
}

func TestForeign(t *testing.T) {
	var bin bytes.Buffer
	if err := setio.WriteBinary(&bin, sets.FromSets([]uint32{1, 2})); err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{nil, []byte("1 2 3\n4 5\n"), bin.Bytes(), Magic[:3], bytes.Repeat([]byte{0}, 500)} {
		_, err := Decode(data, "foreign")
		if err == nil || !badInput(err) || !strings.Contains(err.Error(), "foreign") {
			t.Errorf("%q: %v", data, err)
		}
	}
	_, err := Decode(bin.Bytes(), "foreign")
	if !strings.Contains(err.Error(), "not an xsect index") {
		t.Errorf("a sets file: %v", err)
	}
	// A later version is named as such.
	ix, _ := FromDocs(sets.FromSets([]uint32{1}), BuildOptions{})
	data := encode(t, ix)
	data[8] = 2
	fixHeaderCRC(data)
	if _, err := Decode(data, "v2"); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil || badInput(err) {
		t.Errorf("a missing file: %v", err)
	}
}

func fixHeaderCRC(b []byte) {
	binary.LittleEndian.PutUint32(b[188:], crc32.Checksum(b[:188], castagnoli))
}

// TestValidate breaks each invariant of a decoded index, with checksums
// that match (as a writer with a bug would), and expects a refusal.
func TestValidate(t *testing.T) {
	docs := sets.FromSets([]uint32{0, 1, 2}, []uint32{1, 2}, []uint32{2}, []uint32{0, 2})
	base := func() *Index {
		ix, err := FromDocs(docs, BuildOptions{DenseRatio: 2})
		if err != nil {
			t.Fatal(err)
		}
		ix.WordOffsets = []uint64{0, 1, 3, 6}
		ix.Words = []byte("abcdef")
		return ix
	}
	if err := base().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, breakIt := range map[string]func(ix *Index){
		"unsorted list":      func(ix *Index) { l := ix.List(2); l[0], l[1] = l[1], l[0] },
		"duplicate":          func(ix *Index) { l := ix.List(2); l[1] = l[0] },
		"doc out of range":   func(ix *Index) { ix.NumDocs = 3 },
		"offsets decrease":   func(ix *Index) { ix.Offsets[1], ix.Offsets[2] = ix.Offsets[2], ix.Offsets[1] },
		"bitmap bit":         func(ix *Index) { ix.Bitmaps[0] ^= 1 << 3 },
		"bitmap moved":       func(ix *Index) { ix.Bitmaps[0] ^= 1<<3 | 1 },
		"dense order":        func(ix *Index) { ix.DenseTerms[0], ix.DenseTerms[1] = ix.DenseTerms[1], ix.DenseTerms[0] },
		"word order":         func(ix *Index) { ix.Words = []byte("cbadef") },
		"word byte":          func(ix *Index) { ix.Words[0] = 'A' },
		"empty word":         func(ix *Index) { ix.WordOffsets = []uint64{0, 0, 3, 6} },
		"word offsets short": func(ix *Index) { ix.WordOffsets = ix.WordOffsets[:3] },
	} {
		ix := base()
		breakIt(ix)
		if err := ix.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		// Written with valid checksums, the file is refused too.
		if _, err := Decode(encode(t, ix), "broken"); err == nil || !badInput(err) {
			t.Errorf("%s: decoded: %v", name, err)
		}
	}
}

// tokens is the reference tokenizer: lowercase, then [a-z0-9]+ runs.
var wordRE = regexp.MustCompile(`[a-z0-9]+`)

func refTokens(s string) []string {
	return wordRE.FindAllString(strings.ToLower(asciiOnlyLower(s)), -1)
}

// asciiOnlyLower lowercases ASCII letters only: strings.ToLower would
// also fold non-ASCII letters, which are separators here.
func asciiOnlyLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		} else if c >= 0x80 {
			b[i] = ' '
		}
	}
	return string(b)
}

func TestTokenize(t *testing.T) {
	for _, s := range []string{"", "a", "Hello, World!", "  x1y2 Z3 ", "café crème", "İstanbul K", "a\x00b\tc\r\nD", "ABC-def_ghi", "ÀÉ"} {
		var got []string
		Tokenize([]byte(s), nil, func(w []byte) { got = append(got, string(w)) })
		want := refTokens(s)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", s, got, want)
		}
	}
}

// refText builds the reference documents of a text: lines split on '\n'
// (no document after a final newline), words by refTokens.
func refText(s string) (docs [][]string) {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if strings.HasSuffix(s, "\n") {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		docs = append(docs, refTokens(l))
	}
	return docs
}

func checkText(t *testing.T, ix *Index, text string) {
	t.Helper()
	if err := ix.Validate(); err != nil {
		t.Fatal(err)
	}
	docs := refText(text)
	if ix.NumDocs != len(docs) {
		t.Fatalf("%d docs, want %d", ix.NumDocs, len(docs))
	}
	vocab := map[string][]uint32{}
	for d, ws := range docs {
		for _, w := range ws {
			if l := vocab[w]; len(l) == 0 || l[len(l)-1] != uint32(d) {
				vocab[w] = append(l, uint32(d))
			}
		}
	}
	words := make([]string, 0, len(vocab))
	for w := range vocab {
		words = append(words, w)
	}
	slices.Sort(words)
	if ix.Terms() != len(words) || !ix.HasVocabulary() {
		t.Fatalf("%d terms, want %d", ix.Terms(), len(words))
	}
	for id, w := range words {
		if string(ix.Word(uint32(id))) != w || ix.Lookup([]byte(w)) != uint32(id) {
			t.Fatalf("term %d: word %q, lookup %d; want %q", id, ix.Word(uint32(id)), ix.Lookup([]byte(w)), w)
		}
		if !slices.Equal(ix.List(uint32(id)), vocab[w]) {
			t.Fatalf("%q: %v, want %v", w, ix.List(uint32(id)), vocab[w])
		}
	}
	for _, w := range []string{"", "zzzzzz", "A", "0", "aa", "a b"} {
		if _, ok := vocab[w]; !ok && ix.Lookup([]byte(w)) != NoTerm {
			t.Errorf("unknown word %q found", w)
		}
	}
}

func TestFromText(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	texts := []string{
		"", "\n", "\n\n", "a", "a\n", "A a A\nb", "The quick brown fox\r\njumps over THE lazy dog.\n\n   \nend",
		"x1 1x 007 7\nCafé naïve résumé\n", "one,two;three:four\tfive\vsix\fseven\x00eight\n",
	}
	// Random text with long lines and long words, across read boundaries.
	var b strings.Builder
	alphabet := "abcXYZ019 ,.\n\t-é"
	for range 300000 {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		if rng.IntN(50000) == 0 {
			b.WriteString(strings.Repeat("w", 1<<17))
		}
	}
	texts = append(texts, b.String())
	for _, text := range texts {
		ix, err := FromText(strings.NewReader(text), "t", BuildOptions{DenseRatio: 3}, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkText(t, ix, text)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(text))
		zw.Close()
		ix, err = FromText(&z, "t.gz", BuildOptions{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkText(t, ix, text)
	}
}

func TestFromTextErrors(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Repeat("hello world\n", 1000)))
	zw.Close()
	cut := z.Bytes()[:z.Len()-10]
	if _, err := FromText(bytes.NewReader(cut), "cut.gz", BuildOptions{}, 0); err == nil || !badInput(err) || !strings.Contains(err.Error(), "cut.gz") {
		t.Errorf("truncated gzip: %v", err)
	}
	var le *TextLimitError
	big := strings.Repeat("some words here and there\n", 10000)
	if _, err := FromText(strings.NewReader(big), "big", BuildOptions{}, 4096); !errors.As(err, &le) || le.File != "big" {
		t.Errorf("over the limit: %v", err)
	}
}
