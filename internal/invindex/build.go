package invindex

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"syscall"

	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// DefaultDenseRatio is the builders' default: a posting list gets a
// bitmap beside it when it holds at least 1/32 of the documents, where
// the bitmap takes no more memory than the list itself and a membership
// test is one bit instead of a search.
const DefaultDenseRatio = 32

// BuildOptions configure the builders.
type BuildOptions struct {
	// DenseRatio r gives a bitmap to every list of length l with
	// l*r >= documents (0: DefaultDenseRatio; negative: no bitmaps).
	DenseRatio int
}

func (o BuildOptions) ratio() int {
	if o.DenseRatio == 0 {
		return DefaultDenseRatio
	}
	return o.DenseRatio
}

// BuildMemory predicts the bytes FromDocs allocates for an index of docs
// documents, terms terms and postings postings: offsets twice (the lists'
// and the fill cursors), the postings, and bitmaps for at most
// min(terms, postings*ratio/docs) dense lists.
func BuildMemory(docs, terms int, postings int64, opt BuildOptions) int64 {
	m := 16*int64(terms+1) + 4*postings
	if r := opt.ratio(); r > 0 && docs > 0 {
		dense := min(int64(terms), postings*int64(r)/int64(docs)+1)
		m += dense * (8*int64((docs+63)/64) + 4)
		m += 4 * int64(terms) // the slot of every term
	}
	return m
}

// MaxTerm returns the largest element of the collection, or -1 when it
// has none: the index built from it has MaxTerm+1 terms.
func MaxTerm(docs *sets.Collection) int64 {
	m := int64(-1)
	for i := range docs.Len() {
		if s := docs.Set(i); len(s) > 0 {
			m = max(m, int64(s[len(s)-1]))
		}
	}
	return m
}

// FromDocs builds the index of a collection of documents: document i is
// docs.Set(i), its terms strictly increasing (as setio loads them). The
// index has MaxTerm(docs)+1 terms; a term id of 2^32-1 (NoTerm) is an
// error.
func FromDocs(docs *sets.Collection, opt BuildOptions) (*Index, error) {
	if docs.Len() > MaxDocs {
		return nil, fmt.Errorf("invindex: %d documents, more than 2^32", docs.Len())
	}
	maxTerm := MaxTerm(docs)
	if maxTerm >= NoTerm {
		return nil, fmt.Errorf("invindex: term id %d: an index holds term ids up to %d", maxTerm, uint32(NoTerm-1))
	}
	terms := int(maxTerm + 1)
	ix := &Index{NumDocs: docs.Len(), Offsets: make([]uint64, terms+1)}
	for _, t := range docs.Elements {
		ix.Offsets[t+1]++
	}
	for t := range terms {
		ix.Offsets[t+1] += ix.Offsets[t]
	}
	ix.Postings = make([]uint32, len(docs.Elements))
	fill := slices.Clone(ix.Offsets[:terms])
	for d := range docs.Len() {
		for _, t := range docs.Set(d) {
			ix.Postings[fill[t]] = uint32(d)
			fill[t]++
		}
	}
	ix.addBitmaps(opt)
	return ix, nil
}

// addBitmaps gives a bitmap to every list dense enough for opt.
func (ix *Index) addBitmaps(opt BuildOptions) {
	r := opt.ratio()
	if r <= 0 || ix.NumDocs == 0 {
		return
	}
	for t := range ix.Terms() {
		if n := ix.Len(uint32(t)); n > 0 && int64(n)*int64(r) >= int64(ix.NumDocs) {
			ix.DenseTerms = append(ix.DenseTerms, uint32(t))
		}
	}
	w := ix.BitmapWords()
	ix.Bitmaps = make([]uint64, len(ix.DenseTerms)*w)
	for s, t := range ix.DenseTerms {
		bm := ix.Bitmaps[s*w : (s+1)*w]
		for _, d := range ix.List(t) {
			bm[d>>6] |= 1 << (d & 63)
		}
	}
	ix.buildDense()
}

// IsWordByte reports whether c is part of a word once lowercased: a-z,
// A-Z or 0-9.
func IsWordByte(c byte) bool {
	return c-'a' < 26 || c-'A' < 26 || c-'0' < 10
}

func lower(c byte) byte {
	if c-'A' < 26 {
		return c + 'a' - 'A'
	}
	return c
}

// Tokenize calls fn with each word of s: the maximal runs of ASCII
// letters and digits, lowercased (every other byte separates words). The
// slice passed to fn is only valid during the call; buf, if not nil, is
// used to lowercase into.
func Tokenize(s []byte, buf []byte, fn func(word []byte)) []byte {
	for i := 0; i < len(s); {
		if !IsWordByte(s[i]) {
			i++
			continue
		}
		j := i
		upper := false
		for j < len(s) && IsWordByte(s[j]) {
			upper = upper || s[j]-'A' < 26
			j++
		}
		w := s[i:j]
		if upper {
			buf = buf[:0]
			for _, c := range w {
				buf = append(buf, lower(c))
			}
			w = buf
		}
		fn(w)
		i = j
	}
	return buf
}

