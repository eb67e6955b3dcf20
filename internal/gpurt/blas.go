package gpurt

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/cuda"
)

// BLAS is the device's cuBLAS handle, for the matrix-multiplication
// techniques.
type BLAS struct {
	h cuda.BLASHandle
}

// BLASLibrary loads cuBLAS, which only the matrix-product techniques need,
// and returns its file name, or why it cannot be used. Planners ask it
// before they weigh such a technique: a machine with the driver alone has
// none.
func BLASLibrary() (string, error) { return loadBLAS() }

// loadBLAS loads cuBLAS once, a step of the start-up.
var loadBLAS = sync.OnceValues(func() (string, error) {
	defer record("cuBLAS library", time.Now(), 0)
	if err := cuda.LoadCUBLAS(); err != nil {
		return "", fmt.Errorf("gpu: %w", err)
	}
	return cuda.CUBLASLibrary(), nil
})

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

// GemmType is the element types of Gemm.
type GemmType int

const (
	// GemmInt8 multiplies int8 matrices, accumulating and writing int32:
	// exact for any k.
	GemmInt8 GemmType = iota
	// GemmFloat16 multiplies float16 matrices, accumulating and writing
	// float32: exact for integer results below 2^24.
	GemmFloat16
)

// Gemm queues C = A·Bᵀ (plus C if accumulate) on s, where A is m×k with
// rows lda elements apart, B is n×k with rows ldb apart and C is m×n with
// rows ldc apart, all row-major, with t's element types (1 byte per element
// for GemmInt8, 2 for GemmFloat16; C has 4-byte elements). cuBLAS's int8
// kernels want k, lda and ldb multiples of 4 and 4-byte aligned rows.
func (c *Ctx) Gemm(bl *BLAS, s *Stream, t GemmType, m, n, k int, a Buffer, lda int, b Buffer, ldb int, accumulate bool, out Buffer, ldc int) error {
	size := 1
	in, outType, compute := cuda.R8I, cuda.R32I, cuda.Compute32I
	if t == GemmFloat16 {
		size, in, outType, compute = 2, cuda.R16F, cuda.R32F, cuda.Compute32F
	} else if t != GemmInt8 {
		return fmt.Errorf("gpu: Gemm: unknown type %d", t)
	}
	if m < 0 || n < 0 || k < 0 || lda < k || ldb < k || ldc < n {
		return fmt.Errorf("gpu: Gemm %dx%dx%d: bad leading dimensions %d, %d, %d", m, n, k, lda, ldb, ldc)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if a.n < size*((m-1)*lda+k) || b.n < size*((n-1)*ldb+k) || out.n < 4*((m-1)*ldc+n) {
		return fmt.Errorf("gpu: Gemm %dx%dx%d: buffers too small", m, n, k)
	}
	if err := cuda.BLASSetStream(bl.h, s.handle()); err != nil {
		return c.wrap(err)
	}
	// As in Sgemm: row-major C = A·Bᵀ is column-major Cᵀ = B·Aᵀ.
	var alpha, beta [4]byte
	if t == GemmInt8 {
		*(*int32)(unsafe.Pointer(&alpha)) = 1
		if accumulate {
			*(*int32)(unsafe.Pointer(&beta)) = 1
		}
	} else {
		*(*float32)(unsafe.Pointer(&alpha)) = 1
		if accumulate {
			*(*float32)(unsafe.Pointer(&beta)) = 1
		}
	}
	err := cuda.GemmEx(bl.h, cuda.OpT, cuda.OpN, n, m, k, unsafe.Pointer(&alpha), cuda.DevPtr(b.ptr), in, ldb,
		cuda.DevPtr(a.ptr), in, lda, unsafe.Pointer(&beta), cuda.DevPtr(out.ptr), outType, ldc, compute)
	return c.wrap(err)
}
