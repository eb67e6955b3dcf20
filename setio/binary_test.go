package setio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/xsect/xsect/sets"
)

func encodeBinary(t testing.TB, c *sets.Collection) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteBinary(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resign recomputes both checksums of a binary file, so that a test can
// reach the checks behind them.
func resign(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[56:], crc32.Checksum(b[headerSize:], castagnoli))
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

// readBinaryAllWays reads data as ReadBinary does (size unknown), as Load
// does (size known), and as Map does (in place), and checks they agree.
func readBinaryAllWays(t *testing.T, data []byte) (*sets.Collection, error) {
	t.Helper()
	c1, err1 := ReadBinary(bytes.NewReader(data), "b")
	c2, err2 := readBinary(bytes.NewReader(data), "b", int64(len(data)))
	c3, err3 := ReadBinary(iotest.HalfReader(bytes.NewReader(data)), "b")
	for _, o := range []readResult{{c2, err2}, {c3, err3}, viewAny(data)} {
		if (o.err == nil) != (err1 == nil) {
			t.Fatalf("readers disagree: %v and %v", err1, o.err)
		}
		if err1 == nil && !equalCollections(o.c, c1) {
			t.Fatalf("readers disagree: %s and %s", describe(c1), describe(o.c))
		}
		if err1 != nil && !errors.Is(o.err, ErrBadInput) {
			t.Fatalf("%v is not bad input", o.err)
		}
	}
	return c1, err1
}

type readResult struct {
	c   *sets.Collection
	err error
}

// viewAny reads data as Map would, in place where Map maps.
func viewAny(data []byte) readResult {
	if len(data) < headerSize {
		c, err := readBinary(bytes.NewReader(data), "b", int64(len(data)))
		return readResult{c, err}
	}
	// Copy into 8-byte aligned memory, as a mapping is.
	words := make([]uint64, (len(data)+7)/8)
	aligned := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:len(data)]
	copy(aligned, data)
	c, err := viewOrRead(aligned, "b")
	return readResult{c, err}
}

func TestBinaryRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cs := []*sets.Collection{sets.New(), sets.FromSets(nil), sets.FromSets(nil, nil, []uint32{0})}
	for range 200 {
		cs = append(cs, randomCollection(r))
	}
	for _, c := range cs {
		data := encodeBinary(t, c)
		if uint64(len(data)) != layout(uint64(c.Len()), uint64(len(c.Elements))).size {
			t.Fatalf("size %d", len(data))
		}
		got, err := readBinaryAllWays(t, data)
		if err != nil || !equalCollections(got, c) {
			t.Fatalf("%v: %s, want %s", err, describe(got), describe(c))
		}
		if !bytes.Equal(encodeBinary(t, got), data) {
			t.Fatal("re-encoding differs")
		}
	}
}

// The layout promised by docs/FORMAT.md, checked byte by byte on one file.
func TestBinaryLayout(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2}, nil, []uint32{4294967295})
	b := encodeBinary(t, c)
	le := binary.LittleEndian
	want := []byte("\x89XSET\r\n\x1a")
	if !bytes.Equal(b[:8], want) {
		t.Errorf("magic % x", b[:8])
	}
	// k=3: offsets 64..96, elements at 128, 3 elements: 140 bytes.
	for _, f := range []struct {
		at   int
		got  uint64
		want uint64
	}{
		{8, uint64(le.Uint32(b[8:])), 1}, {12, uint64(le.Uint32(b[12:])), 1},
		{16, le.Uint64(b[16:]), 3}, {24, le.Uint64(b[24:]), 3},
		{32, le.Uint64(b[32:]), 64}, {40, le.Uint64(b[40:]), 128}, {48, le.Uint64(b[48:]), 140},
		{64, le.Uint64(b[64:]), 0}, {72, le.Uint64(b[72:]), 2}, {80, le.Uint64(b[80:]), 2}, {88, le.Uint64(b[88:]), 3},
		{128, uint64(le.Uint32(b[128:])), 1}, {132, uint64(le.Uint32(b[132:])), 2}, {136, uint64(le.Uint32(b[136:])), 4294967295},
	} {
		if f.got != f.want {
			t.Errorf("byte %d: %d, want %d", f.at, f.got, f.want)
		}
	}
	if len(b) != 140 || !bytes.Equal(b[96:128], make([]byte, 32)) {
		t.Errorf("length %d or padding % x", len(b), b[96:128])
	}
	if got := le.Uint32(b[56:]); got != crc32.Checksum(b[64:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Errorf("payload CRC %08x", got)
	}
}

