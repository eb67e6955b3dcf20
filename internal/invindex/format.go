package invindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"unsafe"

	"github.com/xsect/xsect/setio"
)

// The index file format, version 1 (docs/QUERY.md has the full layout).
// Little endian throughout: a 192-byte header, then six sections, each
// starting at a multiple of 64 bytes so that a mapped file is used in
// place (the arrays need 8-byte alignment, and 64 keeps SIMD loads within
// cache lines), zero padding between them, the file ending with the last
// section.
//
//	  0   8  magic "\x89XIDX\r\n\x1a"
//	  8   4  version (1)
//	 12   4  flags (bit 0: a vocabulary; others zero)
//	 16   8  documents
//	 24   8  terms
//	 32   8  postings
//	 40   8  dense terms (lists with a bitmap)
//	 48   8  vocabulary bytes
//	 56   8  file size
//	 64  48  the six sections' offsets, uint64 each
//	112  24  the six sections' CRC-32C (Castagnoli), uint32 each
//	136  52  zero
//	188   4  CRC-32C of header bytes [0, 188)
//
// Sections: offsets (terms+1 uint64), postings (uint32), dense terms
// (uint32), bitmaps (dense × ceil(documents/64) uint64), word offsets
// (terms+1 uint64, with a vocabulary; else empty), words (bytes). Every
// field follows from the counts and the data, so an index has exactly one
// encoding, and a reader checks them all.
const (
	headerSize   = 192
	sectionAlign = 64
	version      = 1

	flagVocabulary = 1 << 0
	knownFlags     = flagVocabulary

	numSections = 6
)

// Sections, in file order.
const (
	secOffsets = iota
	secPostings
	secDenseTerms
	secBitmaps
	secWordOffsets
	secWords
)

var sectionNames = [numSections]string{"offsets", "postings", "dense terms", "bitmaps", "word offsets", "words"}

// Magic starts every index file.
var Magic = [8]byte{0x89, 'X', 'I', 'D', 'X', '\r', '\n', 0x1a}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// header is a decoded header.
type header struct {
	flags                                 uint32
	docs, terms, postings, dense, vocabSz uint64
	size                                  uint64
	at, length                            [numSections]uint64
	crc                                   [numSections]uint32
}

// Bounds that keep every size computation far from overflow.
const (
	maxTerms    = NoTerm // ids 0 to 2^32-2
	maxPostings = 1 << 60
	maxVocab    = 1 << 60
)

func alignUp(x uint64) uint64 { return (x + sectionAlign - 1) &^ (sectionAlign - 1) }

// layout computes the sections' places from the counts, which must be
// within the bounds.
func layout(h *header) {
	words := (h.docs + 63) / 64
	h.length = [numSections]uint64{8 * (h.terms + 1), 4 * h.postings, 4 * h.dense, 8 * h.dense * words, 0, h.vocabSz}
	if h.flags&flagVocabulary != 0 {
		h.length[secWordOffsets] = 8 * (h.terms + 1)
	}
	at := uint64(headerSize)
	for i := range numSections {
		at = alignUp(at)
		h.at[i] = at
		at += h.length[i]
	}
	h.size = at
}

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, Magic[:])
	le := binary.LittleEndian
	le.PutUint32(b[8:], version)
	le.PutUint32(b[12:], h.flags)
	le.PutUint64(b[16:], h.docs)
	le.PutUint64(b[24:], h.terms)
	le.PutUint64(b[32:], h.postings)
	le.PutUint64(b[40:], h.dense)
	le.PutUint64(b[48:], h.vocabSz)
	le.PutUint64(b[56:], h.size)
	for i := range numSections {
		le.PutUint64(b[64+8*i:], h.at[i])
		le.PutUint32(b[112+4*i:], h.crc[i])
	}
	le.PutUint32(b[188:], crc32.Checksum(b[:188], castagnoli))
	return b
}

// badFile is the error for a file that is not a valid index.
func badFile(name, format string, args ...any) error {
	return &setio.ParseError{File: name, Msg: fmt.Sprintf(format, args...)}
}

