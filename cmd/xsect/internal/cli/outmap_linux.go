package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
)

// mappedWriters is how many goroutines copy into a mappedOutput at once.
// Into the page cache of one ext4 file on the 32-core GPU host, 1.35 GB in
// 2 MiB chunks: write(2) 3.4-4.7 GB/s however many writers (the file's
// lock takes one at a time); the mapping 3.0 GB/s from one goroutine, 6.3
// from 2 and 9.4 from 4, but 1.9-2.1 from 8 or 16
// (docs/results/output-writers-h200x2.txt).
const mappedWriters = 4

// mapWindow is the part of the file a mappedOutput writes at a time, a
// multiple of the page. A window all of whose bytes are copied is dropped
// from the process's mapping (its pages stay in the page cache, dirty,
// for the kernel to write): the process's resident memory holds a few
// windows, not the output. A variable for the tests.
var mapWindow int64 = 16 << 20

// mapReserve is the most of the file reserved (fallocate) at a time, the
// reservations doubling up to it: a reservation of each window apart made
// the copies 1.6 to 2.2 times slower on the development machine. What is
// reserved past the output's end is cut off after.
const mapReserve = 256 << 20

// mapSpan is the length of one mapping of the file, mostly beyond its end
// while the output grows (the address space costs nothing until touched).
// One mapping for the whole output: mapping every window apart made the
// copies into them 3 to 4 times slower on the development machine.
const mapSpan = 1 << 36

// mappedOutput appends to a regular file through shared mappings, from up
// to mappedWriters goroutines at once: each claims the next bytes of the
// file and copies its piece there while the others copy theirs. The file
// is reserved ahead with fallocate, so that a full disk fails the
// reservation, with an error, rather than a copy, with SIGBUS.
type mappedOutput struct {
	f    *os.File
	name string // the path as given, for errors
	base int64  // the first window's start: the page under the first byte written

	mu       sync.Mutex
	end      int64        // the bytes claimed, from the file's start
	mapped   int64        // the end of the last window
	reserved int64        // the end of the bytes reserved
	spans    []mappedSpan // the mappings, in order
	windows  []*outWindow // reserved and not yet filled, in order
	err      error        // the first error; every later write fails with it
}

// mappedSpan is one mapping of a mappedOutput's file, from off.
type mappedSpan struct {
	off int64
	b   []byte
}

// outWindow is one reserved window of a mappedOutput's file, mapped in
// a span.
type outWindow struct {
	off    int64
	b      []byte
	copied atomic.Int64 // the bytes copied into b; at len(b) it is dropped
}

// newMappedOutput returns a mappedOutput appending to f, named name in
// errors, from offset off, with its first window reserved and mapped; or
// nil where that fails (a file system without fallocate, an address space
// too small, a full disk), so that the caller goes on with write(2),
// which reports a full disk itself.
func newMappedOutput(f *os.File, off int64, name string) *mappedOutput {
	start := off &^ int64(os.Getpagesize()-1)
	m := &mappedOutput{f: f, name: name, base: start, end: off, mapped: start, reserved: start}
	if m.grow() != nil {
		m.close() // cuts what a reservation may have added
		return nil
	}
	return m
}

// write appends p to the file; safe for mappedWriters concurrent calls.
func (m *mappedOutput) write(p []byte) error {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return m.err
	}
	off := m.end
	for m.mapped < off+int64(len(p)) {
		if err := m.grow(); err != nil {
			m.err = err
			m.mu.Unlock()
			return err
		}
	}
	m.end += int64(len(p))
	// The windows p spans, found while the list cannot change.
	var buf [2]*outWindow
	ws := buf[:0]
	for _, w := range m.windows {
		if w.off < off+int64(len(p)) && off < w.off+int64(len(w.b)) {
			ws = append(ws, w)
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		lo := max(off, w.off)
		hi := min(off+int64(len(p)), w.off+int64(len(w.b)))
		if err := copyMapped(w.b[lo-w.off:hi-w.off], p[lo-off:hi-off]); err != nil {
			m.fail(err)
			return err
		}
		if w.copied.Add(hi-lo) == int64(len(w.b)) {
			m.drop(w)
		}
	}
	return nil
}

// grow maps the next window, reserving the file ahead by mapReserve
// where it is not yet, and mapping the next span where the window is past
// the last; m.mu is held. The first window and span start at the page
// under the first byte to write, the bytes before it already there.
func (m *mappedOutput) grow() error {
	fd := int(m.f.Fd())
	start := m.mapped
	if start+mapWindow > m.reserved {
		// Doubling up to mapReserve: a small output reserves little
		// (on tmpfs a reservation takes memory).
		end := start + min(mapReserve, max(mapWindow, m.reserved-m.base))
		if err := syscall.Fallocate(fd, 0, m.reserved, end-m.reserved); err != nil {
			return fmt.Errorf("writing %s: %w", m.name, err)
		}
		m.reserved = end
	}
	n := len(m.spans)
	if n == 0 || start+mapWindow > m.spans[n-1].off+int64(len(m.spans[n-1].b)) {
		b, err := syscall.Mmap(fd, start, mapSpan, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("writing %s: mapping: %w", m.name, err)
		}
		m.spans = append(m.spans, mappedSpan{start, b})
		n++
	}
	s := m.spans[n-1]
	w := &outWindow{off: start, b: s.b[start-s.off : start-s.off+mapWindow]}
	w.copied.Store(max(m.end-start, 0))
	m.windows = append(m.windows, w)
	m.mapped = start + mapWindow
	return nil
}

// drop takes a window all of whose bytes are copied out of the list, and
// its pages out of the process's mapping (MADV_DONTNEED keeps a shared
// mapping's data: the pages stay in the page cache, dirty).
func (m *mappedOutput) drop(w *outWindow) {
	err := syscall.Madvise(w.b, syscall.MADV_DONTNEED)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.windows {
		if x == w {
			m.windows = append(m.windows[:i], m.windows[i+1:]...)
			break
		}
	}
	if err != nil && m.err == nil {
		m.err = fmt.Errorf("writing %s: %w", m.name, err)
	}
}

func (m *mappedOutput) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	m.mu.Unlock()
}

// errMappedFault is a copy into the mapping that faulted: the page could
// not be written (an I/O error under it).
var errMappedFault = errors.New("writing the output failed: the system could not write its pages")

// copyMapped copies src into dst, a mapped window, turning a fault (the
// kernel's SIGBUS) into an error instead of a crash.
func copyMapped(dst, src []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = errMappedFault
		}
	}()
	copy(dst, src)
	return nil
}

// close unmaps the file, cuts it at the end of what was written (the rest
// of the last window was reserved, not written) and leaves the file's
// offset there, for writes after. No write may be running or follow. It
// returns the first error of the writes or its own.
func (m *mappedOutput) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.spans {
		if err := syscall.Munmap(s.b); err != nil && m.err == nil {
			m.err = fmt.Errorf("writing %s: unmapping: %w", m.name, err)
		}
	}
	m.spans, m.windows = nil, nil
	if err := m.f.Truncate(m.end); err != nil && m.err == nil {
		m.err = fmt.Errorf("writing %s: %w", m.name, pathErr(err))
	}
	if _, err := m.f.Seek(m.end, 0); err != nil && m.err == nil {
		m.err = fmt.Errorf("writing %s: %w", m.name, pathErr(err))
	}
	return m.err
}
