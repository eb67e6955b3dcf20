package gpurt

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/cuda"
)

// Buffer is device memory: an address in the device's space and a length in
// bytes. It is a plain value; Slice makes views into it. The zero Buffer is
// empty.
type Buffer struct {
	ptr cuda.DevPtr
	n   int
}

// Len returns the buffer's length in bytes.
func (b Buffer) Len() int { return b.n }

// Ptr returns the device address, for kernel arguments.
func (b Buffer) Ptr() uintptr { return uintptr(b.ptr) }

// Slice returns the n bytes of b starting at off.
func (b Buffer) Slice(off, n int) Buffer {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("gpu: Buffer.Slice(%d, %d) out of range [0, %d]", off, n, b.n))
	}
	return Buffer{ptr: b.ptr + cuda.DevPtr(off), n: n}
}

// Alloc allocates n bytes of device memory. Out of memory is an error that
// says how much was asked for and how much was free.
func (c *Ctx) Alloc(n int) (Buffer, error) {
	if n < 0 {
		return Buffer{}, fmt.Errorf("gpu: Alloc(%d): negative size", n)
	}
	if n == 0 {
		return Buffer{}, nil
	}
	p, err := cuda.MemAlloc(uint64(n))
	if err != nil {
		if cuda.IsOutOfMemory(err) {
			free, _, _ := cuda.MemGetInfo()
			return Buffer{}, c.wrap(fmt.Errorf("allocating %s with %s free: %w", FormatBytes(uint64(n)), FormatBytes(free), err))
		}
		return Buffer{}, c.wrap(err)
	}
	return Buffer{ptr: p, n: n}, nil
}

// Free frees a buffer from Alloc (not a Slice of it). Freeing the zero
// Buffer does nothing.
func (c *Ctx) Free(b Buffer) error {
	if b.ptr == 0 {
		return nil
	}
	return c.wrap(cuda.MemFree(b.ptr))
}

// HostBuffer is page-locked ("pinned") host memory, which the device reads
// and writes at full bus speed and which asynchronous copies require.
type HostBuffer struct {
	b []byte
}

// Bytes returns the memory. It is valid until FreeHost.
func (h *HostBuffer) Bytes() []byte { return h.b }

// Uint32s returns the memory as uint32s (its length rounded down).
func (h *HostBuffer) Uint32s() []uint32 { return Uint32s(h.b) }

// AllocHost allocates n bytes of pinned host memory.
func (c *Ctx) AllocHost(n int) (*HostBuffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("gpu: AllocHost(%d): size must be positive", n)
	}
	start := time.Now()
	b, err := cuda.MemAllocHost(uint64(n))
	if err != nil {
		return nil, c.wrap(err)
	}
	record(pinnedStep, start, int64(n))
	return &HostBuffer{b: b}, nil
}

// FreeHost frees pinned memory from AllocHost.
func (c *Ctx) FreeHost(h *HostBuffer) error {
	if h == nil || h.b == nil {
		return nil
	}
	err := cuda.MemFreeHost(h.b)
	h.b = nil
	return c.wrap(err)
}

// Register page-locks existing host memory in place (the backing array of
// b, which must stay reachable until Unregister), so that copies from and to
// it run at full speed without a staging copy.
func (c *Ctx) Register(b []byte) error { return c.wrap(cuda.MemHostRegister(b)) }

// Unregister undoes Register.
func (c *Ctx) Unregister(b []byte) error { return c.wrap(cuda.MemHostUnregister(b)) }

func checkCopy(op string, dst, src int) error {
	if dst != src {
		return fmt.Errorf("gpu: %s: lengths differ (%d bytes to %d)", op, src, dst)
	}
	return nil
}

// CopyToDevice copies src into dst, which must be as long, after the work
// queued on the default stream and on the streams from NewStream, and waits
// until the data is on the device.
func (c *Ctx) CopyToDevice(dst Buffer, src []byte) error {
	if err := checkCopy("CopyToDevice", dst.n, len(src)); err != nil {
		return err
	}
	// cuMemcpyHtoD from pageable memory may return before its DMA is done;
	// a queued copy and a stream synchronisation make "done" mean done.
	if err := cuda.MemcpyHtoDAsync(dst.ptr, src, 0); err != nil {
		return c.wrap(err)
	}
	return c.asyncErr(cuda.StreamSynchronize(0))
}

// CopyToHost copies src into dst, which must be as long, after the work
// queued on the default stream and on the streams from NewStream, and waits.
func (c *Ctx) CopyToHost(dst []byte, src Buffer) error {
	if err := checkCopy("CopyToHost", len(dst), src.n); err != nil {
		return err
	}
	return c.asyncErr(cuda.MemcpyDtoH(dst, src.ptr))
}

// CopyToDeviceAsync queues a copy of src into dst on s. src must stay
// unchanged until the copy completes; it overlaps with other work only if
// src is pinned (a HostBuffer or Registered).
func (c *Ctx) CopyToDeviceAsync(dst Buffer, src []byte, s *Stream) error {
	if err := checkCopy("CopyToDeviceAsync", dst.n, len(src)); err != nil {
		return err
	}
	return c.wrap(cuda.MemcpyHtoDAsync(dst.ptr, src, s.handle()))
}

// CopyToHostAsync queues a copy of src into dst on s; dst is valid once s
// (or an event recorded after the copy) has been waited for.
func (c *Ctx) CopyToHostAsync(dst []byte, src Buffer, s *Stream) error {
	if err := checkCopy("CopyToHostAsync", len(dst), src.n); err != nil {
		return err
	}
	return c.wrap(cuda.MemcpyDtoHAsync(dst, src.ptr, s.handle()))
}

// CopyDevice queues a device-to-device copy on s.
func (c *Ctx) CopyDevice(dst, src Buffer, s *Stream) error {
	if err := checkCopy("CopyDevice", dst.n, src.n); err != nil {
		return err
	}
	return c.wrap(cuda.MemcpyDtoDAsync(dst.ptr, src.ptr, uint64(src.n), s.handle()))
}

// Memset32 queues setting every 32-bit word of b to v on s. b's length must
// be a multiple of 4.
func (c *Ctx) Memset32(b Buffer, v uint32, s *Stream) error {
	if b.n%4 != 0 {
		return fmt.Errorf("gpu: Memset32: length %d is not a multiple of 4", b.n)
	}
	if b.n == 0 {
		return nil
	}
	return c.wrap(cuda.MemsetD32Async(b.ptr, v, uint64(b.n/4), s.handle()))
}

// Memset8 queues setting every byte of b to v on s.
func (c *Ctx) Memset8(b Buffer, v uint8, s *Stream) error {
	if b.n == 0 {
		return nil
	}
	return c.wrap(cuda.MemsetD8Async(b.ptr, v, uint64(b.n), s.handle()))
}

// Word is the element types Bytes converts.
type Word interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~float32 | ~float64
}

// Bytes returns s's memory as bytes, without copying, for the copy methods.
func Bytes[T Word](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// FormatBytes writes n in binary units, such as "1.5 GiB".
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
