package gpuallpairs

import (
	"sync"
	"unsafe"

	"github.com/xsect/xsect/gpu"
)

// pinnedBuf returns slot i's pinned host buffer of at least n bytes,
// reallocating only to grow: pinning costs about as much as copying, so the
// buffers are kept from run to run.
func (st *state) pinnedBuf(c *gpu.Ctx, i, n int) ([]byte, error) {
	for len(st.pinned) <= i {
		st.pinned = append(st.pinned, nil)
	}
	if h := st.pinned[i]; h != nil && len(h.Bytes()) >= n {
		return h.Bytes()[:n], nil
	}
	if h := st.pinned[i]; h != nil {
		if err := c.Synchronize(); err != nil {
			return nil, err
		}
		if err := c.FreeHost(h); err != nil {
			return nil, err
		}
		st.pinned[i] = nil
	}
	h, err := c.AllocHost(max(n, 1<<20))
	if err != nil {
		return nil, err
	}
	st.pinned[i] = h
	return h.Bytes()[:n], nil
}

// asUint32s views b (4-byte aligned, as pinned memory is) as uint32s.
func asUint32s(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Uploads from Go memory go through pinned buffers in two banks: goroutines
// fill one bank while the device copies the other.
const (
	stageBytes = 4 << 20
	stageBank  = 8
)

type stageSlot struct {
	buf  *gpu.HostBuffer
	ev   *gpu.Event
	used bool
}

// upload queues the copy of src to dst on s; src may change once it
// returns.
func (st *state) upload(c *gpu.Ctx, s *gpu.Stream, dst gpu.Buffer, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if len(src) <= stageBytes {
		// One copy through the driver's own staging: from pageable
		// memory it returns once src has been read.
		return c.CopyToDeviceAsync(dst, src, s)
	}
	if st.stage == nil {
		for range 2 * stageBank {
			h, err := c.AllocHost(stageBytes)
			if err != nil {
				return err
			}
			ev, err := c.NewEvent()
			if err != nil {
				c.FreeHost(h)
				return err
			}
			st.stage = append(st.stage, stageSlot{buf: h, ev: ev})
		}
	}
	n := ceilDiv(len(src), stageBytes)
	for base := 0; base < n; base += stageBank {
		bank := (base / stageBank) % 2
		batch := min(stageBank, n-base)
		for k := range batch {
			if sl := &st.stage[bank*stageBank+k]; sl.used {
				if err := c.Wait(sl.ev); err != nil {
					return err
				}
			}
		}
		var wg sync.WaitGroup
		for k := range batch {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				i := base + k
				copy(st.stage[bank*stageBank+k].buf.Bytes(), src[i*stageBytes:min(len(src), (i+1)*stageBytes)])
			}(k)
		}
		wg.Wait()
		for k := range batch {
			i := base + k
			sl := &st.stage[bank*stageBank+k]
			m := min(len(src), (i+1)*stageBytes) - i*stageBytes
			if err := c.CopyToDeviceAsync(dst.Slice(i*stageBytes, m), sl.buf.Bytes()[:m], s); err != nil {
				return err
			}
			if err := c.Record(sl.ev, s); err != nil {
				return err
			}
			sl.used = true
		}
	}
	return nil
}

// int8Works reports whether cuBLAS multiplies int8 matrices with int32
// results here, trying once on a small product.
func (st *state) int8Works(c *gpu.Ctx) bool {
	if st.int8OK != 0 {
		return st.int8OK > 0
	}
	st.int8OK = -1
	bl, err := c.BLAS()
	if err != nil {
		return false
	}
	const n = 16
	a, err := c.Alloc(n * n)
	if err != nil {
		return false
	}
	defer c.Free(a)
	out, err := c.Alloc(4 * n * n)
	if err != nil {
		return false
	}
	defer c.Free(out)
	ones := make([]byte, n*n)
	for i := range ones {
		ones[i] = 1
	}
	if c.CopyToDevice(a, ones) != nil {
		return false
	}
	if c.Gemm(bl, nil, gpu.GemmInt8, n, n, n, a, n, a, n, false, out, n) != nil {
		return false
	}
	got := make([]uint32, n*n)
	if c.CopyToHost(gpu.Bytes(got), out) != nil {
		return false
	}
	for _, v := range got {
		if v != n {
			return false
		}
	}
	st.int8OK = 1
	return true
}
