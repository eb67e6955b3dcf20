package invindex

import (
	"fmt"
	"io"
	"os"
	"unsafe"
)

// Open opens the index file at path: memory-mapped read-only where the
// system allows (see Map), otherwise read into memory; either way
// verified whole (header, checksums, every invariant) before it is
// returned. Errors name the file; those about its content match
// setio.ErrBadInput.
func Open(path string) (*Index, error) {
	ix, err := openFile(path)
	if err != nil {
		return nil, err
	}
	ix.Path = path
	return ix, nil
}

// Read reads a whole index file from r (name is used in errors) into
// memory and verifies it.
func Read(r io.Reader, name string, size int64) (*Index, error) {
	data, err := readAligned(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Decode(data, name)
}

// readAligned reads r to its end into 8-byte aligned memory, so that
// Decode can use the arrays in place.
func readAligned(r io.Reader, size int64) ([]byte, error) {
	capacity := int64(headerSize)
	if size > 0 {
		capacity = size + 1 // one more to see the end without growing
	}
	buf := alignedBytes(int(capacity))[:0]
	for {
		if len(buf) == cap(buf) {
			grown := alignedBytes(2 * cap(buf))[:len(buf)]
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	if len(w) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// readFile is Open without a mapping.
func readFile(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return Read(f, path, size)
}
