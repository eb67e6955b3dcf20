//go:build linux

package hugepage

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// enabled is whether the kernel gives huge pages on advice, read at the
// first large slice rather than at every process's start: with
// transparent huge pages "never", Make would only waste address space.
var enabled = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !strings.Contains(string(b), "[never]")
})

// advise passes addresses, not a slice: the range may run past the Go
// object it was computed from, into other memory of the heap.
func advise(p, n uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, p, n, unix.MADV_HUGEPAGE)
}
