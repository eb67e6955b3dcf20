package setio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/sets"
)

// refParse is the obviously correct parser the fast one is checked against:
// lines split on '\n' (a final '\n' ends the last line, it does not start
// one), fields by strings.Fields, each field by strconv.ParseUint. Tokens
// and separators are ASCII, so a line with a non-ASCII byte is an error
// (strings.Fields would split at Unicode spaces); for it only the line is
// known, col is 0. It returns the collection, or the line and column (1-based,
// in bytes) of the first bad token.
func refParse(text string) (c *sets.Collection, line, col int) {
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	c = sets.New()
	for i, l := range lines {
		if !isASCII(l) {
			return nil, i + 1, 0
		}
		pos := 0
		var s []uint32
		for _, f := range strings.Fields(l) {
			at := pos + strings.Index(l[pos:], f)
			pos = at + len(f)
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, i + 1, at + 1
			}
			s = append(s, uint32(v))
		}
		c.AddUnsorted(s)
	}
	return c, 0, 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzReadText(f *testing.F) {
	for _, s := range []string{
		"", "\n", "1 2 3\n4 5\n", "3 1 2 1\n\n5", "1 2\r\n3\r\n", " 1\t2 \n",
		"0 4294967295", "4294967296", "99999999999999999999", "-5", "1.5", "12a3 4",
		"1\u00a02", "1\x85 2", "007 008", "1\v2\f3", "a\nb", "1 2\n3 x\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(2*len(bufSizes))) // 3 workers, 1-byte blocks
	}
	f.Fuzz(func(t *testing.T, data []byte, bufSel uint8) {
		text := data
		isGzip := bytes.HasPrefix(data, gzipMagic)
		if isGzip {
			// The reference decompresses first; a bad stream must be an error.
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err == nil {
				text, err = io.ReadAll(zr)
			}
			if err != nil {
				_, perr := ReadText(bytes.NewReader(data), "fuzz")
				if perr == nil || !errors.Is(perr, ErrBadInput) {
					t.Fatalf("bad gzip stream (%v) gave %v", err, perr)
				}
				return
			}
		}
		want, line, col := refParse(string(text))
		workers := workerCounts[int(bufSel)/len(bufSizes)%len(workerCounts)]
		got, err := readText(bytes.NewReader(data), "fuzz", textOptions{bufSize: bufSizes[int(bufSel)%len(bufSizes)], workers: workers})
		if want != nil {
			if err != nil {
				t.Fatalf("%q: %v, reference parsed %s", text, err, describe(want))
			}
			if !equalCollections(got, want) {
				t.Fatalf("%q: %s, reference %s", text, describe(got), describe(want))
			}
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err == nil {
			t.Fatalf("%q: parsed %s, reference fails at %d:%d", text, describe(got), line, col)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrBadInput) {
			t.Fatalf("%q: %v (%T)", text, err, err)
		}
		if pe.Line != line || col != 0 && pe.Col != col {
			t.Fatalf("%q: error at %d:%d, reference at %d:%d: %v", text, pe.Line, pe.Col, line, col, err)
		}
	})
}

func FuzzReadBinary(f *testing.F) {
	for _, c := range []*sets.Collection{
		sets.New(),
		sets.FromSets(nil),
		sets.FromSets([]uint32{1, 2, 3}, nil, []uint32{0, 4294967295}),
		sets.FromSets([]uint32{5}, []uint32{5, 6}, []uint32{5, 6, 7}, []uint32{1}, nil, nil, nil, nil, nil),
	} {
		f.Add(encodeBinary(f, c))
	}
	f.Add([]byte("\x89XSET\r\n\x1a"))
	f.Add([]byte("1 2 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// readBinaryAllWays checks that the three readers agree.
		c, err := readBinaryAllWays(t, data)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("%v is not bad input", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		// Every field is checked, so a valid file is the canonical encoding.
		if again := encodeBinary(t, c); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n% x\n% x", data, again)
		}
	})
}
