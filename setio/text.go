package setio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/radix"
	"github.com/xsect/xsect/internal/sortnet"
	"github.com/xsect/xsect/sets"
)

// defaultBufSize is the text parser's read buffer, and the size of the
// blocks parsed in parallel: large enough that the per-read and per-block
// costs vanish, small enough to stay in L2 and to spread a few megabytes
// over many cores.
const defaultBufSize = 128 << 10

// parallelMin is the smallest known size of text parsed in parallel; below
// it, starting goroutines costs more than it saves.
const parallelMin = 512 << 10

// textOptions say how readText reads text. The zero value reads sets by
// lines, in blocks of defaultBufSize, on GOMAXPROCS goroutines, with no size
// hint and no limit; tests set the buffer size and the workers per call.
type textOptions struct {
	all     bool  // read every integer into one set, ignoring lines (LoadAll)
	bufSize int   // the read buffer and block size; 0: defaultBufSize
	hint    int64 // the size of the data if > 0: the arrays are sized after the first buffer
	limit   int64 // the bytes the collection may take while read (0: no limit)
	workers int   // the goroutines that parse blocks; 0: GOMAXPROCS
}

// ReadText parses the text format from r: one set per line, elements as
// decimal integers in [0, 2^32-1] separated by spaces or tabs (carriage
// returns, vertical tabs and form feeds count as spaces too, so \r\n line
// ends and trailing whitespace are fine), in any order, duplicates allowed.
// Each set is sorted and de-duplicated. An empty line is an empty set; the
// last line may lack its '\n', and a final '\n' does not start another set.
//
// If the data starts with the gzip magic bytes it is decompressed on the
// fly. The text is parsed as it is read: in blocks that end at line ends,
// on all cores (GOMAXPROCS), unless it is known to be small.
//
// A bad token, a value out of range or a truncated or corrupt gzip stream is
// a *ParseError at the token's line and byte column (name is its file name),
// matching ErrBadInput; an error of r is returned wrapped. On error no
// partial collection is returned.
func ReadText(r io.Reader, name string) (*sets.Collection, error) {
	hint := int64(0)
	if l, ok := r.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader, ...
		hint = int64(l.Len())
	}
	return readText(r, name, textOptions{hint: hint})
}

// ReadTextSize is ReadText for data whose size in bytes is known, such as a
// file's size on disk (compressed or not): it sizes the arrays once instead
// of growing them by copies.
func ReadTextSize(r io.Reader, name string, size int64) (*sets.Collection, error) {
	return readText(r, name, textOptions{hint: size})
}

// readText is ReadText as o says. With a limit, the collection's arrays,
// with the blocks of text being parsed and the copy a growing array makes,
// may take at most o.limit bytes; beyond, it returns a *LimitError.
func readText(r io.Reader, name string, o textOptions) (*sets.Collection, error) {
	o = o.withDefaults()
	br, ok := r.(*bufio.Reader)
	if !ok {
		// Small: reads of the parser's own buffer bypass it.
		br = bufio.NewReaderSize(r, 512)
	}
	gzipped, err := isGzip(br, name)
	if err != nil {
		return nil, err
	}
	if !gzipped {
		return parseText(br, name, o)
	}
	gz, err := newGzipReader(br)
	if err != nil {
		return nil, readError(name, err, 1, 1)
	}
	return parseGzipText(gz, gz, name, o)
}

