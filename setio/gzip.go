package setio

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// gzipReader decompresses a gzip stream of one or more members, one after
// another as gzip -d does, and says what is wrong with a bad stream: a
// truncated stream, a corrupt block, a checksum mismatch, or data after the
// last member that is not another member (trailing garbage). Its data
// errors are *gzipError; the errors of the reader under it pass unchanged.
type gzipReader struct {
	src       *countingReader
	zr        gzip.Reader
	member    int  // the members begun, counting from 1
	memberEnd bool // the current member has ended, its checksum verified
	err       error
}

// gzipError is a fault of the gzip data itself.
type gzipError struct {
	msg string
	err error // the cause: io.ErrUnexpectedEOF, gzip.ErrChecksum, ...
}

func (e *gzipError) Error() string { return e.msg }
func (e *gzipError) Unwrap() error { return e.err }

// countingReader counts the compressed bytes consumed, and remembers the
// first error of the reader under the stream, to tell I/O failures from
// corrupt data. It is an io.ByteReader, so that the decompressor reads
// exactly the bytes of a member and no more.
type countingReader struct {
	r   *bufio.Reader
	n   int64
	err error
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	r.note(err)
	return n, err
}

func (r *countingReader) ReadByte() (byte, error) {
	b, err := r.r.ReadByte()
	if err == nil {
		r.n++
	}
	r.note(err)
	return b, err
}

func (r *countingReader) note(err error) {
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
}

// newGzipReader reads the header of the first member.
func newGzipReader(br *bufio.Reader) (*gzipReader, error) {
	g := &gzipReader{src: &countingReader{r: br}, member: 1}
	if err := g.zr.Reset(g.src); err != nil {
		return nil, g.fail(err, 0, true)
	}
	g.zr.Multistream(false)
	return g, nil
}

func (g *gzipReader) Read(p []byte) (int, error) {
	for g.err == nil {
		if g.memberEnd {
			g.nextMember()
			continue
		}
		n, err := g.zr.Read(p)
		if err == io.EOF {
			g.memberEnd, err = true, nil
		}
		if err != nil {
			return n, g.fail(err, g.src.n, false)
		}
		if n > 0 || len(p) == 0 {
			return n, nil
		}
	}
	return 0, g.err
}

// nextMember starts the member after the one that ended, or sets io.EOF
// at the end of the data.
func (g *gzipReader) nextMember() {
	g.memberEnd = false
	at := g.src.n
	head, err := g.src.r.Peek(len(gzipMagic))
	if len(head) == 0 {
		if err == io.EOF {
			g.err = io.EOF
		} else {
			g.src.note(err)
			g.fail(err, at, false)
		}
		return
	}
	if !bytes.Equal(head, gzipMagic) {
		g.err = &gzipError{msg: fmt.Sprintf("trailing garbage after the gzip data, at compressed byte %d", at), err: gzip.ErrHeader}
		return
	}
	g.member++
	if err := g.zr.Reset(g.src); err != nil {
		g.fail(err, at, true)
		return
	}
	g.zr.Multistream(false)
}

// fail records and returns the error err, met at compressed byte at,
// in a member's header or in its data: the reader's own, or a fault of the
// data described.
func (g *gzipReader) fail(err error, at int64, header bool) error {
	if g.src.err != nil && errors.Is(err, g.src.err) {
		g.err = err // the reader failed, not the data
		return err
	}
	var corrupt flate.CorruptInputError
	var msg string
	switch {
	case header && g.member == 1 && errors.Is(err, io.ErrUnexpectedEOF):
		msg = "truncated gzip header"
	case header && g.member == 1:
		msg = "corrupt gzip header: " + err.Error()
	case header && errors.Is(err, io.ErrUnexpectedEOF):
		msg = fmt.Sprintf("truncated gzip header of member %d, at compressed byte %d", g.member, at)
	case header:
		msg = fmt.Sprintf("corrupt gzip header of member %d, at compressed byte %d: %v", g.member, at, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "truncated gzip stream: the data ends inside a compressed member"
	case errors.Is(err, gzip.ErrChecksum):
		msg = fmt.Sprintf("corrupt gzip data: the checksum or length at the end of member %d does not match its data", g.member)
	case errors.As(err, &corrupt):
		msg = fmt.Sprintf("corrupt gzip data: an invalid compressed block, found at compressed byte %d", at)
	default:
		msg = "corrupt gzip stream: " + err.Error()
	}
	g.err = &gzipError{msg: msg, err: err}
	return g.err
}

// gzipCheckLimit bounds how much of a stream is decompressed, after a bad
// token, to look for a fault of the stream itself.
const gzipCheckLimit = 64 << 20

// check reads on, after a bad token, for up to gzipCheckLimit bytes of
// text: a damaged block decodes to garbage before the stream's checksum
// or the decompressor says it is damaged. It returns the stream's fault,
// if any.
func (g *gzipReader) check() *gzipError {
	buf := make([]byte, 32<<10)
	for read := 0; read < gzipCheckLimit && g.err == nil; {
		n, _ := g.Read(buf)
		read += n
	}
	var ge *gzipError
	errors.As(g.err, &ge)
	return ge
}