func TestBinaryErrors(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, nil, []uint32{7, 4294967295}, []uint32{0})
	good := encodeBinary(t, c)
	le := binary.LittleEndian
	cases := []struct {
		name string
		edit func(b []byte) []byte
		msg  string
	}{
		{"magic", func(b []byte) []byte { b[1] = 'Y'; return b }, "bad binary header: magic"},
		{"header checksum", func(b []byte) []byte { b[20]++; return b }, "header checksum"},
		{"version", func(b []byte) []byte { le.PutUint32(b[8:], 2); return resign(b) }, "version 2"},
		{"unknown flag", func(b []byte) []byte { le.PutUint32(b[12:], 3); return resign(b) }, "unknown flags 0x2"},
		{"strict flag", func(b []byte) []byte { le.PutUint32(b[12:], 0); return resign(b) }, "strictly increasing"},
		{"k", func(b []byte) []byte { le.PutUint64(b[16:], 9); return resign(b) }, "elements section at 128, want 192 for 9 sets"},
		{"n", func(b []byte) []byte { le.PutUint64(b[24:], 5); return resign(b) }, "file size 152, want 148"},
		{"huge k", func(b []byte) []byte { le.PutUint64(b[16:], 1<<62); return resign(b) }, "too many"},
		{"huge n", func(b []byte) []byte { le.PutUint64(b[24:], 1<<62); return resign(b) }, "too many"},
		{"elements at", func(b []byte) []byte { le.PutUint64(b[40:], 136); return resign(b) }, "elements section at 136, want 128"},
		{"offsets at", func(b []byte) []byte { le.PutUint64(b[32:], 72); return resign(b) }, "offsets section at 72"},
		{"file size", func(b []byte) []byte { le.PutUint64(b[48:], 200); return resign(b) }, "file size 200"},
		{"payload checksum", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "payload checksum mismatch"},
		{"offset checksum", func(b []byte) []byte { b[72] ^= 1; return b }, "payload checksum mismatch"},
		{"padding", func(b []byte) []byte { b[110] = 1; return resign(b) }, "nonzero padding byte at offset 110"},
		{"unsorted set", func(b []byte) []byte {
			le.PutUint32(b[128:], 9) // set 0 becomes 9 2 3
			return resign(b)
		}, "invalid collection: sets: set 0 is not strictly increasing"},
		{"decreasing offsets", func(b []byte) []byte { le.PutUint64(b[72:], 4); return resign(b) }, "invalid collection"},
		{"offsets beyond n", func(b []byte) []byte { le.PutUint64(b[88:], 7); return resign(b) }, "invalid collection"},
		{"offset 0 not 0", func(b []byte) []byte { le.PutUint64(b[64:], 1); return resign(b) }, "invalid collection"},
		{"trailing data", func(b []byte) []byte { return append(b, 0) }, "data after the end"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, "truncated"},
		{"header only", func(b []byte) []byte { return b[:64] }, "truncated"},
	}
	for _, tc := range cases {
		data := tc.edit(bytes.Clone(good))
		got, err := readBinaryAllWays(t, data)
		if err == nil {
			t.Errorf("%s: no error, %s", tc.name, describe(got))
			continue
		}
		var pe *ParseError
		if !errors.Is(err, ErrBadInput) || !errors.As(err, &pe) || pe.File != "b" {
			t.Errorf("%s: %v (%T)", tc.name, err, err)
		}
		if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %q does not say %q", tc.name, err, tc.msg)
		}
		if !strings.HasPrefix(err.Error(), "b: ") {
			t.Errorf("%s: %q does not name the file", tc.name, err)
		}
	}
}

// Every prefix of a file is an error that says truncated (or, for a prefix
// of the magic through Load, a cut header), never a panic or a success.
func TestBinaryTruncated(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, nil, []uint32{7, 4294967295}, []uint32{0})
	good := encodeBinary(t, c)
	for n := range len(good) {
		_, err := readBinaryAllWays(t, good[:n])
		if !errors.Is(err, ErrBadInput) {
			t.Fatalf("prefix %d: %v", n, err)
		}
		if n >= 8 && !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "header says") {
			t.Errorf("prefix %d: %v", n, err)
		}
		p := writeTemp(t, "cut", good[:n])
		if _, err := Load(p); !errors.Is(err, ErrBadInput) && n > 0 {
			t.Errorf("Load prefix %d: %v", n, err)
		}
		if _, _, err := Map(p); !errors.Is(err, ErrBadInput) && n > 0 {
			t.Errorf("Map prefix %d: %v", n, err)
		}
	}
}

