package progress

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSilentWhenNotTerminal(t *testing.T) {
	// Under go test stderr is a pipe or file, never a terminal.
	b := Start("load", "B", 10)
	b.Add(5)
	b.Done()
	if b.w != nil {
		t.Fatal("Start returned a bar that writes although stderr is not a terminal")
	}
}

func TestBarDrawsAfterDelay(t *testing.T) {
	var out bytes.Buffer
	b := NewBar(&out, "load", "B", 1000)
	b.Add(10)
	if out.Len() != 0 {
		t.Fatalf("bar drew before its delay: %q", out.String())
	}
	b.start = time.Now().Add(-2 * delay) // pretend the work has run a while
	b.last = b.start
	n, err := io.Copy(io.Discard, b.Reader(strings.NewReader(strings.Repeat("x", 490))))
	if err != nil || n != 490 {
		t.Fatal(n, err)
	}
	if !strings.Contains(out.String(), "load:  50.0%") {
		t.Fatalf("bar output %q lacks the percentage", out.String())
	}
	b.Done()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("Done did not clear the line: %q", out.String())
	}
}
