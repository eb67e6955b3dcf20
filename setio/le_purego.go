//go:build purego

package setio

import "io"

// The purego build converts every array through a buffer (le_generic.go).

const littleEndian = false

func readLE64(r io.Reader, dst []uint64, crc uint32) ([]uint64, uint32, int, error) {
	return readLE64Generic(r, dst, crc)
}

func readLE32(r io.Reader, dst []uint32, crc uint32) ([]uint32, uint32, int, error) {
	return readLE32Generic(r, dst, crc)
}

func crcLE64(crc uint32, s []uint64) uint32 { return crcLE64Generic(crc, s) }
func crcLE32(crc uint32, s []uint32) uint32 { return crcLE32Generic(crc, s) }

func writeLE64(w io.Writer, s []uint64) error { return writeLE64Generic(w, s) }
func writeLE32(w io.Writer, s []uint32) error { return writeLE32Generic(w, s) }
