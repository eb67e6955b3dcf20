// Package setio reads and writes collections of sets.
//
// Two encodings are supported, told apart by content rather than by file
// name:
//
//   - Text: one set per line, elements as decimal integers separated by
//     spaces or tabs, the format of the FIMI repository's .dat files and of
//     Mann et al.'s set similarity join framework. The text may be
//     gzip-compressed; gzip is recognised by its magic bytes.
//   - Binary: xsect's own versioned format, a fixed header followed by the
//     CSR arrays in little endian, aligned so that a mapped file can be used
//     in place, and protected by a CRC-32C. docs/FORMAT.md specifies it.
//
// Every error caused by the content of the input (not by I/O) matches
// ErrBadInput under errors.Is.
package setio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/xsect/xsect/sets"
)

// Format is a collection file's encoding, detected by content.
type Format int

const (
	// Text is one set per line of decimal integers, optionally gzip-compressed.
	Text Format = iota
	// Binary is xsect's binary format (docs/FORMAT.md).
	Binary
)

// String returns "text" or "binary".
func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case Binary:
		return "binary"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ErrBadInput is matched by errors.Is for every error caused by the input's
// content: parse errors, bad headers, checksum mismatches, truncated or
// corrupt gzip streams. I/O errors and missing files do not match it.
var ErrBadInput = errors.New("setio: bad input")

// ParseError is a bad-input error at a position in a file. For text, Line
// and Col are 1-based (Col counts bytes); for binary files, and for errors
// that have no position, they are 0 and the message says where.
type ParseError struct {
	// File is the file's name as the reader was given it, or "" when
	// unknown (Error then writes "<input>").
	File string
	// Line and Col are the 1-based line and byte column of a text file's
	// error, 0 for a binary file's or one that has no position.
	Line, Col int
	// Msg says what is wrong, without the file name or the position.
	Msg string
	// Err is the underlying cause, if any (for example gzip.ErrChecksum or
	// io.ErrUnexpectedEOF); Unwrap returns it.
	Err error
}

// Error formats the error as "file:line:col: message", or "file: message"
// when there is no position.
func (e *ParseError) Error() string {
	name := e.File
	if name == "" {
		name = "<input>"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", name, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", name, e.Msg)
}

// Unwrap returns the underlying cause, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrBadInput: every ParseError is bad input.
func (e *ParseError) Is(target error) bool { return target == ErrBadInput }

// gzipMagic starts every gzip member (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// Detect peeks at the start of br's data and says which format it holds.
// It consumes nothing. Gzip data is reported as Text (ReadText decompresses
// it); data too short to tell, including empty data, is Text. A proper
// prefix of the binary magic at the end of the data is an error: a binary
// file cut short.
func Detect(br *bufio.Reader) (Format, error) {
	head, err := br.Peek(len(binaryMagic))
	if err != nil && err != io.EOF {
		return Text, err
	}
	if bytes.Equal(head, binaryMagic[:]) {
		return Binary, nil
	}
	if len(head) > 0 && len(head) < len(binaryMagic) && bytes.HasPrefix(binaryMagic[:], head) {
		return Binary, &ParseError{Msg: fmt.Sprintf("binary header truncated after %d bytes", len(head)), Err: io.ErrUnexpectedEOF}
	}
	return Text, nil
}

// Read reads a collection from r, text (optionally gzip-compressed) or
// binary, detected from its first bytes. r is read once, from where it
// stands, and never reopened, so it may be a pipe or a terminal. name is
// used in errors. size is the number of bytes r holds if known (a regular
// file's size on disk), or -1: a known size lets the arrays be allocated
// once instead of grown as data arrives.
func Read(r io.Reader, name string, size int64) (*sets.Collection, Format, error) {
	return ReadLimited(r, name, size, 0)
}

