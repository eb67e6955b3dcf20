package gpurt

import (
	"fmt"
	"testing"

	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// BenchmarkStager times one upload from Go memory and one download into
// it, as a run makes them: through a Stager whose ring is pinned for it
// (cold), through one already pinned (warm), and straight from or to
// pageable memory, for rings of a few shapes. ns/op is the whole copy, the
// pinning included where cold.
func BenchmarkStager(b *testing.B) {
	gputest.Need(b, Available())
	b.Setenv("XSECT_CACHE_DIR", b.TempDir())
	dev, err := Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, size := range []int{32 << 20, 128 << 20, 512 << 20} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i * 7)
		}
		var dst Buffer
		if err := dev.Do(func(c *Ctx) (err error) { dst, err = c.Alloc(size); return err }); err != nil {
			b.Fatal(err)
		}
		run := func(name string, f func(c *Ctx) error) {
			b.Run(fmt.Sprintf("%dMiB/%s", size>>20, name), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if err := dev.Do(f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		run("up/pageable", func(c *Ctx) error { return c.CopyToDevice(dst, src) })
		run("down/pageable", func(c *Ctx) error { return c.CopyToHost(src, dst) })
		for _, ring := range []struct{ slots, bytes int }{{16, 4 << 20}, {8, 2 << 20}, {16, 1 << 20}, {8, 1 << 20}, {4, 1 << 20}} {
			name := fmt.Sprintf("%dx%dMiB", ring.slots, ring.bytes>>20)
			copies := []struct {
				dir  string
				copy func(st *Stager, c *Ctx) error
			}{
				{"up", func(st *Stager, c *Ctx) error { return st.Upload(c, nil, dst, src) }},
				{"down", func(st *Stager, c *Ctx) error { return st.Download(c, nil, src, dst) }},
			}
			for _, cp := range copies {
				run(cp.dir+"/"+name+"-cold", func(c *Ctx) error {
					st := NewStager(ring.slots, ring.bytes)
					if err := cp.copy(st, c); err != nil {
						return err
					}
					return st.Free(c)
				})
				warm := NewStager(ring.slots, ring.bytes)
				if err := dev.Do(func(c *Ctx) error { return cp.copy(warm, c) }); err != nil {
					b.Fatal(err)
				}
				run(cp.dir+"/"+name+"-warm", func(c *Ctx) error {
					if err := cp.copy(warm, c); err != nil {
						return err
					}
					return c.Synchronize()
				})
				if err := dev.Do(warm.Free); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := dev.Do(func(c *Ctx) error { return c.Free(dst) }); err != nil {
			b.Fatal(err)
		}
	}
	// The pinning alone (not the freeing), in slots and at once.
	for _, p := range []struct{ n, bytes int }{{16, 4 << 20}, {1, 64 << 20}, {4, 1 << 20}} {
		b.Run(fmt.Sprintf("pin/%dx%dMiB", p.n, p.bytes>>20), func(b *testing.B) {
			for b.Loop() {
				err := dev.Do(func(c *Ctx) error {
					var hs []*HostBuffer
					for range p.n {
						h, err := c.AllocHost(p.bytes)
						if err != nil {
							return err
						}
						hs = append(hs, h)
					}
					b.StopTimer()
					defer b.StartTimer()
					for _, h := range hs {
						if err := c.FreeHost(h); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
