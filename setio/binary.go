package setio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"unsafe"

	"github.com/xsect/xsect/sets"
)

// The binary format, version 1 (docs/FORMAT.md has the full layout):
//
//	header   64 bytes, below
//	offsets  k+1 uint64 at byte 64, little endian
//	padding  zero bytes up to a multiple of 64
//	elements n uint32, little endian; the file ends with them
//
// Header fields, little endian:
//
//	 0  8  magic "\x89XSET\r\n\x1a"
//	 8  4  version (1)
//	12  4  flags (bit 0: sets strictly increasing, required; others zero)
//	16  8  k, the number of sets
//	24  8  n, the number of elements
//	32  8  offset of the offsets section (64)
//	40  8  offset of the elements section
//	48  8  file size
//	56  4  CRC-32C (Castagnoli) of bytes [64, file size)
//	60  4  CRC-32C of header bytes [0, 60)
//
// Every field is determined by k and n, so an encoding is canonical: a
// reader checks them all, and a valid file is re-encoded byte for byte.
const (
	headerSize    = 64
	sectionAlign  = 64
	formatVersion = 1

	// FlagStrict says every set is strictly increasing. Version 1 files
	// must have it.
	flagStrict = 1 << 0
	knownFlags = flagStrict

	// Bounds that keep every size computation far from overflow.
	maxSets     = 1 << 56
	maxElements = 1 << 60
)

var binaryMagic = [8]byte{0x89, 'X', 'S', 'E', 'T', '\r', '\n', 0x1a}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded header of a binary file.
type header struct {
	k, n       uint64
	offsetsAt  uint64
	elementsAt uint64
	size       uint64
	payloadCRC uint32
}

func layout(k, n uint64) header {
	h := header{k: k, n: n, offsetsAt: headerSize}
	h.elementsAt = alignUp(headerSize+8*(k+1), sectionAlign)
	h.size = h.elementsAt + 4*n
	return h
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, binaryMagic[:])
	le := binary.LittleEndian
	le.PutUint32(b[8:], formatVersion)
	le.PutUint32(b[12:], flagStrict)
	le.PutUint64(b[16:], h.k)
	le.PutUint64(b[24:], h.n)
	le.PutUint64(b[32:], h.offsetsAt)
	le.PutUint64(b[40:], h.elementsAt)
	le.PutUint64(b[48:], h.size)
	le.PutUint32(b[56:], h.payloadCRC)
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

// decodeHeader checks a header; size is the file's size, or -1 if unknown.
func decodeHeader(b []byte, name string, size int64) (header, error) {
	bad := func(format string, args ...any) (header, error) {
		return header{}, &ParseError{File: name, Msg: "bad binary header: " + fmt.Sprintf(format, args...)}
	}
	if [8]byte(b[:8]) != binaryMagic {
		return bad("magic % x, want % x", b[:8], binaryMagic[:])
	}
	le := binary.LittleEndian
	if got, want := le.Uint32(b[60:]), crc32.Checksum(b[:60], castagnoli); got != want {
		return bad("header checksum %08x, computed %08x", got, want)
	}
	if v := le.Uint32(b[8:]); v != formatVersion {
		return bad("version %d, this reader knows version %d", v, formatVersion)
	}
	flags := le.Uint32(b[12:])
	if flags&^knownFlags != 0 {
		return bad("unknown flags %#x", flags&^knownFlags)
	}
	if flags&flagStrict == 0 {
		return bad("flag 'strictly increasing' not set")
	}
	k, n := le.Uint64(b[16:]), le.Uint64(b[24:])
	if k >= maxSets || n >= maxElements {
		return bad("%d sets, %d elements: too many", k, n)
	}
	h := layout(k, n)
	h.payloadCRC = le.Uint32(b[56:])
	for _, f := range []struct {
		name      string
		got, want uint64
	}{
		{"offsets section at", le.Uint64(b[32:]), h.offsetsAt},
		{"elements section at", le.Uint64(b[40:]), h.elementsAt},
		{"file size", le.Uint64(b[48:]), h.size},
	} {
		if f.got != f.want {
			return bad("%s %d, want %d for %d sets and %d elements", f.name, f.got, f.want, k, n)
		}
	}
	if h.size > math.MaxInt || h.k+1 > math.MaxInt/8 {
		return bad("%d bytes do not fit in memory on this machine", h.size)
	}
	if size >= 0 && uint64(size) != h.size {
		return header{}, &ParseError{File: name, Msg: fmt.Sprintf("file is %d bytes, header says %d: truncated or extended", size, h.size), Err: io.ErrUnexpectedEOF}
	}
	return h, nil
}