// ReadLimited is Read for a collection whose arrays (8 bytes a set, 4 an
// element) may take at most limit bytes, with the buffers and the copies
// that reading makes on the way (0: no limit). A collection that needs
// more is a *LimitError, found as soon as it is known: at once from the
// header of a binary file of known size, otherwise when the data read
// reach the limit.
func ReadLimited(r io.Reader, name string, size, limit int64) (*sets.Collection, Format, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	format, err := Detect(br)
	if err != nil {
		return nil, format, detectError(err, name)
	}
	if format == Binary {
		c, err := readBinaryLimit(br, name, size, limit)
		return c, Binary, err
	}
	o := textOptions{hint: max(size, 0), limit: limit}
	gzipped, err := isGzip(br, name)
	switch {
	case err != nil:
		return nil, Text, err
	case gzipped:
		return readGzip(br, name, o)
	}
	c, err := readText(br, name, o)
	return c, Text, err
}

// detectError is the error of Detect on the data of the file name.
func detectError(err error, name string) error {
	var pe *ParseError
	var ge *gzipError
	switch {
	case errors.As(err, &ge):
		return readError(name, err, 1, 1)
	case errors.As(err, &pe):
		return nameError(err, name)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// readGzip reads the gzip stream at the start of br: a collection in
// either format, told apart by the decompressed data's first bytes, as in
// a file (a binary file compressed used to fail as text, with "invalid
// element \x89XSET").
func readGzip(br *bufio.Reader, name string, o textOptions) (*sets.Collection, Format, error) {
	gz, err := newGzipReader(br)
	if err != nil {
		return nil, Text, readError(name, err, 1, 1)
	}
	zbr := bufio.NewReaderSize(gz, 64<<10)
	format, err := Detect(zbr)
	if err != nil {
		return nil, format, detectError(err, name)
	}
	if format == Text {
		c, err := parseGzipText(zbr, gz, name, o.withDefaults())
		return c, Text, err
	}
	// Of unknown size: the arrays grow as the data arrives, within the
	// limit, and data after the collection is an error.
	c, err := readBinaryLimit(zbr, name, -1, o.limit)
	// A fault of the stream says more than what the binary reader made
	// of it ("truncated", or nothing when the fault comes after the
	// collection: gzip's checksum and trailing garbage are checked as the
	// reader looks for data after the collection).
	var ge *gzipError
	if errors.As(gz.err, &ge) {
		return nil, Binary, &ParseError{File: name, Msg: ge.msg, Err: ge.err}
	}
	return c, Binary, err
}

// Load reads the collection at path: text (optionally gzip-compressed) or
// binary, detected by content, not by name.
func Load(path string) (*sets.Collection, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fileSize(f)
	if size == 0 {
		size = -1 // not a regular file, or one that may grow (/proc)
	}
	c, _, err := Read(f, path, size)
	return c, err
}

// fileSize is the size of a regular file, or 0.
func fileSize(f *os.File) int64 {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		return st.Size()
	}
	return 0
}

// LoadAll reads every integer in the file at path as one set, whatever the
// line layout; for a binary file it returns the union of its sets. The
// result is strictly increasing.
func LoadAll(path string) ([]uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	format, err := Detect(br)
	if err != nil {
		return nil, detectError(err, path)
	}
	var c *sets.Collection
	gzipped := false
	if format == Text {
		if gzipped, err = isGzip(br, path); err != nil {
			return nil, err
		}
	}
	switch {
	case format == Binary:
		size := int64(-1)
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		c, err = readBinary(br, path, size)
	case gzipped:
		c, format, err = readGzip(br, path, textOptions{all: true})
	default:
		c, err = readText(br, path, textOptions{all: true, hint: fileSize(f)})
	}
	if err != nil {
		return nil, err
	}
	if format == Binary {
		return c.Union(), nil
	}
	// readText in all-in-one mode left one normalised set.
	return slices.Clip(c.Elements), nil
}

// nameError fills in the file name of a ParseError made without one.
func nameError(err error, name string) error {
	var pe *ParseError
	if errors.As(err, &pe) && pe.File == "" {
		pe.File = name
	}
	return err
}

// quote shows a token in an error message: quoted, with non-printable bytes
// escaped, cut to a readable length.
func quote(tok []byte, cut bool) string {
	const max = 40
	if len(tok) > max {
		tok, cut = tok[:max], true
	}
	s := fmt.Sprintf("%q", tok)
	if cut {
		s = strings.TrimSuffix(s, `"`) + `..."`
	}
	return s
}
