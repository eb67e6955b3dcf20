package gpurt

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// TestRegistered round-trips data through Registered buffers and the
// device asynchronously, across a Grow that reallocates, and checks that
// Free empties a buffer that may grow again.
func TestRegistered(t *testing.T) {
	d := openTest(t)
	err := d.Do(func(c *Ctx) error {
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		var up, down Registered
		defer up.Free(c)
		defer down.Free(c)
		for round, n := range []int{1, 100, 5 << 20, 64 << 10} {
			if err := up.Grow(c, n); err != nil {
				return err
			}
			if err := down.Grow(c, n); err != nil {
				return err
			}
			if up.Len() < n || down.Len() < n || len(up.Bytes()) != up.Len() {
				return fmt.Errorf("round %d: Grow(%d) gave %d and %d bytes", round, n, up.Len(), down.Len())
			}
			t.Logf("round %d: %d bytes, fallback to AllocHost: %v", round, up.Len(), up.Fallback())
			src := up.Bytes()[:n]
			for i := range src {
				src[i] = byte(i*7 + round)
			}
			dst := down.Bytes()[:n]
			clear(dst)
			buf, err := c.Alloc(n)
			if err != nil {
				return err
			}
			if err := c.CopyToDeviceAsync(buf, src, s); err != nil {
				return err
			}
			if err := c.CopyToHostAsync(dst, buf, s); err != nil {
				return err
			}
			if err := c.Sync(s); err != nil {
				return err
			}
			c.Free(buf)
			for i := range dst {
				if dst[i] != byte(i*7+round) {
					return fmt.Errorf("round %d: byte %d is %d after the round trip, want %d", round, i, dst[i], byte(i*7+round))
				}
			}
		}
		if err := up.Free(c); err != nil {
			return err
		}
		if up.Len() != 0 || up.Bytes() != nil {
			return fmt.Errorf("after Free: %d bytes", up.Len())
		}
		return up.Grow(c, 10)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkHostWrite compares the CPU's speed writing and reading
// AllocHost memory, Registered memory and plain Go memory (1 MiB).
func BenchmarkHostWrite(b *testing.B) {
	gputest.Need(b, Available())
	d, err := Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	const n = 1 << 20
	var pinned *HostBuffer
	var reg Registered
	if err := d.Do(func(c *Ctx) error {
		var err error
		if pinned, err = c.AllocHost(n); err != nil {
			return err
		}
		return reg.Grow(c, n)
	}); err != nil {
		b.Fatal(err)
	}
	defer d.Do(func(c *Ctx) error { return errors.Join(c.FreeHost(pinned), reg.Free(c)) })
	for _, m := range []struct {
		name string
		b    []byte
	}{{"allochost", pinned.Bytes()}, {"registered", reg.Bytes()[:n]}, {"go", make([]byte, n)}} {
		w := Uint32s(m.b)
		b.Run(m.name+"/write", func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				for i := range w {
					w[i] = uint32(i)
				}
			}
			b.ReportMetric(float64(b.N)*n/time.Since(start).Seconds()/1e9, "GB/s")
		})
		b.Run(m.name+"/read", func(b *testing.B) {
			start := time.Now()
			var sum uint32
			for b.Loop() {
				for _, x := range w {
					sum += x
				}
			}
			b.ReportMetric(float64(b.N)*n/time.Since(start).Seconds()/1e9, "GB/s")
			sink = sum
		})
	}
}

var sink uint32
