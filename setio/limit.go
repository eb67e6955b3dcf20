package setio

import (
	"fmt"
	"unsafe"

	"github.com/xsect/xsect/internal/hugepage"
)

// LimitError is a collection that needs more memory than a reader may use
// (ReadLimited's limit). It is not bad input: the same data read with a
// higher limit loads.
type LimitError struct {
	File  string // the file's name, as given
	Limit int64  // bytes
	// Need is the bytes the collection's arrays need, where known (a
	// binary header says), or 0: more than Limit.
	Need int64
	// Sets and Elements are those read when the limit was reached, or
	// those a binary header declares.
	Sets, Elements int64
}

// Error returns the message, prefixed with the file name: the sets and
// elements read or declared and, in MiB, the limit and the memory needed
// where known.
func (e *LimitError) Error() string {
	if e.Need > 0 {
		return fmt.Sprintf("%s: %d sets and %d elements need %s, over the limit of %s", e.File, e.Sets, e.Elements, mib(e.Need), mib(e.Limit))
	}
	return fmt.Sprintf("%s: more than the limit of %s after %d sets and %d elements", e.File, mib(e.Limit), e.Sets, e.Elements)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// collectionBytes is the memory of arrays of the given capacities: the
// bytes a reader's limit counts.
func collectionBytes(offsets, elements int) int64 { return 8*int64(offsets) + 4*int64(elements) }

// growWithin returns s with room for more entries beyond its length,
// grown geometrically, such that the new array, the old one (alive while
// it is copied) and other bytes stay within limit (0: no limit); ok is
// false if they cannot.
func growWithin[T any](s []T, more int, other, limit int64) (_ []T, ok bool) {
	need := len(s) + more
	if need <= cap(s) {
		return s, true
	}
	size := int64(unsafe.Sizeof(*new(T)))
	c := max(need, 2*cap(s), 256)
	if limit > 0 {
		room := (limit - other - size*int64(cap(s))) / size
		if int64(need) > room {
			return s, false
		}
		c = int(min(int64(c), room))
	}
	t := hugepage.Make[T](len(s), c)
	copy(t, s)
	return t, true
}
