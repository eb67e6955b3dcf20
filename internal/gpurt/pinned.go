package gpurt

import (
	"sync"
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

// PinnedPool keeps pinned buffers free for the taking, for buffers that
// pass between goroutines: the device fills one, workers read it and put
// it back. Get and Trim run inside Do; Put may be called from any
// goroutine. The zero value is empty.
type PinnedPool struct {
	mu   sync.Mutex
	free []*HostBuffer
}

// Get returns a free buffer of at least n bytes from the pool, or a new
// one of n bytes if none is free.
func (p *PinnedPool) Get(c *Ctx, n int) (*HostBuffer, error) {
	p.mu.Lock()
	for i, h := range p.free {
		if len(h.Bytes()) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			return h, nil
		}
	}
	p.mu.Unlock()
	return c.AllocHost(n)
}

// Put gives h back to the pool, once the device and the caller are done
// with it.
func (p *PinnedPool) Put(h *HostBuffer) {
	p.mu.Lock()
	p.free = append(p.free, h)
	p.mu.Unlock()
}

// Trim frees buffers of the pool, smallest first, until it holds at most
// keep bytes.
func (p *PinnedPool) Trim(c *Ctx, keep int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for _, h := range p.free {
		total += len(h.Bytes())
	}
	var err error
	for total > keep && len(p.free) > 0 {
		small := 0
		for i, h := range p.free {
			if len(h.Bytes()) < len(p.free[small].Bytes()) {
				small = i
			}
		}
		h := p.free[small]
		p.free = append(p.free[:small], p.free[small+1:]...)
		total -= len(h.Bytes())
		if e := c.FreeHost(h); e != nil && err == nil {
			err = e
		}
	}
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
