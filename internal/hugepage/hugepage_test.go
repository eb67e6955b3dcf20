package hugepage

import (
	"testing"
	"unsafe"
)

// TestMake checks that slices from Make behave as plain ones, at sizes
// below, at and above the threshold, with element sizes that do and do not
// divide a page, and that the big ones start on a huge page boundary where
// the kernel gives huge pages.
func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, 1000, MinBytes / 4, MinBytes/4 + 1, 3 * MinBytes / 4} {
		s := Make[uint32](n, n+7)
		if len(s) != n || cap(s) != n+7 {
			t.Fatalf("Make(%d, %d): len %d cap %d", n, n+7, len(s), cap(s))
		}
		if enabled() && 4*cap(s) >= MinBytes && uintptr(unsafe.Pointer(unsafe.SliceData(s)))%pageSize != 0 {
			t.Errorf("Make(%d): not aligned on a huge page", n)
		}
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("Make(%d): s[%d] = %d, want 0", n, i, s[i])
			}
			s[i] = uint32(i)
		}
		s = append(s, 1, 2, 3, 4, 5, 6, 7) // within the capacity
		for i := range n {
			if s[i] != uint32(i) {
				t.Fatalf("Make(%d): s[%d] = %d after writing %d", n, i, s[i], i)
			}
		}
		Advise(s) // again, on touched memory: harmless
	}
	type odd [3]byte
	b := Make[odd](MinBytes/3+5, MinBytes/3+5)
	b[len(b)-1] = odd{1, 2, 3}
	if b[len(b)-1] != (odd{1, 2, 3}) || b[0] != (odd{}) {
		t.Fatal("Make of 3-byte elements")
	}
}
