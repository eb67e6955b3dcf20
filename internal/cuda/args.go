package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// MaxArgBytes is the most kernel argument bytes a launch may carry (CUDA's
// classic 4 KB limit, which every device supports).
const MaxArgBytes = 4096

// The launch "extra" keys (CU_LAUNCH_PARAM_*).
const (
	launchParamEnd           = 0
	launchParamBufferPointer = 1
	launchParamBufferSize    = 2
)

// Args packs kernel arguments into one flat buffer, each at its natural
// alignment, as the kernel's parameter block lays them out. It is passed to
// cuLaunchKernel through CU_LAUNCH_PARAM_BUFFER_POINTER, so no Go pointer
// needs pinning beyond the call. An Args is reused launch after launch: call
// Reset before packing the next set. The zero value is ready to use.
type Args struct {
	buf   [MaxArgBytes]byte
	n     int
	err   error
	size  uintptr
	extra [5]uintptr
}

// Reset empties a.
func (a *Args) Reset() { a.n, a.err = 0, nil }

// Err returns the first packing error (too many argument bytes).
func (a *Args) Err() error { return a.err }

// Bytes returns the packed argument block.
func (a *Args) Bytes() []byte { return a.buf[:a.n] }

// put appends v's size bytes aligned to size.
func (a *Args) put(size int, v uint64) {
	off := (a.n + size - 1) &^ (size - 1)
	if off+size > len(a.buf) {
		if a.err == nil {
			a.err = fmt.Errorf("kernel arguments exceed %d bytes", MaxArgBytes)
		}
		return
	}
	clear(a.buf[a.n:off])
	switch size {
	case 4:
		binary.LittleEndian.PutUint32(a.buf[off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(a.buf[off:], v)
	}
	a.n = off + size
}

// Ptr appends a device pointer (a C pointer parameter).
func (a *Args) Ptr(p DevPtr) { a.put(8, uint64(p)) }

// U32 appends an unsigned int.
func (a *Args) U32(v uint32) { a.put(4, uint64(v)) }

// I32 appends an int.
func (a *Args) I32(v int32) { a.put(4, uint64(uint32(v))) }

// U64 appends an unsigned long long.
func (a *Args) U64(v uint64) { a.put(8, v) }

// I64 appends a long long.
func (a *Args) I64(v int64) { a.put(8, uint64(v)) }

// F32 appends a float.
func (a *Args) F32(v float32) { a.put(4, uint64(math.Float32bits(v))) }

// F64 appends a double.
func (a *Args) F64(v float64) { a.put(8, math.Float64bits(v)) }

// prepare fills the extra array that points at the buffer. The pointers are
// into a itself, which the caller keeps alive across the launch.
func (a *Args) prepare() {
	a.size = uintptr(a.n)
	a.extra = [5]uintptr{
		launchParamBufferPointer, uintptr(unsafe.Pointer(&a.buf[0])),
		launchParamBufferSize, uintptr(unsafe.Pointer(&a.size)),
		launchParamEnd,
	}
}
