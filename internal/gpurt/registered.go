package gpurt

// Registered is host memory from the Go heap, page-locked with the driver
// (Register) once and kept from use to use, that grows on demand. The
// device copies it at bus speed as it does AllocHost memory, but it is
// ordinary cached memory for the CPU: on the H100 host, writing
// AllocHost memory ran at about 1 GB/s a core, far below memory speed.
// Where the driver refuses to register (some platforms and
// virtualisations do), it falls back to AllocHost memory; Fallback says
// so. Its methods run inside Do. The zero value is empty.
type Registered struct {
	words []uint64 // the Go memory, reachable while registered
	b     []byte
	h     *HostBuffer // the fallback
}

// registeredUnit rounds registered sizes: a multiple of 64 KiB is a large
// object of the Go heap, on pages of its own, so that two registrations
// never share a page.
const registeredUnit = 64 << 10

// Len returns the buffer's size in bytes.
func (r *Registered) Len() int { return len(r.b) }

// Bytes returns the memory (nil while empty), 8-byte aligned. It is valid
// until the buffer grows or is freed.
func (r *Registered) Bytes() []byte { return r.b }

// Fallback reports whether the memory came from AllocHost because the
// driver refused to register Go memory.
func (r *Registered) Fallback() bool { return r.h != nil }

// Grow makes the buffer hold at least n bytes. If it must reallocate, it
// frees the old memory as Free does (the contents are not kept).
func (r *Registered) Grow(c *Ctx, n int) error {
	if r.Len() >= n {
		return nil
	}
	if err := r.Free(c); err != nil {
		return err
	}
	size := (n + registeredUnit - 1) / registeredUnit * registeredUnit
	words := make([]uint64, size/8)
	b := Bytes(words)
	if err := c.Register(b); err != nil {
		h, err2 := c.AllocHost(n)
		if err2 != nil {
			return err2
		}
		r.h, r.b = h, h.Bytes()
		return nil
	}
	r.words, r.b = words, b
	return nil
}

// Free releases the memory after waiting for all the device's work (a
// copy queued earlier may still use it). The buffer is then empty and may
// grow again.
func (r *Registered) Free(c *Ctx) error {
	if r.b == nil {
		return nil
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	var err error
	if r.h != nil {
		err = c.FreeHost(r.h)
	} else {
		err = c.Unregister(r.b)
	}
	r.words, r.b, r.h = nil, nil, nil
	return err
}
