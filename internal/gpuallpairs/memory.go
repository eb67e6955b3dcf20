package gpuallpairs

import (
	"github.com/xsect/xsect/internal/gpurt"
)

// pinnedBuf returns slot i's pinned host buffer of at least n bytes,
// reallocating only to grow: pinning costs about as much as copying, so the
// buffers are kept from run to run.
func (st *state) pinnedBuf(c *gpurt.Ctx, i, n int) ([]byte, error) {
	for len(st.pinned) <= i {
		st.pinned = append(st.pinned, gpurt.Pinned{})
	}
	p := &st.pinned[i]
	if err := p.Grow(c, max(n, 1<<20)); err != nil {
		return nil, err
	}
	return p.Bytes()[:n], nil
}

// int8Works reports whether cuBLAS multiplies int8 matrices with int32
// results here, trying once on a small product.
func (st *state) int8Works(c *gpurt.Ctx) bool {
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
	if c.Gemm(bl, nil, gpurt.GemmInt8, n, n, n, a, n, a, n, false, out, n) != nil {
		return false
	}
	got := make([]uint32, n*n)
	if c.CopyToHost(gpurt.Bytes(got), out) != nil {
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

// devKeep is how much device memory runs leave allocated for the next:
// allocating and freeing a run's buffers costs about a millisecond.
const devKeep = 1 << 30
