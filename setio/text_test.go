package setio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xsect/xsect/sets"
)

// bufSizes are the parser buffer sizes every text test runs with: tiny ones
// put tokens, "\r\n" pairs and line ends across buffer boundaries.
var bufSizes = []int{1, 2, 3, 5, 7, 16, 100, defaultBufSize}

// workerCounts are the numbers of parsing goroutines every text test runs
// with: 1 is the serial parser, more the parallel one (at any size).
var workerCounts = []int{1, 2, 3}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func equalCollections(a, b *sets.Collection) bool {
	return slices.Equal(a.Offsets, b.Offsets) && slices.Equal(a.Elements, b.Elements)
}

func describe(c *sets.Collection) string {
	if c == nil {
		return "<nil>"
	}
	var parts []string
	for i := 0; i < c.Len(); i++ {
		parts = append(parts, fmt.Sprint(c.Set(i)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// readAllWays parses text with every buffer size, through a one-byte reader,
// and gzip-compressed, and checks that all agree; it returns the result of
// the default way.
func readAllWays(t *testing.T, text string) (*sets.Collection, error) {
	t.Helper()
	want, wantErr := ReadText(strings.NewReader(text), "in")
	check := func(how string, got *sets.Collection, err error) {
		t.Helper()
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%q %s: error %v, default buffer gave %v", text, how, err, wantErr)
			return
		}
		if err == nil && !equalCollections(got, want) {
			t.Errorf("%q %s: %s, default buffer gave %s", text, how, describe(got), describe(want))
		}
	}
	for _, w := range workerCounts {
		for _, n := range bufSizes {
			got, err := readText(strings.NewReader(text), "in", textOptions{bufSize: n, workers: w})
			check(fmt.Sprintf("%d workers, buffer %d", w, n), got, err)
			// A size hint, right or wrong, changes nothing.
			for _, hint := range []int64{int64(len(text)), 1, 1 << 20} {
				got, err := readText(strings.NewReader(text), "in", textOptions{bufSize: n, hint: hint, workers: w})
				check(fmt.Sprintf("%d workers, buffer %d, hint %d", w, n, hint), got, err)
			}
		}
		got, err := readText(iotest.OneByteReader(strings.NewReader(text)), "in", textOptions{workers: w})
		check(fmt.Sprintf("%d workers, one byte at a time", w), got, err)
		got, err = readText(bytes.NewReader(gz(t, []byte(text))), "in", textOptions{workers: w})
		check(fmt.Sprintf("%d workers, gzipped", w), got, err)
	}
	return want, wantErr
}

func TestReadText(t *testing.T) {
	cases := []struct {
		in   string
		want [][]uint32
	}{
		{"", nil},
		{"\n", [][]uint32{{}}},
		{"\n\n", [][]uint32{{}, {}}},
		{"1", [][]uint32{{1}}},
		{"1\n", [][]uint32{{1}}},
		{"1 2 3\n4 5\n", [][]uint32{{1, 2, 3}, {4, 5}}},
		{"1 2 3\n4 5", [][]uint32{{1, 2, 3}, {4, 5}}},
		{"3 1 2 1 3\n\n5", [][]uint32{{1, 2, 3}, {}, {5}}},
		{"1 2\r\n3\r\n", [][]uint32{{1, 2}, {3}}},
		{"1 2 \n 3\t\t4\t\n", [][]uint32{{1, 2}, {3, 4}}},
		{"  \n", [][]uint32{{}}},
		{"1\n  ", [][]uint32{{1}, {}}},
		{"0 4294967295 0\n", [][]uint32{{0, 4294967295}}},
		{"007 0000000000004294967295 000\n", [][]uint32{{0, 7, 4294967295}}},
		{"1\v2\f3\r4", [][]uint32{{1, 2, 3, 4}}},
		{"5 5 5 5", [][]uint32{{5}}},
	}
	for _, tc := range cases {
		got, err := readAllWays(t, tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%q: %v", tc.in, err)
		}
		want := sets.FromSets(tc.want...)
		if !equalCollections(got, want) {
			t.Errorf("%q: got %s, want %s", tc.in, describe(got), describe(want))
		}
	}
}

func TestReadTextErrors(t *testing.T) {
	cases := []struct {
		in        string
		line, col int
		msg       string // substring of the message
	}{
		{"1 2 x\n", 1, 5, `invalid element "x"`},
		{"1\n-5\n", 2, 1, `invalid element "-5"`},
		{"1.5", 1, 1, `invalid element "1.5"`},
		{"4294967296", 1, 1, `element "4294967296" out of range [0, 4294967295]`},
		{"1 2\n3 99999999999999999999 4\n", 2, 3, `element "99999999999999999999" out of range`},
		{"  12a3 4", 1, 3, `invalid element "12a3"`},
		{"1\n2\n3 abc", 3, 3, `invalid element "abc"`},
		{"1,2,3\n", 1, 1, `invalid element "1,2,3"`},
		{"+5", 1, 1, `invalid element "+5"`},
		{"0x10", 1, 1, `invalid element "0x10"`},
		{"1e5", 1, 1, `invalid element "1e5"`},
		{"7 \x00", 1, 3, `invalid element "\x00"`},
		{"1\n\n\xff 1", 3, 1, `invalid element "\xff"`},
		{"1\r\n2\r\n3 4-", 3, 3, `invalid element "4-"`},
		{"1 " + strings.Repeat("9", 100), 1, 3, `element "9999999999999999999999999999999999999999..." out of range`},
		{"1 " + strings.Repeat("0", 100) + "x", 1, 3, `invalid element "0000000000000000000000000000000000000000..."`},
	}
	for _, tc := range cases {
		for _, tw := range []struct{ workers, buf int }{{1, 1}, {1, 2}, {1, 3}, {1, 5}, {1, 7}, {1, 16}, {1, 100}, {1, defaultBufSize},
			{2, 1}, {2, 3}, {2, 16}, {2, defaultBufSize}, {3, 1}, {3, 2}, {3, 5}, {3, 100}} {
			for _, zipped := range []bool{false, true} {
				n := tw.buf
				data := []byte(tc.in)
				if zipped {
					data = gz(t, data)
				}
				c, err := readText(bytes.NewReader(data), "f.dat", textOptions{bufSize: n, workers: tw.workers})
				if err == nil {
					t.Errorf("%q (buffer %d, gzip %v): no error, got %s", tc.in, n, zipped, describe(c))
					continue
				}
				if c != nil {
					t.Errorf("%q: partial result returned with error", tc.in)
				}
				if !errors.Is(err, ErrBadInput) {
					t.Errorf("%q: %v does not match ErrBadInput", tc.in, err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Errorf("%q: %T is not a *ParseError", tc.in, err)
					continue
				}
				if pe.Line != tc.line || pe.Col != tc.col || !strings.Contains(pe.Msg, tc.msg) || pe.File != "f.dat" {
					t.Errorf("%q (buffer %d): got %v, want f.dat:%d:%d and %s", tc.in, n, err, tc.line, tc.col, tc.msg)
				}
				if want := fmt.Sprintf("f.dat:%d:%d: ", tc.line, tc.col); !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%q: message %q does not start with %q", tc.in, err, want)
				}
			}
		}
	}
}

func TestReadTextGzipErrors(t *testing.T) {
	for _, w := range workerCounts {
		t.Run(fmt.Sprint(w, " workers"), func(t *testing.T) { testGzipErrors(t, w) })
	}
}

func testGzipErrors(t *testing.T, workers int) {
	// ReadText on the given number of goroutines.
	read := func(data []byte) (*sets.Collection, error) {
		return readText(bytes.NewReader(data), "t.gz", textOptions{hint: int64(len(data)), workers: workers})
	}
	var text strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&text, "%d %d %d\n", i, i*7, i*13)
	}
	z := gz(t, []byte(text.String()))

	// Cut anywhere past the header: truncated.
	for _, cut := range []int{11, 20, len(z) / 3, len(z) / 2, len(z) - 9, len(z) - 1} {
		_, err := read(z[:cut])
		var pe *ParseError
		if !errors.Is(err, ErrBadInput) || !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if !strings.Contains(pe.Msg, "truncated gzip stream") || pe.Line < 1 || pe.Col < 1 {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
	// A cut header.
	for _, cut := range []int{2, 5, 9} {
		_, err := read(z[:cut])
		if !errors.Is(err, ErrBadInput) || err.Error() != "t.gz:1:1: truncated gzip header" {
			t.Errorf("header cut at %d: %v", cut, err)
		}
	}
	// A wrong CRC in the trailer.
	bad := slices.Clone(z)
	bad[len(bad)-8] ^= 0xff
	if _, err := read(bad); !errors.Is(err, ErrBadInput) || !errors.Is(err, gzip.ErrChecksum) {
		t.Errorf("bad trailer: %v", err)
	}
	// Flipped bits in the deflate stream: corrupt data, a checksum error, or
	// data that parse as something else; never a success with the text.
	for i := 12; i < len(z)-8; i += len(z) / 50 {
		bad := slices.Clone(z)
		bad[i] ^= 0x55
		c, err := read(bad)
		if err == nil {
			t.Errorf("byte %d flipped: no error, %d sets", i, c.Len())
		} else if !errors.Is(err, ErrBadInput) {
			t.Errorf("byte %d flipped: %v is not bad input", i, err)
		} else if !strings.HasPrefix(err.Error(), "t.gz:") || !strings.Contains(err.Error(), ": corrupt gzip data: ") {
			// Not a parse error on the garbage a damaged block decodes to.
			t.Errorf("byte %d flipped: %v, want the stream's fault", i, err)
		}
	}
	// Garbage after the gzip member: whatever it is, it is named.
	for _, junk := range []string{"junk", "\n1 2 3\n", "\x00\x00\x00\x00", "\x1f", "\x1f\x8b", "\x1f\x8b\x08\x00", "\x1f\x8bxxxxxxxxxxxxxxxx"} {
		_, err := read(append(slices.Clone(z), junk...))
		want := fmt.Sprintf("trailing garbage after the gzip data, at compressed byte %d", len(z))
		if strings.HasPrefix(junk, "\x1f\x8b") {
			want = fmt.Sprintf("gzip header of member 2, at compressed byte %d", len(z))
		}
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("trailing %q: %v, want %q", junk, err, want)
		}
	}
	// Two members are one text (gzip -c a b > ab.gz).
	two := append(gz(t, []byte("1 2\n3")), gz(t, []byte(" 4\n5\n"))...)
	c, err := read(two)
	if err != nil || !equalCollections(c, sets.FromSets([]uint32{1, 2}, []uint32{3, 4}, []uint32{5})) {
		t.Errorf("two members: %s, %v", describe(c), err)
	}
}

// An error of the reader is passed on and is not bad input.
func TestReadTextIOError(t *testing.T) {
	boom := errors.New("boom")
	for _, w := range workerCounts {
		for _, data := range [][]byte{[]byte("1 2 3\n4 5 6\n"), gz(t, []byte("1 2 3\n4 5 6\n"))} {
			r := io.MultiReader(bytes.NewReader(data[:7]), iotest.ErrReader(boom))
			_, err := readText(r, "x", textOptions{workers: w})
			if !errors.Is(err, boom) || errors.Is(err, ErrBadInput) {
				t.Errorf("%d workers: got %v, want boom and not bad input", w, err)
			}
		}
	}
}

func randomCollection(r *rand.Rand) *sets.Collection {
	k := r.IntN(50)
	c := sets.New()
	for range k {
		n := r.IntN(40)
		if r.IntN(5) == 0 {
			n = 0
		}
		s := make([]uint32, n)
		for j := range s {
			switch r.IntN(10) {
			case 0:
				s[j] = 0
			case 1:
				s[j] = 4294967295
			case 2:
				s[j] = r.Uint32()
			default:
				s[j] = uint32(r.IntN(1000))
			}
		}
		c.AddUnsorted(s)
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		c := randomCollection(r)
		var text, bin, text2 bytes.Buffer
		if err := WriteText(&text, c); err != nil {
			t.Fatal(err)
		}
		fromText, err := readText(bytes.NewReader(text.Bytes()), "t",
			textOptions{bufSize: bufSizes[i%len(bufSizes)], hint: int64(text.Len()), workers: workerCounts[i%len(workerCounts)]})
		if err != nil || !equalCollections(fromText, c) {
			t.Fatalf("text round trip: %v\n%s\n%s", err, describe(c), describe(fromText))
		}
		if err := WriteBinary(&bin, fromText); err != nil {
			t.Fatal(err)
		}
		fromBin, err := ReadBinary(bytes.NewReader(bin.Bytes()), "b")
		if err != nil || !equalCollections(fromBin, c) {
			t.Fatalf("binary round trip: %v", err)
		}
		if err := WriteText(&text2, fromBin); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(text.Bytes(), text2.Bytes()) {
			t.Fatalf("text -> binary -> text changed the text")
		}
	}
}

func TestWriteTextRejectsInvalid(t *testing.T) {
	bad := &sets.Collection{Offsets: []uint64{0, 2}, Elements: []uint32{2, 1}}
	if err := WriteText(io.Discard, bad); err == nil {
		t.Error("WriteText accepted an unsorted set")
	}
	if err := WriteBinary(io.Discard, bad); err == nil {
		t.Error("WriteBinary accepted an unsorted set")
	}
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Load tells formats apart by content: names lie here.
func TestLoadDetects(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, nil, []uint32{4294967295})
	var text, bin bytes.Buffer
	WriteText(&text, c)
	WriteBinary(&bin, c)
	for _, f := range []struct {
		name   string
		data   []byte
		format Format
	}{
		{"a.bin", text.Bytes(), Text},
		{"b.dat", bin.Bytes(), Binary},
		{"c.txt", gz(t, text.Bytes()), Text},
		{"d.gz", text.Bytes(), Text},
	} {
		p := writeTemp(t, f.name, f.data)
		got, err := Load(p)
		if err != nil || !equalCollections(got, c) {
			t.Errorf("%s: %v, %s", f.name, err, describe(got))
		}
		m, closeMap, err := Map(p)
		if err != nil || !equalCollections(m, c) {
			t.Errorf("Map %s: %v, %s", f.name, err, describe(m))
		} else if err := closeMap(); err != nil {
			t.Errorf("Map %s: close: %v", f.name, err)
		}
		format, err := Detect(bufio.NewReader(bytes.NewReader(f.data)))
		if err != nil || format != f.format {
			t.Errorf("Detect %s: %v, %v", f.name, format, err)
		}
	}
	if f, err := Detect(bufio.NewReader(bytes.NewReader(nil))); f != Text || err != nil {
		t.Errorf("Detect(empty) = %v, %v", f, err)
	}
	_, err := Detect(bufio.NewReader(bytes.NewReader(binaryMagic[:5])))
	if !errors.Is(err, ErrBadInput) {
		t.Errorf("Detect(cut magic) = %v", err)
	}
	cut := writeTemp(t, "cut", binaryMagic[:5])
	if _, err := Load(cut); !errors.Is(err, ErrBadInput) || !strings.HasPrefix(err.Error(), cut+": ") {
		t.Errorf("Load(cut magic) = %v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.dat")
	for name, load := range map[string]func(string) error{
		"Load":    func(p string) error { _, err := Load(p); return err },
		"LoadAll": func(p string) error { _, err := LoadAll(p); return err },
		"Map":     func(p string) error { _, _, err := Map(p); return err },
	} {
		err := load(p)
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s(missing) = %v", name, err)
		}
	}
}

func TestLoadAll(t *testing.T) {
	text := "5 3\n\n1 9 3\r\n7 7 0"
	want := []uint32{0, 1, 3, 5, 7, 9}
	for _, data := range [][]byte{[]byte(text), gz(t, []byte(text))} {
		got, err := LoadAll(writeTemp(t, "q", data))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("LoadAll = %v, %v; want %v", got, err, want)
		}
	}
	var bin bytes.Buffer
	WriteBinary(&bin, sets.FromSets([]uint32{5, 3}, nil, []uint32{1, 9, 3}, []uint32{7, 0}))
	got, err := LoadAll(writeTemp(t, "b", bin.Bytes()))
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LoadAll(binary) = %v, %v; want %v", got, err, want)
	}
	got, err = LoadAll(writeTemp(t, "e", nil))
	if err != nil || len(got) != 0 {
		t.Errorf("LoadAll(empty) = %v, %v", got, err)
	}
	_, err = LoadAll(writeTemp(t, "bad", []byte("1 2\n3 x")))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Col != 3 {
		t.Errorf("LoadAll(bad) = %v", err)
	}
}

