//go:build !purego

package setio

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"unsafe"
)

// On a little-endian machine the arrays are read and written as they lie in
// memory; the purego build and big-endian machines convert through a buffer.

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// ioChunk is how much is read before it is checksummed, so that the CRC
// runs on data still in cache.
const ioChunk = 1 << 20

func bytes64(s []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 8*len(s))
}

func bytes32(s []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

// readRaw fills b from r in chunks, continuing the CRC.
func readRaw(r io.Reader, b []byte, crc uint32) (uint32, int, error) {
	done := 0
	for done < len(b) {
		end := min(done+ioChunk, len(b))
		n, err := io.ReadFull(r, b[done:end])
		crc = crc32.Update(crc, castagnoli, b[done:done+n])
		done += n
		if err != nil {
			return crc, done, err
		}
	}
	return crc, done, nil
}

// readLE64 fills dst with little-endian uint64s from r, continuing the CRC
// over the bytes; it returns dst, the CRC, the bytes read and an error.
func readLE64(r io.Reader, dst []uint64, crc uint32) ([]uint64, uint32, int, error) {
	if !littleEndian {
		return readLE64Generic(r, dst, crc)
	}
	crc, n, err := readRaw(r, bytes64(dst), crc)
	return dst, crc, n, err
}

// readLE32 is readLE64 for uint32s.
func readLE32(r io.Reader, dst []uint32, crc uint32) ([]uint32, uint32, int, error) {
	if !littleEndian {
		return readLE32Generic(r, dst, crc)
	}
	crc, n, err := readRaw(r, bytes32(dst), crc)
	return dst, crc, n, err
}

func crcLE64(crc uint32, s []uint64) uint32 {
	if !littleEndian {
		return crcLE64Generic(crc, s)
	}
	return crc32.Update(crc, castagnoli, bytes64(s))
}

func crcLE32(crc uint32, s []uint32) uint32 {
	if !littleEndian {
		return crcLE32Generic(crc, s)
	}
	return crc32.Update(crc, castagnoli, bytes32(s))
}

func writeLE64(w io.Writer, s []uint64) error {
	if !littleEndian {
		return writeLE64Generic(w, s)
	}
	_, err := w.Write(bytes64(s))
	return err
}

func writeLE32(w io.Writer, s []uint32) error {
	if !littleEndian {
		return writeLE32Generic(w, s)
	}
	_, err := w.Write(bytes32(s))
	return err
}
