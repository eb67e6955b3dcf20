//go:build !purego && (linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package invindex

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// openFile maps a regular file on a little-endian machine and reads
// anything else (a FIFO, /dev/stdin).
func openFile(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !littleEndian || !st.Mode().IsRegular() || st.Size() < headerSize || int64(int(st.Size())) != st.Size() {
		size := int64(-1)
		if st.Mode().IsRegular() {
			size = st.Size()
		}
		return Read(f, path, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		// Some file systems cannot map: read instead.
		return Read(f, path, st.Size())
	}
	ix, err := Decode(data, path)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	var once sync.Once
	var cerr error
	ix.release = func() error {
		once.Do(func() { cerr = unix.Munmap(data) })
		return cerr
	}
	return ix, nil
}
