package setio

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xsect/xsect/sets"
)

// TestReadOnce reads every format from streams that cannot be rewound nor
// reopened (a pipe, a reader that returns one byte at a time), with and
// without the size known, small and larger than every buffer: the format
// is told from the bytes in hand and nothing is read twice.
func TestReadOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{3, 30000} {
		c := sets.New()
		for range k {
			s := make([]uint32, r.IntN(40))
			for i := range s {
				s[i] = r.Uint32() >> r.IntN(32)
			}
			c.AddUnsorted(s)
		}
		var text, bin bytes.Buffer
		WriteText(&text, c)
		WriteBinary(&bin, c)
		for _, f := range []struct {
			name   string
			data   []byte
			format Format
		}{{"text", text.Bytes(), Text}, {"gzip", gz(t, text.Bytes()), Text}, {"binary", bin.Bytes(), Binary}} {
			for _, size := range []int64{-1, int64(len(f.data))} {
				readers := map[string]func() (io.Reader, func()){
					"one byte": func() (io.Reader, func()) { return iotest.OneByteReader(bytes.NewReader(f.data)), func() {} },
					"pipe": func() (io.Reader, func()) {
						pr, pw, err := os.Pipe()
						if err != nil {
							t.Fatal(err)
						}
						go func() { pw.Write(f.data); pw.Close() }()
						return pr, func() { pr.Close() }
					},
				}
				for how, open := range readers {
					if how == "one byte" && len(f.data) > 1<<20 {
						continue // slow, and the pipe covers it
					}
					src, done := open()
					got, format, err := Read(src, "in", size)
					done()
					if err != nil || format != f.format || !equalCollections(got, c) {
						t.Errorf("%d sets, %s, size %d, %s: format %v, err %v", k, f.name, size, how, format, err)
					}
				}
			}
		}
	}
	// Errors name the input, never "<input>".
	for _, data := range [][]byte{binaryMagic[:3], binaryMagic[:], []byte("1 2\nx\n")} {
		_, _, err := Read(bytes.NewReader(data), "in", -1)
		if !errors.Is(err, ErrBadInput) || !strings.HasPrefix(err.Error(), "in:") || strings.Contains(err.Error(), "<input>") {
			t.Errorf("Read(%q) = %v", data, err)
		}
	}
	boom := errors.New("boom")
	if _, _, err := Read(iotest.ErrReader(boom), "in", -1); !errors.Is(err, boom) || errors.Is(err, ErrBadInput) || err.Error() != "in: boom" {
		t.Errorf("Read(failing reader) = %v", err)
	}
}
