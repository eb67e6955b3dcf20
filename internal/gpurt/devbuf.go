package gpurt

import (
	"errors"
	"slices"
	"sync/atomic"
)

// Grow makes *b, a buffer from Alloc (or the zero Buffer), at least n
// bytes long. A shorter buffer is freed and replaced by one of n bytes
// and an eighth more, room to grow a little without reallocating again;
// its contents are not kept. The caller waits first for queued work that
// may still use *b. On error *b is the zero Buffer.
func (c *Ctx) Grow(b *Buffer, n int) error {
	if b.Len() >= n {
		return nil
	}
	err := c.Free(*b)
	*b = Buffer{}
	if err != nil {
		return err
	}
	nb, err := c.Alloc(n + n/8)
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// BufferPool keeps device buffers from run to run, since allocating and
// freeing a run's buffers costs about a millisecond. Take, Keep and Drop
// run on the device's goroutine; Pooled may be read from any goroutine,
// for planning, which counts the pooled bytes as free. The zero value is
// empty.
type BufferPool struct {
	free   []Buffer // by increasing length
	pooled atomic.Int64
}

// Take returns the smallest pooled buffer of n to 2n bytes, or a new one
// of n bytes if none is pooled.
func (p *BufferPool) Take(c *Ctx, n int) (Buffer, error) {
	i, _ := slices.BinarySearchFunc(p.free, n, func(b Buffer, n int) int { return b.Len() - n })
	if i < len(p.free) && p.free[i].Len() <= 2*n {
		b := p.free[i]
		p.free = slices.Delete(p.free, i, i+1)
		p.pooled.Add(-int64(b.Len()))
		return b, nil
	}
	return c.Alloc(n)
}

// Keep puts buffers in the pool, once the device is done with them, and
// frees the largest beyond keep bytes in all.
func (p *BufferPool) Keep(c *Ctx, bufs []Buffer, keep int64) error {
	for _, b := range bufs {
		if b.Len() == 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(p.free, b.Len(), func(b Buffer, n int) int { return b.Len() - n })
		p.free = slices.Insert(p.free, i, b)
		p.pooled.Add(int64(b.Len()))
	}
	var errs []error
	for p.pooled.Load() > keep {
		b := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.pooled.Add(-int64(b.Len()))
		errs = append(errs, c.Free(b))
	}
	return errors.Join(errs...)
}

// Drop frees every pooled buffer.
func (p *BufferPool) Drop(c *Ctx) error {
	return p.Keep(c, nil, 0)
}

// Pooled returns the bytes the pool holds.
func (p *BufferPool) Pooled() int64 { return p.pooled.Load() }