// decodeHeader checks a header against the file's size.
func decodeHeader(b []byte, name string, size int64) (header, error) {
	var h header
	if len(b) < len(Magic) || !bytes.Equal(b[:len(Magic)], Magic[:]) {
		if len(b) < len(Magic) && bytes.HasPrefix(Magic[:], b) && len(b) > 0 {
			return h, badFile(name, "truncated index file: %d bytes", size)
		}
		return h, badFile(name, "not an xsect index file (it does not start with the index magic bytes; build one with 'xsect index build')")
	}
	if len(b) < headerSize {
		return h, badFile(name, "truncated index file: %d bytes, less than its %d-byte header", size, headerSize)
	}
	le := binary.LittleEndian
	if crc := crc32.Checksum(b[:188], castagnoli); crc != le.Uint32(b[188:]) {
		return h, badFile(name, "damaged index file: header checksum mismatch (header says %08x, data has %08x)", le.Uint32(b[188:]), crc)
	}
	if v := le.Uint32(b[8:]); v != version {
		return h, badFile(name, "index format version %d: this xsect reads version %d (rebuild the index with this xsect)", v, version)
	}
	h.flags = le.Uint32(b[12:])
	if h.flags&^knownFlags != 0 {
		return h, badFile(name, "unknown flags %#x in the index header", h.flags&^knownFlags)
	}
	h.docs, h.terms, h.postings = le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	h.dense, h.vocabSz = le.Uint64(b[40:]), le.Uint64(b[48:])
	switch {
	case h.docs > MaxDocs:
		return h, badFile(name, "damaged index file: %d documents, more than 2^32", h.docs)
	case h.terms > maxTerms:
		return h, badFile(name, "damaged index file: %d terms, more than 2^32-1", h.terms)
	case h.postings > maxPostings:
		return h, badFile(name, "damaged index file: %d postings", h.postings)
	case h.dense > h.terms:
		return h, badFile(name, "damaged index file: %d dense terms of %d", h.dense, h.terms)
	case h.vocabSz > maxVocab, h.flags&flagVocabulary == 0 && h.vocabSz != 0:
		return h, badFile(name, "damaged index file: %d bytes of vocabulary", h.vocabSz)
	}
	want := h
	layout(&want)
	if got := le.Uint64(b[56:]); got != want.size {
		return h, badFile(name, "damaged index file: header says %d bytes, its counts make %d", got, want.size)
	}
	for i := range numSections {
		if got := le.Uint64(b[64+8*i:]); got != want.at[i] {
			return h, badFile(name, "damaged index file: the %s section is at %d, its counts put it at %d", sectionNames[i], got, want.at[i])
		}
		want.crc[i] = le.Uint32(b[112+4*i:])
	}
	for i, c := range b[136:188] {
		if c != 0 {
			return h, badFile(name, "damaged index file: nonzero reserved header byte at %d", 136+i)
		}
	}
	if size >= 0 && uint64(size) != want.size {
		if uint64(size) < want.size {
			return h, badFile(name, "truncated index file: %d bytes, its header says %d", size, want.size)
		}
		return h, badFile(name, "index file has %d bytes after its end (%d bytes, its header says %d)", uint64(size)-want.size, size, want.size)
	}
	return want, nil
}

