package setio

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xsect/xsect/sets"
)

// limitText reads text with a limit, every way: serial and parallel, with
// every buffer size, with and without a size hint, gzip-compressed.
func limitText(t *testing.T, text []byte, limit int64, check func(how string, c *sets.Collection, err error)) {
	t.Helper()
	for _, w := range workerCounts {
		for _, n := range []int{16, 100, 4096, defaultBufSize} {
			for _, hint := range []int64{0, int64(len(text))} {
				c, err := readText(bytes.NewReader(text), "in", textOptions{bufSize: n, hint: hint, limit: limit, workers: w})
				check(fmt.Sprintf("%d workers, buffer %d, hint %d", w, n, hint), c, err)
			}
		}
		// What ReadLimited does with gzip text of unknown size.
		c, err := readText(bytes.NewReader(gz(t, text)), "in", textOptions{limit: limit, workers: w})
		check(fmt.Sprintf("%d workers, gzipped", w), c, err)
	}
}

// isLimit checks that err is a *LimitError for the file "in" at limit,
// and not bad input.
func isLimit(t *testing.T, how string, err error, limit int64) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.File != "in" || le.Limit != limit || errors.Is(err, ErrBadInput) {
		t.Fatalf("%s: error %v, want a *LimitError of in at %d bytes", how, err, limit)
	}
}

// A collection read within a limit is the collection read without one; one
// that needs more is a *LimitError, whichever way it is read: many empty
// lines (the gzip bomb), many elements, one long line.
func TestReadTextLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var random bytes.Buffer
	for range 20000 {
		for range r.IntN(20) {
			fmt.Fprintf(&random, "%d ", r.IntN(1<<20))
		}
		random.WriteByte('\n')
	}
	var longLine bytes.Buffer
	for i := range 400000 {
		fmt.Fprintf(&longLine, "%d ", i)
	}
	for _, tc := range []struct {
		name string
		text []byte
	}{
		{"random", random.Bytes()},
		{"empty lines", bytes.Repeat([]byte("\n"), 1<<20)},
		{"one long line", longLine.Bytes()},
	} {
		want, err := ReadText(bytes.NewReader(tc.text), "in")
		if err != nil {
			t.Fatal(err)
		}
		size := collectionBytes(len(want.Offsets), len(want.Elements))
		// Room for the arrays, a copy while they grow, and the blocks of
		// text in flight (one grown to twice the longest line, 4 bytes a
		// byte, 8 for empty lines).
		enough := 3*size + 8*int64(len(tc.text)) + 5*8*defaultBufSize
		limitText(t, tc.text, enough, func(how string, c *sets.Collection, err error) {
			if err != nil || !equalCollections(c, want) {
				t.Fatalf("%s, %s within %d bytes: %v; want the collection of %d bytes", tc.name, how, enough, err, size)
			}
		})
		limitText(t, tc.text, size/2, func(how string, c *sets.Collection, err error) {
			isLimit(t, tc.name+", "+how, err, size/2)
		})
	}
}

// A binary file of known size over the limit is refused from its header,
// with what it needs; read from a stream, it is refused when its data
// reach the limit, and a header that lies about data cut short is still
// reported as truncated, whatever the limit.
func TestReadBinaryLimit(t *testing.T) {
	c := sets.New()
	for i := range 5000 {
		c.Add([]uint32{uint32(i), uint32(i + 1), uint32(i + 7)})
	}
	data := encodeBinary(t, c)
	size := collectionBytes(len(c.Offsets), len(c.Elements))
	for _, limit := range []int64{size / 2, size - 1, 10 * size} {
		for _, known := range []bool{true, false} {
			n := int64(len(data))
			if !known {
				n = -1
			}
			got, _, err := ReadLimited(iotest.HalfReader(bytes.NewReader(data)), "in", n, limit)
			switch {
			case limit >= 2*size:
				if err != nil || !equalCollections(got, c) {
					t.Fatalf("limit %d, known size %v: %v", limit, known, err)
				}
			case known:
				var le *LimitError
				if !errors.As(err, &le) || le.Need != size || le.Sets != 5000 || le.Elements != 15000 {
					t.Fatalf("limit %d, known size: %v, want a *LimitError needing %d bytes", limit, err, size)
				}
			default:
				isLimit(t, fmt.Sprintf("limit %d, size unknown", limit), err, limit)
			}
		}
	}
	// A header for 2^40 sets with 1 MiB of data after it.
	lie := append(layoutHeader(1<<40, 1<<50), make([]byte, 1<<20)...)
	for _, limit := range []int64{0, 1 << 16, 1 << 30} {
		_, _, err := ReadLimited(bytes.NewReader(lie), "in", -1, limit)
		var le *LimitError
		if limit == 1<<16 {
			if !errors.As(err, &le) {
				t.Errorf("lying header within %d bytes: %v, want a *LimitError", limit, err)
			}
		} else if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("lying header, limit %d: %v, want truncated", limit, err)
		}
	}
}

// layoutHeader is a valid header for k sets and n elements.
func layoutHeader(k, n uint64) []byte {
	h := layout(k, n)
	return h.encode()
}
