package setio

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Portable conversions between the little-endian arrays of the binary
// format and memory, through a fixed buffer.

const convBuf = 64 << 10

func readLE64Generic(r io.Reader, dst []uint64, crc uint32) ([]uint64, uint32, int, error) {
	buf := make([]byte, convBuf)
	done := 0
	for i := 0; i < len(dst); {
		m := min(len(dst)-i, convBuf/8)
		n, err := io.ReadFull(r, buf[:8*m])
		crc = crc32.Update(crc, castagnoli, buf[:n])
		done += n
		if err != nil {
			return dst, crc, done, err
		}
		for j := range m {
			dst[i+j] = binary.LittleEndian.Uint64(buf[8*j:])
		}
		i += m
	}
	return dst, crc, done, nil
}

func readLE32Generic(r io.Reader, dst []uint32, crc uint32) ([]uint32, uint32, int, error) {
	buf := make([]byte, convBuf)
	done := 0
	for i := 0; i < len(dst); {
		m := min(len(dst)-i, convBuf/4)
		n, err := io.ReadFull(r, buf[:4*m])
		crc = crc32.Update(crc, castagnoli, buf[:n])
		done += n
		if err != nil {
			return dst, crc, done, err
		}
		for j := range m {
			dst[i+j] = binary.LittleEndian.Uint32(buf[4*j:])
		}
		i += m
	}
	return dst, crc, done, nil
}

// encode64 writes s in little endian through buf, calling emit for each
// filled part of buf.
func encode64(s []uint64, emit func([]byte) error) error {
	buf := make([]byte, convBuf)
	for i := 0; i < len(s); {
		m := min(len(s)-i, convBuf/8)
		for j := range m {
			binary.LittleEndian.PutUint64(buf[8*j:], s[i+j])
		}
		if err := emit(buf[:8*m]); err != nil {
			return err
		}
		i += m
	}
	return nil
}

func encode32(s []uint32, emit func([]byte) error) error {
	buf := make([]byte, convBuf)
	for i := 0; i < len(s); {
		m := min(len(s)-i, convBuf/4)
		for j := range m {
			binary.LittleEndian.PutUint32(buf[4*j:], s[i+j])
		}
		if err := emit(buf[:4*m]); err != nil {
			return err
		}
		i += m
	}
	return nil
}

func crcLE64Generic(crc uint32, s []uint64) uint32 {
	encode64(s, func(b []byte) error { crc = crc32.Update(crc, castagnoli, b); return nil })
	return crc
}

func crcLE32Generic(crc uint32, s []uint32) uint32 {
	encode32(s, func(b []byte) error { crc = crc32.Update(crc, castagnoli, b); return nil })
	return crc
}

func writeLE64Generic(w io.Writer, s []uint64) error {
	return encode64(s, func(b []byte) error { _, err := w.Write(b); return err })
}

func writeLE32Generic(w io.Writer, s []uint32) error {
	return encode32(s, func(b []byte) error { _, err := w.Write(b); return err })
}
