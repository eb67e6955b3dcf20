package setio

import (
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/xsect/xsect/sets"
)

func TestCRCCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 8, 9, 100, 2500, 4999, 5000} {
		a, b := data[:cut], data[cut:]
		got := crcCombine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b)))
		if want := crc32.Checksum(data, castagnoli); got != want {
			t.Errorf("cut at %d: combined %08x, want %08x", cut, got, want)
		}
	}
}

func TestChecksumParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(3, 4))
	// Sizes that cut into 2, 3 and 4 parts, the last longer.
	for _, n := range []int{2*parallelBytes + 5, 3*parallelBytes + 1, 5*parallelBytes - 3} {
		data := make([]byte, n)
		for i := 0; i < n; i += 4096 {
			data[i] = byte(r.Uint32())
		}
		data[n-1] = 1
		if got, want := checksum(data), crc32.Checksum(data, castagnoli); got != want {
			t.Errorf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}

func TestValidateSetsParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	// Sets of 1000 elements, enough of them for four parts.
	k := 4*parallelElements/1000 + 10
	c := &sets.Collection{Offsets: make([]uint64, k+1), Elements: make([]uint32, 0, 1000*k)}
	for i := range k {
		for e := range 1000 {
			c.Elements = append(c.Elements, uint32(e*3))
		}
		c.Offsets[i+1] = uint64(len(c.Elements))
	}
	if err := validate(c); err != nil {
		t.Fatal(err)
	}
	// The first bad set is reported, whichever part finds one first.
	for _, bad := range []int{k - 1, k / 2, 3} {
		c.Elements[c.Offsets[bad]+500] = c.Elements[c.Offsets[bad]+499] // a duplicate
	}
	err := validate(c)
	if err == nil || !strings.Contains(err.Error(), "set 3 ") {
		t.Errorf("validate = %v, want set 3 named", err)
	}
}