// A header that claims a huge collection over a short stream must fail at
// the end of the data, not try to allocate what it claims.
func TestBinaryLyingHeader(t *testing.T) {
	h := layout(1<<40, 1<<50)
	h.payloadCRC = 0
	data := append(h.encode(), make([]byte, 1000)...)
	_, err := ReadBinary(bytes.NewReader(data), "lie")
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "truncated: data ends at offset 1064") {
		t.Errorf("got %v", err)
	}
}

func TestBinaryIOError(t *testing.T) {
	boom := errors.New("boom")
	data := encodeBinary(t, sets.FromSets([]uint32{1, 2, 3}))
	for _, n := range []int{10, 70, len(data) - 2} {
		_, err := ReadBinary(io.MultiReader(bytes.NewReader(data[:n]), iotest.ErrReader(boom)), "x")
		if !errors.Is(err, boom) || errors.Is(err, ErrBadInput) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
}

func TestMapFile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		c := randomCollection(r)
		p := writeTemp(t, "m.bin", encodeBinary(t, c))
		m, closeMap, err := Map(p)
		if err != nil {
			t.Fatal(err)
		}
		if !equalCollections(m, c) {
			t.Fatalf("Map: %s, want %s", describe(m), describe(c))
		}
		if err := closeMap(); err != nil {
			t.Fatal(err)
		}
		if err := closeMap(); err != nil {
			t.Fatal("second close:", err)
		}
	}
	bad := encodeBinary(t, sets.FromSets([]uint32{1, 2}))
	bad[len(bad)-1] ^= 1
	if _, _, err := Map(writeTemp(t, "bad.bin", bad)); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Map(bad) = %v", err)
	}
}

// A gzip-compressed binary file reads as the collection it holds, through
// Read (within a limit, or refused beyond it) and LoadAll; a damaged,
// truncated or padded stream is bad input that says what is wrong. It was
// read as text: `invalid element "\x89XSET"`.
func TestGzipBinary(t *testing.T) {
	c := sets.New()
	for i := range 3000 {
		c.Add([]uint32{uint32(i), uint32(i + 2), uint32(3*i + 5)})
	}
	c.Add(nil)
	data := encodeBinary(t, c)
	z := gz(t, data)
	got, format, err := Read(bytes.NewReader(z), "b.gz", int64(len(z)))
	if err != nil || format != Binary || !equalCollections(got, c) {
		t.Fatalf("Read: %v, %v", format, err)
	}
	size := collectionBytes(len(c.Offsets), len(c.Elements))
	if got, _, err := ReadLimited(bytes.NewReader(z), "b.gz", int64(len(z)), 3*size); err != nil || !equalCollections(got, c) {
		t.Fatalf("ReadLimited within its limit: %v", err)
	}
	_, _, err = ReadLimited(bytes.NewReader(z), "b.gz", int64(len(z)), size/2)
	if le := (*LimitError)(nil); !errors.As(err, &le) {
		t.Errorf("ReadLimited over its limit: %v, want a *LimitError", err)
	}
	path := filepath.Join(t.TempDir(), "b.gz")
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	if all, err := LoadAll(path); err != nil || !slices.Equal(all, c.Union()) {
		t.Errorf("LoadAll: %d elements, %v", len(all), err)
	}
	damaged := bytes.Clone(z)
	damaged[len(damaged)/2] ^= 0x55
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"damaged", damaged, "b.gz: corrupt gzip"},
		{"truncated", z[:len(z)-20], "b.gz: truncated gzip stream"},
		{"header cut", gz(t, data[:5]), "b.gz: binary header truncated after 5 bytes"},
		{"data after", gz(t, append(bytes.Clone(data), 0)), "b.gz: data after the end of the collection"},
		{"garbage after", append(bytes.Clone(z), "junk"...), "b.gz: trailing garbage after the gzip data"},
	} {
		_, _, err := Read(bytes.NewReader(tc.data), "b.gz", int64(len(tc.data)))
		if !errors.Is(err, ErrBadInput) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v; want bad input starting %q", tc.name, err, tc.want)
		}
	}
}