// withDefaults fills in the buffer size and the workers.
func (o textOptions) withDefaults() textOptions {
	if o.bufSize <= 0 {
		o.bufSize = defaultBufSize
	}
	if o.workers <= 0 {
		o.workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// isGzip reports whether br's data starts with the gzip magic bytes.
func isGzip(br *bufio.Reader, name string) (bool, error) {
	head, err := br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return bytes.Equal(head, gzipMagic), nil
}

// parseGzipText parses the text that src holds, decompressed by gz (src
// is gz, or a buffer on it); o has its defaults filled in.
func parseGzipText(src io.Reader, gz *gzipReader, name string, o textOptions) (*sets.Collection, error) {
	o.hint = 0 // the compressed size says little
	c, err := parseText(src, name, o)
	var pe *ParseError
	if err != nil && errors.As(err, &pe) && pe.Err == nil {
		// A bad token in compressed text is most often the garbage a
		// damaged block decodes to: say so if the stream is damaged.
		if ge := gz.check(); ge != nil {
			return nil, &ParseError{File: name, Msg: ge.msg, Err: ge.err}
		}
	}
	return c, err
}

// parseText parses the text that src holds, decompressed; o has its
// defaults filled in.
func parseText(src io.Reader, name string, o textOptions) (*sets.Collection, error) {
	all, bufSize, hint, limit, workers := o.all, o.bufSize, o.hint, o.limit, o.workers
	// In parallel, unless the limit is too small for the blocks in flight
	// to be a small part of it.
	if !all && workers > 1 && (hint == 0 || hint >= parallelMin) &&
		(limit == 0 || limit >= 8*int64(workers+2)*blockCost*int64(bufSize)) {
		return readBlocks(src, name, workers, bufSize, hint, limit)
	}

	p := &textParser{src: src, name: name, all: all, line: 1, c: sets.New(), limit: limit, other: int64(bufSize)}
	tooLarge := func() error {
		return &LimitError{File: name, Limit: limit, Sets: int64(p.c.Len()), Elements: int64(len(p.c.Elements))}
	}
	buf := make([]byte, bufSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			first := p.base == 0
			if !p.room(n) {
				return nil, tooLarge()
			}
			if perr := p.chunk(buf[:n]); perr != nil {
				return nil, perr
			}
			if first && hint > p.base {
				reserve(p.c, int64(len(p.c.Elements)), int64(len(p.c.Offsets)), p.base, hint, int64(len(buf)), limit)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, readError(name, err, p.line, int(p.base-p.lineStart)+1)
		}
	}
	p.finish()
	if p.over {
		return nil, tooLarge()
	}
	return p.c, nil
}

// readError is the error for err, which ended the data early at line and
// col: a fault of the gzip data, or the reader's own.
func readError(name string, err error, line, col int) error {
	var ge *gzipError
	if errors.As(err, &ge) {
		return &ParseError{File: name, Line: line, Col: col, Msg: ge.msg, Err: ge.err}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// room makes room in the collection for the elements of a buffer of n
// more bytes of text, unless that would take the collection (with the
// parser's other bytes) over its limit. Offsets grow in endSet.
func (p *textParser) room(n int) bool {
	c := p.c
	var ok bool
	c.Elements, ok = growWithin(c.Elements, n/2+2, p.other+8*int64(cap(c.Offsets)), p.limit)
	return ok && !p.over
}

// reserve gives c's arrays room for what size bytes of text hold, if the
// first read bytes held elems elements and offs offsets, with 5% to
// spare, as far as limit allows with other bytes (0: no limit): a guess
// too high is cut down, one too low grows later. Large arrays are backed
// by huge pages: filling them costs fewer page faults.
func reserve(c *sets.Collection, elems, offs, read, size, other, limit int64) {
	scale := float64(size) / float64(read) * 1.05
	e, o := float64(elems)*scale+64, float64(offs)*scale+64
	if limit > 0 {
		if limit <= other {
			return
		}
		if over := (4*e + 8*o) / float64(limit-other); over > 1 {
			e, o = e/over, o/over
		}
	}
	if e >= 1<<40 || o >= 1<<40 {
		return
	}
	if int(e) > cap(c.Elements) {
		t := hugepage.Make[uint32](len(c.Elements), int(e))
		copy(t, c.Elements)
		c.Elements = t
	}
	if int(o) > cap(c.Offsets) {
		t := hugepage.Make[uint64](len(c.Offsets), int(o))
		copy(t, c.Offsets)
		c.Offsets = t
	}
}

// textBlock is a piece of the text that ends at a line end, or at the end of
// the data, parsed on its own: its lines are numbered from 1.
type textBlock struct {
	data    []byte
	counted int   // the capacity of data counted for a reader's limit
	last    bool  // the data end after this block
	readErr error // what ended the data, if not io.EOF

	c     sets.Collection // the block's sets, Offsets from 0
	tmp   []uint32        // the parser's scratch, kept between blocks
	err   error           // a *ParseError, its line counted in the block
	lines int             // the line ends in data
	col   int             // the column after data, in its last line
	done  chan struct{}
}

func (b *textBlock) parse(name string) {
	// Room for every element (each takes 2 bytes or more, its separator
	// included) and for lines of 8 bytes on average: the arrays are
	// reused from block to block and hardly ever grow.
	b.c.Offsets = append(slices.Grow(b.c.Offsets[:0], len(b.data)/8+2), 0)
	b.c.Elements = slices.Grow(b.c.Elements[:0], len(b.data)/2+1)
	// A block holds whole lines, so a bad token never needs more text.
	p := textParser{src: eofReader{}, name: name, line: 1, c: &b.c, tmp: b.tmp}
	b.err = p.chunk(b.data)
	if b.err == nil && b.last && b.readErr == nil {
		p.finish()
	}
	b.lines, b.col, b.tmp = p.line-1, int(p.base-p.lineStart)+1, p.tmp
	close(b.done)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// blockCost is the bytes a block of text takes, per byte of its capacity:
// the text, and the arrays that parse sizes for it: an element every 2
// bytes, an offset every 8. (Shorter lines grow the offsets, up to 8 bytes
// a byte for empty lines, in a block of bufSize: a block grown for a long
// line has at least half of it in that line.)
const blockCost = 1 + 4/2 + 8/8

// readBlocks parses src in parallel: a reader goroutine cuts the text into
// blocks of bufSize at line ends (a block grows to hold a longer line),
// workers parse them, and this goroutine appends their sets in order. A
// fixed set of blocks circulates, so memory stays bounded whatever the size
// of the text. Errors are those of the serial parse: the first bad token of
// the text, its line counted across blocks, or the failure of the data
// after the last good token. With a limit, the blocks (their text and
// parsed sets) and the collection's arrays stay within it.
func readBlocks(src io.Reader, name string, workers, bufSize int, hint, limit int64) (*sets.Collection, error) {
	nblocks := workers + 2
	free := make(chan *textBlock, nblocks)
	work := make(chan *textBlock, nblocks)
	order := make(chan *textBlock, nblocks)
	stop := make(chan struct{})
	// The memory of the blocks, and of the collection's arrays, for the
	// limit.
	var blockBytes, collBytes atomic.Int64
	// account counts a change of b's capacity.
	account := func(b *textBlock) {
		blockBytes.Add(int64(cap(b.data)-b.counted) * blockCost)
		b.counted = cap(b.data)
	}
	for range nblocks {
		b := &textBlock{data: make([]byte, 0, bufSize)}
		account(b)
		free <- b
	}
	for range workers {
		go func() {
			for b := range work {
				b.parse(name)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(work)
		var carry []byte // the start of a line cut at the previous block's end
		for {
			var b *textBlock
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.data = append(b.data[:0], carry...)
			account(b)
			b.last, b.readErr, b.done = false, nil, make(chan struct{})
			for {
				if len(b.data) == cap(b.data) {
					more := int64(cap(b.data)) * blockCost
					if limit > 0 && blockBytes.Load()+collBytes.Load()+more > limit {
						// A line too long to hold: the main goroutine
						// fills in the counts.
						b.last, b.readErr = true, &LimitError{File: name, Limit: limit}
						break
					}
					b.data = slices.Grow(b.data, cap(b.data))
					account(b)
				}
				n, err := src.Read(b.data[len(b.data):cap(b.data)])
				b.data = b.data[:len(b.data)+n]
				if err != nil {
					b.last = true
					if err != io.EOF {
						b.readErr = err
					}
					break
				}
				if len(b.data) == cap(b.data) {
					if i := bytes.LastIndexByte(b.data, '\n'); i >= 0 {
						carry = append(carry[:0], b.data[i+1:]...)
						b.data = b.data[:i+1]
						break
					}
				}
			}
			// Neither send blocks: at most nblocks are in flight.
			work <- b
			order <- b
			if b.last {
				return
			}
		}
	}()

	c := sets.New()
	var read int64 // bytes of text whose sets are in c
	line := 0      // lines before the current block
	var fail error
	tooLarge := func() error {
		return &LimitError{File: name, Limit: limit, Sets: int64(c.Len()), Elements: int64(len(c.Elements))}
	}
	for b := range order {
		<-b.done
		if fail != nil {
			continue // drain: nothing may read src after the return
		}
		var le *LimitError
		switch {
		case b.err != nil:
			pe := b.err.(*ParseError)
			pe.Line += line
			fail = pe
		case errors.As(b.readErr, &le):
			fail = tooLarge()
		case b.readErr != nil:
			fail = readError(name, b.readErr, line+b.lines+1, b.col)
		}
		if fail == nil {
			other := blockBytes.Load()
			if read == 0 && hint > int64(len(b.data)) && len(b.data) > 0 {
				reserve(c, int64(len(b.c.Elements)), int64(len(b.c.Offsets)), int64(len(b.data)), hint, other, limit)
			}
			var ok bool
			c.Elements, ok = growWithin(c.Elements, len(b.c.Elements), other+8*int64(cap(c.Offsets)), limit)
			if ok {
				c.Offsets, ok = growWithin(c.Offsets, len(b.c.Offsets)-1, other+4*int64(cap(c.Elements)), limit)
			}
			if !ok {
				fail = tooLarge()
			}
			collBytes.Store(collectionBytes(cap(c.Offsets), cap(c.Elements)))
		}
		if fail != nil {
			close(stop)
			continue
		}
		base := uint64(len(c.Elements))
		c.Elements = append(c.Elements, b.c.Elements...)
		for _, o := range b.c.Offsets[1:] {
			c.Offsets = append(c.Offsets, base+o)
		}
		read += int64(len(b.data))
		line += b.lines
		if cap(b.data) > 4*bufSize {
			// A block grown for a long line goes: its arrays are large.
			blockBytes.Add(-int64(b.counted) * blockCost)
			b = &textBlock{data: make([]byte, 0, bufSize)}
			account(b)
		}
		free <- b
	}
	if fail != nil {
		return nil, fail
	}
	return c, nil
}

// textParser is the state of a parse that survives from one buffer to the
// next: the position, the token in progress, the set in progress.
type textParser struct {
	src  io.Reader
	name string
	all  bool
	c    *sets.Collection

	line      int   // current line, 1-based
	lineStart int64 // offset of the current line's first byte
	base      int64 // offset of the current buffer's first byte

	inTok    bool
	v        uint64 // value of the token so far
	tokStart int64  // offset of the token's first byte
	tokHead  []byte // the token's first bytes, when it began in an earlier buffer

	setStart int      // index in c.Elements where the current set begins
	tmp      []uint32 // scratch for sorting

	// limit bounds the collection's arrays with other bytes (0: no
	// limit); over is set when a set could not be added within it.
	limit, other int64
	over         bool
}

// tokHeadMax bounds how much of a token that spans buffers is kept for error
// messages.
const tokHeadMax = 48

// chunk parses one buffer of text. It is the hot loop, with the state kept
// in locals. Away from the buffer's end a token of up to 7 digits is
// converted 8 bytes at a time (SWAR); the byte loop handles longer tokens,
// the buffer's tail and tokens that span buffers.
func (p *textParser) chunk(b []byte) error {
	elems := p.c.Elements
	v, inTok, tokStart := p.v, p.inTok, p.tokStart
	i := 0
	for i < len(b) {
		c := b[i]
		if d := c - '0'; d < 10 {
			if !inTok {
				inTok, v = true, 0
				tokStart = p.base + int64(i)
				if i+8 <= len(b) {
					if n, x, ok := swarDigits(binary.LittleEndian.Uint64(b[i:])); ok {
						i += n
						if b[i] == ' ' { // the usual separator: take it now
							elems = append(elems, uint32(x))
							inTok = false
							i++
							continue
						}
						v = x
						continue
					}
				}
			}
			v = v*10 + uint64(d)
			i++
			for i < len(b) {
				d = b[i] - '0'
				if d >= 10 {
					break
				}
				v = v*10 + uint64(d)
				i++
				if v > math.MaxUint32 {
					break
				}
			}
			if v > math.MaxUint32 {
				p.c.Elements = elems
				return p.tokenError(b, tokStart, "out of range")
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\v', '\f':
			if inTok {
				elems = append(elems, uint32(v))
				inTok = false
			}
		case '\n':
			if inTok {
				elems = append(elems, uint32(v))
				inTok = false
			}
			if !p.all {
				elems = p.endSet(elems)
			}
			p.line++
			p.lineStart = p.base + int64(i) + 1
		default:
			start := p.base + int64(i)
			if inTok {
				start = tokStart
			}
			p.c.Elements = elems
			return p.tokenError(b, start, "invalid")
		}
		i++
	}
	p.c.Elements = elems
	p.v, p.inTok, p.tokStart = v, inTok, tokStart
	if inTok {
		// Keep the token's start for a possible error message.
		if tokStart >= p.base {
			p.tokHead = append(p.tokHead[:0], b[tokStart-p.base:]...)
		} else {
			p.tokHead = append(p.tokHead, b...)
		}
		if len(p.tokHead) > tokHeadMax {
			p.tokHead = p.tokHead[:tokHeadMax]
		}
	}
	p.base += int64(len(b))
	return nil
}

// swarDigits converts the run of decimal digits that starts 8 bytes of text
// loaded little endian in x, if the run is shorter than 8: it returns the
// run's length and value. The first byte must be a digit.
func swarDigits(x uint64) (n int, v uint64, ok bool) {
	const (
		zeros = 0x3030303030303030
		high  = 0x8080808080808080
	)
	d := x - zeros // each digit byte becomes 0..9
	// A byte is not a digit if it is now above 9 or it borrowed. Borrows
	// and carries only move toward later bytes, so the lowest flagged byte
	// is the first non-digit.
	m := ((d + 0x7676767676767676) | d) & high
	if m == 0 {
		return 0, 0, false
	}
	n = bits.TrailingZeros64(m) >> 3
	// Move the n digits to the top; the vacated low bytes read as leading
	// zeros. Then combine pairs, quads and octets.
	d <<= 64 - 8*uint(n)
	d = (d * 10) + (d >> 8)
	d = ((d&0x000000FF000000FF)*(100+(1000000<<32)) +
		((d>>16)&0x000000FF000000FF)*(1+(10000<<32))) >> 32
	return n, d, true
}

// endSet closes the set in progress: it normalises the elements read since
// the last line end in place.
func (p *textParser) endSet(elems []uint32) []uint32 {
	s := normalize(elems[p.setStart:], &p.tmp)
	elems = elems[:p.setStart+len(s)]
	if p.limit > 0 && len(p.c.Offsets) == cap(p.c.Offsets) {
		var ok bool
		p.c.Offsets, ok = growWithin(p.c.Offsets, 1, p.other+4*int64(cap(elems)), p.limit)
		p.over = p.over || !ok
	}
	p.c.Offsets = append(p.c.Offsets, uint64(len(elems)))
	p.setStart = len(elems)
	return elems
}

// normalize sorts and de-duplicates s in place. Sorting dominates the parse
// of files whose lines are not sorted (kosarak: 8 elements a line on
// average, a few hundred at most), so it avoids data-dependent branches,
// which an insertion sort mispredicts about once per element. Sets that
// are sorted already are left alone (retail's and T10I4D100K's lines are:
// checking costs less than a network); the others go,
// up to 32 elements, through package sortnet's networks, and beyond through
// a radix sort with *tmp as scratch, whose narrow digits suit a few dozen
// keys.
func normalize(s []uint32, tmp *[]uint32) []uint32 {
	switch {
	case sets.IsStrict(s):
		return s
	case len(s) <= sortnet.Max:
		return sortnet.SortUniqueSmall(s)
	case len(s) <= 2*sortnet.Max:
		return sortnet.SortUnique32(s)
	}
	if cap(*tmp) < len(s) {
		*tmp = make([]uint32, len(s))
	}
	radix.Sort(s, *tmp)
	return slices.Compact(s)
}

// finish handles the end of the data: a last line without '\n' is a set.
func (p *textParser) finish() {
	if p.inTok {
		p.c.Elements = append(p.c.Elements, uint32(p.v))
		p.inTok = false
	}
	if p.all {
		p.c.Elements = normalize(p.c.Elements, &p.tmp)
		p.c.Offsets = append(p.c.Offsets[:1], uint64(len(p.c.Elements)))
		return
	}
	if p.base > p.lineStart {
		p.c.Elements = p.endSet(p.c.Elements)
	}
}

// tokenError reports the token that starts at offset start (in b, or in an
// earlier buffer) as invalid or out of range. To show the whole token it may
// read on past b: the parse is over anyway.
func (p *textParser) tokenError(b []byte, start int64, what string) error {
	var tok []byte
	from := start - p.base
	if from < 0 {
		tok = append(tok, p.tokHead...)
		from = 0
	}
	rest := b[from:]
	var more [64]byte
	for tries := 0; len(tok) < tokHeadMax && tries < 100; tries++ {
		j := 0
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		tok = append(tok, rest[:j]...)
		if j < len(rest) {
			break
		}
		n, err := p.src.Read(more[:])
		rest = more[:n]
		if err != nil && n == 0 {
			break
		}
	}
	var msg string
	if what == "out of range" {
		msg = fmt.Sprintf("element %s out of range [0, %d]", quote(tok, false), uint32(math.MaxUint32))
	} else {
		msg = fmt.Sprintf("invalid element %s: want a decimal integer in [0, %d]", quote(tok, false), uint32(math.MaxUint32))
	}
	return &ParseError{File: p.name, Line: p.line, Col: int(start-p.lineStart) + 1, Msg: msg}
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\v', '\f', '\n':
		return true
	}
	return false
}

// WriteText writes c in the text format: one line per set, elements in
// increasing order separated by single spaces, every line ending in '\n'.
func WriteText(w io.Writer, c *sets.Collection) error {
	if err := c.Validate(); err != nil {
		return err
	}
	const flushAt = 60 << 10
	buf := make([]byte, 0, flushAt+16<<10)
	for i := 0; i < c.Len(); i++ {
		for j, x := range c.Set(i) {
			if j > 0 {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendUint(buf, uint64(x), 10)
			if len(buf) >= flushAt {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		buf = append(buf, '\n')
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
