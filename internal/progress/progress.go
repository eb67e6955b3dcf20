// Package progress shows the progress of long work on a terminal and stays
// silent when its output is not one.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// delay is how long work runs before a bar appears: short jobs print nothing.
const delay = time.Second

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return isTerminal(f.Fd()) }

// Bar reports the progress of one piece of work. The zero Bar, and a Bar
// whose output is not a terminal, do nothing. A Bar is safe for concurrent
// use.
type Bar struct {
	w     io.Writer
	label string
	unit  string
	total int64

	mu     sync.Mutex
	done   int64
	start  time.Time
	last   time.Time
	shown  bool
	closed bool
}

// Start returns a bar that reports on stderr when stderr is a terminal.
// total is the amount of work in units (bytes, sets, pairs); 0 if unknown.
func Start(label, unit string, total int64) *Bar {
	if !IsTerminal(os.Stderr) {
		return &Bar{}
	}
	return NewBar(os.Stderr, label, unit, total)
}

// NewBar returns a bar that reports on w unconditionally (after the initial
// delay); Start is the usual constructor.
func NewBar(w io.Writer, label, unit string, total int64) *Bar {
	now := time.Now()
	return &Bar{w: w, label: label, unit: unit, total: total, start: now, last: now}
}

// Add records n more units of work done.
func (b *Bar) Add(n int64) {
	if b == nil || b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	now := time.Now()
	if b.closed || now.Sub(b.start) < delay || now.Sub(b.last) < 200*time.Millisecond {
		return
	}
	b.last = now
	b.draw(now)
}

func (b *Bar) draw(now time.Time) {
	b.shown = true
	elapsed := now.Sub(b.start).Seconds()
	rate := float64(b.done) / max(elapsed, 1e-9)
	if b.total > 0 {
		pct := 100 * float64(b.done) / float64(b.total)
		eta := time.Duration(float64(b.total-b.done) / max(rate, 1e-9) * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(b.w, "\r%s: %5.1f%% (%s of %s %s, %s/s, %v left)\x1b[K", b.label, pct,
			human(float64(b.done)), human(float64(b.total)), b.unit, human(rate), eta)
		return
	}
	fmt.Fprintf(b.w, "\r%s: %s %s (%s/s)\x1b[K", b.label, human(float64(b.done)), b.unit, human(rate))
}

// Done ends the bar, clearing its line if it was shown.
func (b *Bar) Done() {
	if b == nil || b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown && !b.closed {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
	b.closed = true
}

// Reader wraps r so that every read advances b by the bytes read.
func (b *Bar) Reader(r io.Reader) io.Reader { return &reader{r, b} }

type reader struct {
	r io.Reader
	b *Bar
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.b.Add(int64(n))
	return n, err
}

func human(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}
