package gpurt

import (
	"unsafe"
)

// Pinned is pinned host memory that grows on demand and is kept from use
// to use: pinning costs about as much as copying, so engines keep their
// buffers from run to run. Its methods run inside Do. The zero value is
// empty.
type Pinned struct {
	h *HostBuffer
}

// Len returns the buffer's size in bytes.
func (p *Pinned) Len() int {
	if p.h == nil {
		return 0
	}
	return len(p.h.Bytes())
}

// Bytes returns the memory (nil while empty). It is valid until the buffer
// grows or is freed.
func (p *Pinned) Bytes() []byte {
	if p.h == nil {
		return nil
	}
	return p.h.Bytes()
}

// Grow makes the buffer hold at least n bytes. If it must reallocate, it
// frees the old memory as Free does and allocates exactly n bytes.
func (p *Pinned) Grow(c *Ctx, n int) error {
	if p.Len() >= n {
		return nil
	}
	if err := p.Free(c); err != nil {
		return err
	}
	h, err := c.AllocHost(n)
	if err != nil {
		return err
	}
	p.h = h
	return nil
}

// Free frees the memory, after waiting for all the device's work: a copy
// queued earlier may still read or write it. The buffer is then empty and
// may grow again.
func (p *Pinned) Free(c *Ctx) error {
	if p.h == nil {
		return nil
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	err := c.FreeHost(p.h)
	p.h = nil
	return err
}

// Uint32s views b as uint32s (its length rounded down), without copying.
// b must be 4-byte aligned, as pinned memory and device results are.
func Uint32s(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}
