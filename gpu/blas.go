package gpu

import (
	"fmt"

	"github.com/xsect/xsect/internal/cuda"
)

// BLAS is the device's cuBLAS handle, for the matrix-multiplication
// techniques.
type BLAS struct {
	h cuda.BLASHandle
}

// BLAS returns the device's cuBLAS handle, creating it at first use.
func (c *Ctx) BLAS() (*BLAS, error) {
	if c.blas != nil {
		return c.blas, nil
	}
	h, err := cuda.BLASCreate()
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	c.blas = &BLAS{h: h}
	return c.blas, nil
}

// Sgemm queues C = A·Bᵀ on s, where A is m×k, B is n×k and C is m×n, all
// float32 and row-major (the layout of a collection's incidence matrix, so
// that C[i][j] is the dot product of row i of A and row j of B).
func (c *Ctx) Sgemm(bl *BLAS, s *Stream, m, n, k int, a, b, out Buffer) error {
	if a.n < 4*m*k || b.n < 4*n*k || out.n < 4*m*n {
		return fmt.Errorf("gpu: Sgemm %dx%dx%d: buffers too small", m, n, k)
	}
	if err := cuda.BLASSetStream(bl.h, s.handle()); err != nil {
		return c.wrap(err)
	}
	// Row-major C (m×n) is column-major Cᵀ (n×m) = B·Aᵀ in column-major
	// terms, where row-major B (n×k) is column-major Bᵀ (k×n).
	err := cuda.Sgemm(bl.h, cuda.OpT, cuda.OpN, n, m, k, 1, cuda.DevPtr(b.ptr), k, cuda.DevPtr(a.ptr), k, 0, cuda.DevPtr(out.ptr), n)
	return c.wrap(err)
}