// normalize agrees with sort-and-compact on every path: networks (up to 16),
// two networks and a merge (up to 32), radix sort, already sorted.
func TestNormalize(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var tmp []uint32
	check := func(what string, s []uint32) {
		t.Helper()
		want := slices.Compact(slices.Sorted(slices.Values(s)))
		got := normalize(slices.Clone(s), &tmp)
		if !slices.Equal(got, want) {
			t.Fatalf("%s, n=%d: normalize(%v) = %v, want %v", what, len(s), s, got, want)
		}
	}
	sizes := []int{}
	for n := 0; n <= 100; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 257, 1000, 5000, 70000)
	for _, n := range sizes {
		for _, limit := range []uint32{1, 2, 10, 255, 256, 70000, 1 << 24, 0} {
			s := make([]uint32, n)
			for i := range s {
				if limit == 0 {
					s[i] = r.Uint32()
				} else {
					s[i] = uint32(r.IntN(int(limit)))
				}
			}
			what := fmt.Sprintf("limit %d", limit)
			check(what, s)
			if n >= 2 {
				s[r.IntN(n)], s[r.IntN(n)] = 0, math.MaxUint32
				check(what+" with 0 and 2^32-1", s)
				for i := range s {
					s[i] = []uint32{0, math.MaxUint32, 7}[r.IntN(3)]
				}
				check("0, 7 and 2^32-1", s)
			}
			slices.Sort(s)
			check(what+", sorted", s)
			slices.Reverse(s)
			check(what+", reversed", s)
		}
		for _, v := range []uint32{0, 5, math.MaxUint32} {
			check(fmt.Sprintf("all %d", v), slices.Repeat([]uint32{v}, n))
		}
	}
}

