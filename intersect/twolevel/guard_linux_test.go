package twolevel

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded copies s into memory that ends (atEnd) or starts right at an
// inaccessible page, so that a kernel reading one byte past the slice's
// length (or before its start) faults.
func guarded[T uint16 | uint32](t *testing.T, s []T, atEnd bool) []T {
	t.Helper()
	page := syscall.Getpagesize()
	size := int(unsafe.Sizeof(T(0))) * len(s)
	n := (size+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	var data []byte
	if atEnd {
		if err := syscall.Mprotect(mem[n-page:], syscall.PROT_NONE); err != nil {
			t.Fatal(err)
		}
		data = mem[n-page-size : n-page]
	} else {
		if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
			t.Fatal(err)
		}
		data = mem[page : page+size]
	}
	if len(s) == 0 {
		return s
	}
	g := unsafe.Slice((*T)(unsafe.Pointer(&data[0])), len(s))
	copy(g, s)
	return g
}

// TestGuardPages runs every method on sets whose headers and lower halves
// end (or start) at an inaccessible page: the kernels must never read
// outside the slices.
func TestGuardPages(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, atEnd := range []bool{true, false} {
		for _, n := range []int{1, 2, 3, 7, 8, 9, 31, 32, 33, 100, 5000} {
			for _, u := range []uint64{uint64(2 * n), 1 << 16, 1 << 20, 1 << 32} {
				a := FromSorted(randomSet(r, n, 0, u))
				b := FromSorted(randomSet(r, n+r.IntN(3)-1, 0, u))
				want := reference(a.AppendTo(nil), b.AppendTo(nil))
				ga := &Set{hdr: guarded(t, a.hdr, atEnd), lows: guarded(t, a.lows, atEnd)}
				gb := &Set{hdr: guarded(t, b.hdr, atEnd), lows: guarded(t, b.lows, atEnd)}
				for _, m := range allMethods() {
					name := fmt.Sprintf("%s %d over %d atEnd=%v", m.Name, n, u, atEnd)
					if got := m.Count(ga, gb); got != len(want) {
						t.Fatalf("%s: Count = %d, want %d", name, got, len(want))
					}
					if got := m.Intersect(nil, ga, gb); len(got) != len(want) {
						t.Fatalf("%s: Intersect found %d, want %d", name, len(got), len(want))
					}
					if got := m.IntersectSet(ga, gb); got.Len() != len(want) {
						t.Fatalf("%s: IntersectSet found %d, want %d", name, got.Len(), len(want))
					}
				}
			}
		}
	}
}
