//go:build amd64 && !purego && linux

package intersect

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"
	"unsafe"
)

// guardedSets maps memory with an inaccessible page on both sides, so that
// a kernel reading before the start or past the end of a set faults.
type guardedSets struct {
	maps [][]byte
}

// place returns a copy of s that starts right after a guard page (atEnd
// false) or ends right before one (atEnd true).
func (g *guardedSets) place(t *testing.T, s []uint32, atEnd bool) []uint32 {
	t.Helper()
	page := syscall.Getpagesize()
	data := (len(s)*4 + page - 1) / page * page
	if data == 0 {
		data = page
	}
	mem, err := syscall.Mmap(-1, 0, data+2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	g.maps = append(g.maps, mem)
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[page+data:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	off := page
	if atEnd {
		off = page + data - len(s)*4
	}
	out := unsafe.Slice((*uint32)(unsafe.Pointer(&mem[off])), len(s))
	copy(out, s)
	return out[:len(s):len(s)]
}

func (g *guardedSets) free() {
	for _, m := range g.maps {
		syscall.Munmap(m)
	}
	g.maps = nil
}

// TestMethodsStayInBounds runs every method on sets that touch guard pages:
// kernels must not read outside their inputs, not even within a vector.
func TestMethodsStayInBounds(t *testing.T) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	r := rand.New(rand.NewPCG(7, 8))
	sizes := []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128, 129, 1000}
	var g guardedSets
	defer g.free()
	for _, m := range allMethods() {
		for _, na := range sizes {
			for _, nb := range []int{na, 16, 100, 5000} {
				a0, b0 := randomSet(r, na, 3*uint64(na+nb)+1), randomSet(r, nb, 3*uint64(na+nb)+1)
				want := reference(a0, b0)
				for _, atEnd := range []bool{false, true} {
					a, b := g.place(t, a0, atEnd), g.place(t, b0, atEnd)
					name := fmt.Sprintf("%s %d x %d at end %v", m.Name, na, nb, atEnd)
					func() {
						defer func() {
							if e := recover(); e != nil {
								t.Fatalf("%s: %v", name, e)
							}
						}()
						if got := m.Count(a, b); got != len(want) {
							t.Fatalf("%s: Count = %d, want %d", name, got, len(want))
						}
						if got := m.Intersect(nil, b, a); !slices.Equal(got, want) && len(got)+len(want) > 0 {
							t.Fatalf("%s: Intersect = %v, want %v", name, got, want)
						}
					}()
				}
				g.free()
			}
		}
	}
}

// TestGuardPagesFault checks the check: a read one value past a guarded
// set must fault.
func TestGuardPagesFault(t *testing.T) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var g guardedSets
	defer g.free()
	for _, atEnd := range []bool{false, true} {
		s := g.place(t, []uint32{1, 2, 3}, atEnd)
		p := unsafe.Pointer(&s[0])
		if atEnd {
			p = unsafe.Add(p, 4*len(s))
		} else {
			p = unsafe.Add(p, -4)
		}
		faulted := func() (faulted bool) {
			defer func() { faulted = recover() != nil }()
			_ = *(*uint32)(p)
			return false
		}()
		if !faulted {
			t.Errorf("reading next to a guarded set (at end %v) did not fault", atEnd)
		}
	}
}