// maxWordBytes bounds one word: longer runs of letters and digits (a
// base64 blob, a hash) are still words, but a vocabulary of such is
// almost certainly not text; 2^31 keeps every offset arithmetic safe.
const maxWordBytes = math.MaxInt32

// TextLimitError is text whose index would need more memory than the
// builder's limit.
type TextLimitError struct {
	File  string
	Line  int   // the line being read when the limit was reached
	Need  int64 // bytes used by then
	Limit int64
}

func (e *TextLimitError) Error() string {
	return fmt.Sprintf("%s: by line %d the index needs more than %d bytes, its memory limit", e.File, e.Line, e.Limit)
}

// FromText builds the index of raw text, one document per line: a final
// line without a newline is a document too, and an empty input has none.
// The text may be gzip-compressed. Words are runs of ASCII letters and
// digits, lowercased (Tokenize); term ids are the words' alphabetical
// ranks. limit, if positive, bounds the bytes the build may use: more is
// a *TextLimitError. name is used in errors.
func FromText(r io.Reader, name string, opt BuildOptions, limit int64) (*Index, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var src io.Reader = br
	gzipped := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &setio.ParseError{File: name, Msg: "bad gzip header: " + err.Error(), Err: err}
		}
		defer zr.Close()
		src, gzipped = zr, true
	}
	// Pass 1: words get provisional ids in order of appearance, documents
	// are sets of those.
	ids := map[string]uint32{}
	var words []string
	var wordBytes int64
	docs := sets.New()
	var doc []uint32
	var w []byte // the word being read, lowercased
	line, pending := 1, false
	used := func() int64 {
		// The map and the strings (about 64 bytes a word beyond its
		// bytes), the documents, and the index to come.
		return 80*int64(len(words)) + 2*wordBytes + 12*int64(len(docs.Elements)+len(doc)) + 8*int64(docs.Len())
	}
	endWord := func() error {
		if len(w) == 0 {
			return nil
		}
		id, ok := ids[string(w)]
		if !ok {
			if len(words) == NoTerm {
				return &setio.ParseError{File: name, Line: line, Msg: "more than 2^32-1 distinct words"}
			}
			id = uint32(len(words))
			s := string(w)
			ids[s] = id
			words = append(words, s)
			wordBytes += int64(len(s))
		}
		doc = append(doc, id)
		w = w[:0]
		return nil
	}
	endDoc := func() error {
		if docs.Len() >= MaxDocs {
			return &setio.ParseError{File: name, Line: line, Msg: "more than 2^32 documents"}
		}
		slices.Sort(doc)
		doc = slices.Compact(doc)
		docs.Add(doc)
		doc = doc[:0]
		if limit > 0 && used() > limit {
			return &TextLimitError{File: name, Line: line, Need: used(), Limit: limit}
		}
		return nil
	}
	buf := make([]byte, 1<<20)
	for {
		n, rerr := src.Read(buf)
		for _, c := range buf[:n] {
			pending = true
			if IsWordByte(c) {
				if len(w) == maxWordBytes {
					return nil, &setio.ParseError{File: name, Line: line, Msg: "a word of more than 2^31-1 bytes"}
				}
				w = append(w, lower(c))
				continue
			}
			if err := endWord(); err != nil {
				return nil, err
			}
			if c == '\n' {
				if err := endDoc(); err != nil {
					return nil, err
				}
				line, pending = line+1, false
			}
		}
		if limit > 0 && used()+int64(len(w)) > limit {
			return nil, &TextLimitError{File: name, Line: line, Need: used(), Limit: limit}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			var errno syscall.Errno
			if gzipped && !errors.As(rerr, &errno) {
				return nil, &setio.ParseError{File: name, Line: line, Msg: "corrupt gzip data: " + rerr.Error(), Err: rerr}
			}
			return nil, fmt.Errorf("%s: %w", name, rerr)
		}
	}
	if err := endWord(); err != nil {
		return nil, err
	}
	if pending {
		if err := endDoc(); err != nil {
			return nil, err
		}
	}
	// Pass 2: alphabetical ids.
	order := make([]uint32, len(words))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return strings.Compare(words[a], words[b]) })
	rank := make([]uint32, len(words))
	for r, id := range order {
		rank[id] = uint32(r)
	}
	clear(ids)
	for i, t := range docs.Elements {
		docs.Elements[i] = rank[t]
	}
	for d := range docs.Len() {
		slices.Sort(docs.Set(d))
	}
	ix, err := FromDocs(docs, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Every word occurs in some document, so the index has a term for
	// each, the last word being the largest term.
	if ix.Terms() != len(words) {
		return nil, fmt.Errorf("invindex: internal error: %d terms for %d words", ix.Terms(), len(words))
	}
	ix.WordOffsets = make([]uint64, len(words)+1)
	ix.Words = make([]byte, 0, wordBytes)
	for r, id := range order {
		ix.Words = append(ix.Words, words[id]...)
		ix.WordOffsets[r+1] = uint64(len(ix.Words))
	}
	return ix, nil
}
