package gpurt

import (
	"bytes"
	"testing"
)

func TestGrow(t *testing.T) {
	d := openTest(t)
	err := d.Do(func(c *Ctx) error {
		var b Buffer
		if err := c.Grow(&b, 1000); err != nil {
			return err
		}
		if b.Len() < 1000 {
			t.Fatalf("Grow(1000) made %d bytes", b.Len())
		}
		first := b
		if err := c.Grow(&b, 900); err != nil {
			return err
		}
		if b != first {
			t.Error("Grow reallocated a buffer that was long enough")
		}
		if err := c.Grow(&b, 1<<20); err != nil {
			return err
		}
		if b.Len() < 1<<20 {
			t.Fatalf("Grow(1 MiB) made %d bytes", b.Len())
		}
		// The grown buffer is device memory of that length.
		want := bytes.Repeat([]byte{1, 2, 3, 4}, 1<<18)
		if err := c.CopyToDevice(b.Slice(0, len(want)), want); err != nil {
			return err
		}
		got := make([]byte, len(want))
		if err := c.CopyToHost(got, b.Slice(0, len(got))); err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Error("the grown buffer did not keep what was copied into it")
		}
		return c.Free(b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBufferPool(t *testing.T) {
	d := openTest(t)
	err := d.Do(func(c *Ctx) error {
		var p BufferPool
		var bufs []Buffer
		for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
			b, err := p.Take(c, n)
			if err != nil {
				return err
			}
			if b.Len() != n {
				t.Errorf("Take(%d) from an empty pool gave %d bytes", n, b.Len())
			}
			bufs = append(bufs, b)
		}
		if err := p.Keep(c, bufs, 1<<30); err != nil {
			return err
		}
		if got, want := p.Pooled(), int64(4<<10+64<<10+1<<20); got != want {
			t.Errorf("Pooled = %d, want %d", got, want)
		}
		// The smallest buffer of n to 2n bytes, else a new one.
		b, err := p.Take(c, 40<<10)
		if err != nil {
			return err
		}
		if b != bufs[1] {
			t.Errorf("Take(40 KiB) gave %d bytes, want the pooled 64 KiB", b.Len())
		}
		nb, err := p.Take(c, 100<<10)
		if err != nil {
			return err
		}
		if nb.Len() != 100<<10 {
			t.Errorf("Take(100 KiB) gave %d bytes: no pooled buffer is 100-200 KiB", nb.Len())
		}
		// Keep frees the largest beyond its bound.
		if err := p.Keep(c, []Buffer{b, nb}, 200<<10); err != nil {
			return err
		}
		if got, want := p.Pooled(), int64(4<<10+64<<10+100<<10); got != want {
			t.Errorf("Pooled after Keep(200 KiB) = %d, want %d", got, want)
		}
		if err := p.Drop(c); err != nil {
			return err
		}
		if p.Pooled() != 0 {
			t.Errorf("Pooled after Drop = %d", p.Pooled())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