// swarDigits agrees with a byte loop on every run length and terminator.
func TestSwarDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte("0123456789 \t\n\r-.a\x00\xff/:")
	for range 200000 {
		var b [8]byte
		b[0] = '0' + byte(r.IntN(10))
		for i := 1; i < 8; i++ {
			if r.IntN(3) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = '0' + byte(r.IntN(10))
			}
		}
		n := 0
		v := uint64(0)
		for n < 8 && b[n] >= '0' && b[n] <= '9' {
			v = v*10 + uint64(b[n]-'0')
			n++
		}
		gn, gv, ok := swarDigits(binary.LittleEndian.Uint64(b[:]))
		if ok != (n < 8) || ok && (gn != n || gv != v) {
			t.Fatalf("%q: got %d, %d, %v; want %d, %d", b, gn, gv, ok, n, v)
		}
	}
}

// TestReadTextBlocks checks the parallel parser against the serial one on
// text of many blocks, lines longer than a block among them, with and
// without a bad token or a cut gzip stream somewhere: the same sets, or the
// same error at the same line and column.
func TestReadTextBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var text []byte
	for i := range 30000 {
		n := r.IntN(12)
		if i%5000 == 17 {
			n = 3000 // longer than a 4 KiB block
		}
		for j := range n {
			if j > 0 {
				text = append(text, " \t"[r.IntN(2)])
			}
			text = strconv.AppendUint(text, uint64(r.Uint32()>>r.IntN(32)), 10)
		}
		if r.IntN(50) == 0 {
			text = append(text, '\r')
		}
		text = append(text, '\n')
	}
	serial := func(data []byte) (*sets.Collection, error) {
		return readText(bytes.NewReader(data), "b.dat", textOptions{workers: 1})
	}
	inputs := [][]byte{text, text[:len(text)-1], text[:len(text)/2]}
	for _, at := range []int{0, 5, len(text) / 3, len(text)/2 + 1, len(text) - 2} {
		bad := slices.Clone(text)
		bad[at] = 'x'
		inputs = append(inputs, bad)
	}
	for k, data := range inputs {
		want, wantErr := serial(data)
		for _, w := range []int{2, 4} {
			for _, n := range []int{4096, 64 << 10, defaultBufSize} {
				got, err := readText(bytes.NewReader(data), "b.dat", textOptions{bufSize: n, hint: int64(len(data)), workers: w})
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("input %d, %d workers, blocks of %d: error %v, serial %v", k, w, n, err, wantErr)
				}
				if err == nil && !equalCollections(got, want) {
					t.Fatalf("input %d, %d workers, blocks of %d: %d sets, serial %d", k, w, n, got.Len(), want.Len())
				}
			}
		}
	}
	// A gzip stream cut short: the error comes at the end of the last data,
	// after the last good line.
	z := gz(t, text)
	for _, cut := range []int{len(z) / 4, len(z) - 20} {
		_, wantErr := serial(z[:cut])
		for _, w := range []int{2, 4} {
			_, err := readText(bytes.NewReader(z[:cut]), "b.dat", textOptions{bufSize: 4096, workers: w})
			if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
				t.Fatalf("gzip cut at %d, %d workers: %v, serial %v", cut, w, err, wantErr)
			}
		}
	}
}