// ReadBinary reads a collection in the binary format from r, verifying the
// header, the checksum and the collection's invariants (offsets from 0 to n,
// never decreasing, each set strictly increasing). name is used in errors.
func ReadBinary(r io.Reader, name string) (*sets.Collection, error) {
	return readBinary(r, name, -1)
}

// readBinary is ReadBinary knowing the size of the data if size >= 0: then
// the arrays are allocated at once, otherwise they grow as data arrives, so
// that a lying header cannot make us allocate more than the data holds.
func readBinary(r io.Reader, name string, size int64) (*sets.Collection, error) {
	return readBinaryLimit(r, name, size, 0)
}

// readBinaryLimit is readBinary for a collection whose arrays may take at
// most limit bytes (0: no limit). A file of known size is checked at once;
// otherwise the arrays grow as data arrives, so that a header that lies
// about data cut short is reported as truncated, not as too large.
func readBinaryLimit(r io.Reader, name string, size, limit int64) (*sets.Collection, error) {
	hb := make([]byte, headerSize)
	if n, err := io.ReadFull(r, hb); err != nil {
		return nil, truncErr(err, name, n, 0)
	}
	h, err := decodeHeader(hb, name, size)
	if err != nil {
		return nil, err
	}
	// Allocated at once: a size that matches the header, or a header
	// within the limit (it may lie, but no more than the limit allows).
	need := collectionBytes(int(h.k+1), int(h.n))
	known := size >= 0 || limit > 0 && need <= limit
	if limit > 0 && need > limit && size >= 0 {
		return nil, &LimitError{File: name, Limit: limit, Need: need, Sets: int64(h.k), Elements: int64(h.n)}
	}
	crc := uint32(0)
	c := &sets.Collection{}
	var got int
	if c.Offsets, crc, got, err = readUint64s(r, int(h.k+1), known, crc, 0, limit); err != nil {
		if err == errLimit {
			return nil, &LimitError{File: name, Limit: limit, Sets: int64(max(got/8-1, 0))}
		}
		return nil, truncErr(err, name, got, h.offsetsAt)
	}
	padAt := h.offsetsAt + 8*(h.k+1)
	pad := make([]byte, h.elementsAt-padAt)
	if got, err := io.ReadFull(r, pad); err != nil {
		return nil, truncErr(err, name, got, padAt)
	}
	for i, b := range pad {
		if b != 0 {
			return nil, &ParseError{File: name, Msg: fmt.Sprintf("nonzero padding byte at offset %d", padAt+uint64(i))}
		}
	}
	crc = crc32.Update(crc, castagnoli, pad)
	if c.Elements, crc, got, err = readUint32s(r, int(h.n), known, crc, 8*int64(cap(c.Offsets)), limit); err != nil {
		if err == errLimit {
			return nil, &LimitError{File: name, Limit: limit, Sets: int64(h.k), Elements: int64(got / 4)}
		}
		return nil, truncErr(err, name, got, h.elementsAt)
	}
	if size < 0 {
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n != 0 {
			return nil, &ParseError{File: name, Msg: fmt.Sprintf("data after the end of the collection at offset %d", h.size)}
		}
	}
	if crc != h.payloadCRC {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("payload checksum mismatch: header says %08x, data has %08x", h.payloadCRC, crc)}
	}
	if err := validate(c); err != nil {
		return nil, &ParseError{File: name, Msg: "invalid collection: " + err.Error()}
	}
	return c, nil
}

