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
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !littleEndian || !st.Mode().IsRegular() || st.Size() < headerSize || int64(int(st.Size())) != st.Size() {
		defer f.Close()
		size := int64(-1)
		if st.Mode().IsRegular() {
			size = st.Size()
		}
		return Read(f, path, size)
	}
	// The file's state when mapped, taken before it is read: a change
	// while Decode verifies it shows too.
	var mapped unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &mapped); err != nil {
		f.Close()
		return nil, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		// Some file systems cannot map: read instead.
		defer f.Close()
		return Read(f, path, st.Size())
	}
	ix, err := Decode(data, path)
	if err != nil {
		unix.Munmap(data)
		f.Close()
		return nil, err
	}
	// The file stays open, for fstat: the path may since name another
	// file (a new index renamed over it), which is no change of this one.
	ix.changed = func() error {
		var now unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &now); err != nil {
			return err
		}
		// Not the status change time: unlinking the file (a new index
		// renamed over its path) changes it.
		if now.Size != mapped.Size || now.Mtim != mapped.Mtim {
			return changedError(path)
		}
		return nil
	}
	var once sync.Once
	var cerr error
	ix.release = func() error {
		once.Do(func() {
			cerr = unix.Munmap(data)
			f.Close()
		})
		return cerr
	}
	return ix, nil
}
