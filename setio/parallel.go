package setio

import (
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"sync"

	"github.com/xsect/xsect/sets"
)

// Large files are checked on every core: a file of 800 MB takes a third
// of a second on one.
const (
	parallelBytes    = 16 << 20 // the least data worth spreading over cores
	parallelElements = 4 << 20
)

// checksum returns the Castagnoli CRC-32 of data, computed in parts on
// every core for large data and combined.
func checksum(data []byte) uint32 {
	parts := min(runtime.GOMAXPROCS(0), len(data)/parallelBytes)
	if parts < 2 {
		return crc32.Checksum(data, castagnoli)
	}
	crcs := make([]uint32, parts)
	each := len(data) / parts
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := i*each, (i+1)*each
		if i == parts-1 {
			hi = len(data)
		}
		wg.Go(func() { crcs[i] = crc32.Checksum(data[lo:hi], castagnoli) })
	}
	wg.Wait()
	crc := crcs[0]
	for i := 1; i < parts; i++ {
		n := each
		if i == parts-1 {
			n = len(data) - (parts-1)*each
		}
		crc = crcCombine(crc, crcs[i], int64(n))
	}
	return crc
}

// crcCombine returns the CRC of A followed by B, from A's CRC, B's CRC and
// B's length, for the reflected Castagnoli polynomial: A's CRC is carried
// through len2 zero bytes (multiplication by x^(8·len2) over GF(2),
// applying the operator for 2^k zero bits for each set bit of the length)
// and added to B's.
func crcCombine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	// odd is the operator for one zero bit, then squared in turn: two,
	// four, ... bits.
	var odd, even [32]uint32
	odd[0] = crc32.Castagnoli // reflected polynomial
	row := uint32(1)
	for i := 1; i < 32; i++ {
		odd[i] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // 2 zero bits
	gf2Square(&odd, &even) // 4 zero bits
	for {
		gf2Square(&even, &odd) // 8 zero bits: one zero byte, then 2, 4, ...
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

// gf2Times returns the 32x32 GF(2) matrix mat times vec.
func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

// gf2Square sets square to mat times mat.
func gf2Square(square, mat *[32]uint32) {
	for i := range square {
		square[i] = gf2Times(mat, mat[i])
	}
}

// validateSets is sets.Collection.Validate's check that every set is
// strictly increasing, on every core for large collections; c's offsets
// are known to be in order and in bounds. It reports the first set that is
// not.
func validateSets(c *sets.Collection) error {
	parts := min(runtime.GOMAXPROCS(0), len(c.Elements)/parallelElements)
	if parts < 2 {
		return c.Validate()
	}
	// Ranges of sets of about equal elements.
	bad := make([]int, parts)
	var wg sync.WaitGroup
	lo := 0
	for i := range parts {
		hi := c.Len()
		if i < parts-1 {
			target := uint64(len(c.Elements)) * uint64(i+1) / uint64(parts)
			at, _ := slices.BinarySearch(c.Offsets, target) // the first set starting there or after
			hi = max(lo, min(at, c.Len()))
		}
		from := lo
		wg.Go(func() {
			bad[i] = -1
			for s := from; s < hi; s++ {
				if !sets.IsStrict(c.Set(s)) {
					bad[i] = s
					return
				}
			}
		})
		lo = hi
	}
	wg.Wait()
	for _, s := range bad {
		if s >= 0 {
			return fmt.Errorf("sets: set %d is not strictly increasing", s)
		}
	}
	return nil
}
