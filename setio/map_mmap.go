//go:build !purego && (linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package setio

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xsect/xsect/sets"
)

func mapFile(path string) (*sets.Collection, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var magic [len(binaryMagic)]byte
	if n, _ := f.ReadAt(magic[:], 0); !littleEndian || !st.Mode().IsRegular() ||
		st.Size() < headerSize || n < len(magic) || !bytes.Equal(magic[:], binaryMagic[:]) {
		// Read what is open: a FIFO opened again would not give the
		// same bytes. ReadAt consumed nothing.
		size := int64(-1)
		if st.Mode().IsRegular() && st.Size() > 0 {
			size = st.Size()
		}
		c, _, err := Read(f, path, size)
		if err != nil {
			return nil, nil, err
		}
		return c, func() error { return nil }, nil
	}
	size := st.Size()
	if int64(int(size)) != size {
		return nil, nil, &ParseError{File: path, Msg: fmt.Sprintf("%d bytes cannot be mapped on this machine", size)}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	c, err := viewBinary(data, path)
	if err != nil {
		unix.Munmap(data)
		return nil, nil, err
	}
	var once sync.Once
	var cerr error
	return c, func() error {
		once.Do(func() { cerr = unix.Munmap(data) })
		return cerr
	}, nil
}

// viewBinary verifies a whole binary file held in data and returns a
// collection whose arrays alias it (a copy on a big-endian machine).
func viewBinary(data []byte, name string) (*sets.Collection, error) {
	if !littleEndian {
		return readBinary(bytes.NewReader(data), name, int64(len(data)))
	}
	h, err := decodeHeader(data[:headerSize], name, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if crc := checksum(data[headerSize:]); crc != h.payloadCRC {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("payload checksum mismatch: header says %08x, data has %08x", h.payloadCRC, crc)}
	}
	padAt := h.offsetsAt + 8*(h.k+1)
	for i, b := range data[padAt:h.elementsAt] {
		if b != 0 {
			return nil, &ParseError{File: name, Msg: fmt.Sprintf("nonzero padding byte at offset %d", padAt+uint64(i))}
		}
	}
	c := &sets.Collection{
		Offsets: unsafe.Slice((*uint64)(unsafe.Pointer(&data[h.offsetsAt])), h.k+1),
	}
	if h.n > 0 {
		c.Elements = unsafe.Slice((*uint32)(unsafe.Pointer(&data[h.elementsAt])), h.n)
	}
	if err := validate(c); err != nil {
		return nil, &ParseError{File: name, Msg: "invalid collection: " + err.Error()}
	}
	return c, nil
}