// WriteTo writes the index in the file format. It implements io.WriterTo.
func (ix *Index) WriteTo(w io.Writer) (int64, error) {
	h := header{docs: uint64(ix.NumDocs), terms: uint64(ix.Terms()), postings: uint64(len(ix.Postings)),
		dense: uint64(len(ix.DenseTerms)), vocabSz: uint64(len(ix.Words))}
	if ix.WordOffsets != nil {
		h.flags |= flagVocabulary
	}
	layout(&h)
	secs := ix.sections()
	for i, s := range secs {
		h.crc[i] = crcOf(s)
	}
	n, err := w.Write(h.encode())
	total := int64(n)
	if err != nil {
		return total, err
	}
	var zero [sectionAlign]byte
	for i, s := range secs {
		pad := h.at[i] - uint64(total)
		n, err := w.Write(zero[:pad])
		total += int64(n)
		if err != nil {
			return total, err
		}
		m, err := s.write(w)
		total += m
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// section is one array of the index, for checksums and writing.
type section struct {
	u64 []uint64
	u32 []uint32
	b   []byte
}

func (ix *Index) sections() [numSections]section {
	return [numSections]section{{u64: ix.Offsets}, {u32: ix.Postings}, {u32: ix.DenseTerms}, {u64: ix.Bitmaps}, {u64: ix.WordOffsets}, {b: ix.Words}}
}

// chunk is how many bytes are encoded at a time on big-endian machines.
const chunk = 1 << 16

// each calls fn with the section's little-endian bytes, in pieces.
func (s section) each(fn func([]byte) error) error {
	if littleEndian {
		var b []byte
		switch {
		case s.u64 != nil:
			b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.u64))), 8*len(s.u64))
		case s.u32 != nil:
			b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.u32))), 4*len(s.u32))
		default:
			b = s.b
		}
		if len(b) == 0 {
			return nil
		}
		return fn(b)
	}
	buf := make([]byte, 0, chunk)
	flush := func() error {
		err := fn(buf)
		buf = buf[:0]
		return err
	}
	for _, x := range s.u64 {
		buf = binary.LittleEndian.AppendUint64(buf, x)
		if len(buf) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for _, x := range s.u32 {
		buf = binary.LittleEndian.AppendUint32(buf, x)
		if len(buf) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(buf) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	if len(s.b) > 0 {
		return fn(s.b)
	}
	return nil
}

func crcOf(s section) uint32 {
	var c uint32
	s.each(func(b []byte) error {
		c = crc32.Update(c, castagnoli, b)
		return nil
	})
	return c
}

func (s section) write(w io.Writer) (int64, error) {
	var n int64
	err := s.each(func(b []byte) error {
		m, err := w.Write(b)
		n += int64(m)
		return err
	})
	return n, err
}

// Decode verifies a whole index file held in data and returns the index.
// On a little-endian machine, when data is 8-byte aligned, the index's
// arrays alias data (keep it unchanged while the index is in use);
// otherwise they are copies. name is used in errors, which match
// setio.ErrBadInput.
func Decode(data []byte, name string) (*Index, error) {
	h, err := decodeHeader(data, name, int64(len(data)))
	if err != nil {
		return nil, err
	}
	for i := range numSections {
		s := data[h.at[i] : h.at[i]+h.length[i]]
		if crc := crc32.Checksum(s, castagnoli); crc != h.crc[i] {
			return nil, badFile(name, "damaged index file: the %s section's checksum does not match (header says %08x, data has %08x)", sectionNames[i], h.crc[i], crc)
		}
		end := h.at[i] + h.length[i]
		next := h.size
		if i+1 < numSections {
			next = h.at[i+1]
		}
		for j, c := range data[end:next] {
			if c != 0 {
				return nil, badFile(name, "damaged index file: nonzero padding byte at %d", end+uint64(j))
			}
		}
	}
	ix := &Index{NumDocs: int(h.docs)}
	aligned := len(data) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%8 == 0
	sec := func(i int) []byte { return data[h.at[i] : h.at[i]+h.length[i]] }
	ix.Offsets = u64s(sec(secOffsets), aligned)
	ix.Postings = u32s(sec(secPostings), aligned)
	ix.DenseTerms = u32s(sec(secDenseTerms), aligned)
	ix.Bitmaps = u64s(sec(secBitmaps), aligned)
	if h.flags&flagVocabulary != 0 {
		ix.WordOffsets = u64s(sec(secWordOffsets), aligned)
		ix.Words = sec(secWords)
		if !aligned || !littleEndian {
			ix.Words = bytes.Clone(ix.Words)
		}
	}
	if err := ix.Validate(); err != nil {
		return nil, badFile(name, "damaged index file: %v", err)
	}
	ix.buildDense()
	return ix, nil
}

// u64s views b as uint64s, or decodes a copy where it cannot.
func u64s(b []byte, aligned bool) []uint64 {
	n := len(b) / 8
	if littleEndian && aligned {
		if n == 0 {
			return []uint64{}
		}
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
	}
	s := make([]uint64, n)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return s
}

func u32s(b []byte, aligned bool) []uint32 {
	n := len(b) / 4
	if littleEndian && aligned {
		if n == 0 {
			return []uint32{}
		}
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	s := make([]uint32, n)
	for i := range s {
		s[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return s
}

// Validate checks the index's invariants: offsets from 0 to the number of
// postings without decreasing, every list strictly increasing below the
// number of documents, dense terms increasing with bitmaps equal to their
// lists, and a vocabulary of strictly increasing nonempty words of
// lowercase letters and digits, one per term.
func (ix *Index) Validate() error {
	if ix.NumDocs < 0 || ix.NumDocs > MaxDocs {
		return fmt.Errorf("%d documents", ix.NumDocs)
	}
	if len(ix.Offsets) == 0 || ix.Offsets[0] != 0 {
		return fmt.Errorf("the offsets do not start at 0")
	}
	if ix.Terms() > maxTerms {
		return fmt.Errorf("%d terms, more than 2^32-1", ix.Terms())
	}
	if last := ix.Offsets[len(ix.Offsets)-1]; last != uint64(len(ix.Postings)) {
		return fmt.Errorf("the offsets end at %d, not at the %d postings", last, len(ix.Postings))
	}
	docs := uint64(ix.NumDocs)
	for t := range ix.Terms() {
		lo, hi := ix.Offsets[t], ix.Offsets[t+1]
		if hi < lo {
			return fmt.Errorf("term %d: offsets decrease (%d after %d)", t, hi, lo)
		}
		l := ix.Postings[lo:hi]
		if len(l) == 0 {
			continue
		}
		if uint64(l[len(l)-1]) >= docs {
			return fmt.Errorf("term %d: document %d, of %d documents", t, l[len(l)-1], docs)
		}
		for i := 1; i < len(l); i++ {
			if l[i] <= l[i-1] {
				return fmt.Errorf("term %d: posting list not strictly increasing (%d after %d)", t, l[i], l[i-1])
			}
		}
	}
	w := ix.BitmapWords()
	if len(ix.Bitmaps) != len(ix.DenseTerms)*w {
		return fmt.Errorf("%d bitmap words for %d dense terms of %d words", len(ix.Bitmaps), len(ix.DenseTerms), w)
	}
	for s, t := range ix.DenseTerms {
		if int(t) >= ix.Terms() || s > 0 && t <= ix.DenseTerms[s-1] {
			return fmt.Errorf("dense term %d out of order or range", t)
		}
		bm := ix.Bitmaps[s*w : (s+1)*w]
		n := 0
		for _, x := range bm {
			n += bits.OnesCount64(x)
		}
		l := ix.List(t)
		if n != len(l) {
			return fmt.Errorf("term %d: bitmap of %d documents for a list of %d", t, n, len(l))
		}
		for _, d := range l {
			if bm[d>>6]&(1<<(d&63)) == 0 {
				return fmt.Errorf("term %d: document %d is missing from its bitmap", t, d)
			}
		}
	}
	if ix.WordOffsets == nil {
		if len(ix.Words) != 0 {
			return fmt.Errorf("words without word offsets")
		}
		return nil
	}
	if len(ix.WordOffsets) != len(ix.Offsets) {
		return fmt.Errorf("%d word offsets for %d terms", len(ix.WordOffsets), ix.Terms())
	}
	if ix.WordOffsets[0] != 0 || ix.WordOffsets[ix.Terms()] != uint64(len(ix.Words)) {
		return fmt.Errorf("the word offsets do not run from 0 to the %d bytes of words", len(ix.Words))
	}
	var prev []byte
	for t := range ix.Terms() {
		lo, hi := ix.WordOffsets[t], ix.WordOffsets[t+1]
		if hi <= lo {
			return fmt.Errorf("term %d: empty word or decreasing offsets", t)
		}
		word := ix.Words[lo:hi]
		for _, c := range word {
			if !(c-'a' < 26 || c-'0' < 10) {
				return fmt.Errorf("term %d: byte %#x in a word", t, c)
			}
		}
		if t > 0 && bytes.Compare(prev, word) >= 0 {
			return fmt.Errorf("term %d: words not in increasing order (%q after %q)", t, word, prev)
		}
		prev = word
	}
	return nil
}
