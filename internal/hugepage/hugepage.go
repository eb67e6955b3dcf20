// Package hugepage asks the kernel to back large slices with transparent
// huge pages.
//
// A process that builds a few large arrays once (a parsed file, its
// tidlists, a counter triangle) spends much of its time in page faults:
// one per 4 KiB page touched for the first time, several microseconds each
// in a virtual machine. Where transparent huge pages are enabled "on
// madvise" (the common default), one fault maps 2 MiB instead. The Go
// runtime does not ask for them, so this package does, for the 2 MiB
// aligned interior of a slice's backing array, before the slice is first
// written. Elsewhere (other systems, huge pages off) it does nothing.
package hugepage

import "unsafe"

// MinBytes is the smallest array Make backs with huge pages: below it,
// the faults saved cost less than the zeroing of a whole huge page.
const MinBytes = 512 << 10

// pageSize is the size of a transparent huge page on amd64 and arm64 (with
// 4 KiB base pages).
const pageSize = 2 << 20

// Make returns make([]T, n, c). From MinBytes on, the backing array is
// carved out of an allocation up to 2 MiB larger so that it starts on a
// huge page boundary, and advised up to the end of its last huge page:
// filling it then takes one page fault per 2 MiB. (Past the end, the
// advice covers other memory of the heap: harmless, and there any page
// already touched keeps its size.) The pages past c in the last huge page
// (less than 2 MiB) become resident with it.
func Make[T any](n, c int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if size == 0 || uintptr(c)*size < MinBytes || !enabled() {
		return make([]T, n, c)
	}
	pad := int((pageSize + size - 1) / size)
	raw := make([]T, c+pad)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	lo := (p + pageSize - 1) &^ (pageSize - 1)
	off := int((lo - p + size - 1) / size) // the first element at or after lo
	hi := (p + uintptr(off+c)*size + pageSize - 1) &^ (pageSize - 1)
	advise(lo, hi-lo)
	return raw[off : off+n : off+c]
}

// Bytes returns the bytes Make allocates for a slice of n bytes of
// elements: n, and a huge page more to align it where Make does.
func Bytes(n int64) int64 {
	if n >= MinBytes && enabled() {
		return n + pageSize
	}
	return n
}

// Advise asks for huge pages under the whole 2 MiB pages that s's backing
// array covers. Pages already touched keep their size, so call it on fresh
// memory: right after make, before the first write. Errors are ignored:
// the advice is only a hint.
func Advise[T any](s []T) {
	var zero T
	n := uintptr(len(s)) * unsafe.Sizeof(zero)
	if n < pageSize || !enabled() {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := (p + pageSize - 1) &^ (pageSize - 1)
	hi := (p + n) &^ (pageSize - 1)
	if hi > lo {
		advise(lo, hi-lo)
	}
}