// validate is c.Validate behind a check that the offsets stay in bounds, so
// that hostile offsets cannot make it slice out of range; the sets are
// checked on every core when they are many.
func validate(c *sets.Collection) error {
	n := uint64(len(c.Elements))
	prev := uint64(0)
	for i, o := range c.Offsets {
		if o < prev || o > n {
			return fmt.Errorf("offset %d of set %d out of order or beyond %d elements", o, i, n)
		}
		prev = o
	}
	if len(c.Offsets) == 0 || c.Offsets[0] != 0 || prev != n {
		return c.Validate() // its message
	}
	return validateSets(c)
}

// truncErr turns an error of io.ReadFull at a section starting at offset at
// into a ParseError if the data ended early, or leaves an I/O error as is.
func truncErr(err error, name string, got int, at uint64) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return &ParseError{File: name, Msg: fmt.Sprintf("truncated: data ends at offset %d", at+uint64(got)), Err: io.ErrUnexpectedEOF}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// growChunk is how many array entries are read at a time when the data's
// size is not known in advance.
const growChunk = 1 << 20

// errLimit stops reading an array that would grow past the limit.
var errLimit = errors.New("over the limit")

// readUint64s reads count little-endian uint64s, continuing the CRC. If the
// count is not known to match the data, the slice grows as data arrives,
// its old and new arrays and other bytes within limit (0: no limit; an
// array that would need more is errLimit). On error it reports how many
// bytes it got.
func readUint64s(r io.Reader, count int, known bool, crc uint32, other, limit int64) ([]uint64, uint32, int, error) {
	return readArray(r, count, known, crc, other, limit, readLE64)
}

// readUint32s is readUint64s for uint32s.
func readUint32s(r io.Reader, count int, known bool, crc uint32, other, limit int64) ([]uint32, uint32, int, error) {
	return readArray(r, count, known, crc, other, limit, readLE32)
}

func readArray[T uint32 | uint64](r io.Reader, count int, known bool, crc uint32, other, limit int64,
	read func(io.Reader, []T, uint32) ([]T, uint32, int, error)) ([]T, uint32, int, error) {
	size := int(unsafe.Sizeof(T(0)))
	if known {
		return read(r, make([]T, count), crc)
	}
	first := min(count, growChunk)
	if limit > 0 {
		first = int(max(min(int64(first), (limit-other)/int64(size)), 0))
	}
	s := make([]T, 0, first)
	for len(s) < count {
		m := min(count-len(s), max(growChunk, len(s)))
		if limit > 0 {
			// The new array, and the old one while it is copied.
			room := int((limit - other - int64(size)*int64(cap(s))) / int64(size))
			if m = min(m, room-len(s)); m <= 0 {
				return nil, crc, size * len(s), errLimit
			}
		}
		s = append(s, make([]T, m)...)
		var err error
		var got int
		if _, crc, got, err = read(r, s[len(s)-m:], crc); err != nil {
			return nil, crc, size*(len(s)-m) + got, err
		}
	}
	return s, crc, size * len(s), nil
}

// WriteBinary writes c in the binary format. c must be valid (see
// sets.Collection.Validate). The checksum is computed first, in memory, so
// w need not be seekable.
func WriteBinary(w io.Writer, c *sets.Collection) error {
	if err := c.Validate(); err != nil {
		return err
	}
	h := layout(uint64(c.Len()), uint64(len(c.Elements)))
	pad := make([]byte, h.elementsAt-headerSize-8*(h.k+1))
	crc := crcLE64(0, c.Offsets)
	crc = crc32.Update(crc, castagnoli, pad)
	h.payloadCRC = crcLE32(crc, c.Elements)
	if _, err := w.Write(h.encode()); err != nil {
		return err
	}
	if err := writeLE64(w, c.Offsets); err != nil {
		return err
	}
	if _, err := w.Write(pad); err != nil {
		return err
	}
	return writeLE32(w, c.Elements)
}
