package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

var cublas struct {
	lib                               library
	create, destroy, setStream, sgemm uintptr
	gemmEx                            uintptr // 0 if the library lacks it
	statusName                        func(int32) string

	once sync.Once
	err  error
}

// LoadCUBLAS opens libcublas (13, else 12). It runs once.
func LoadCUBLAS() error {
	cublas.once.Do(func() {
		lib, err := openFirst("libcublas.so.13", "libcublas.so.12", "libcublas.so")
		if err != nil {
			cublas.err = fmt.Errorf("no cuBLAS (%w)", err)
			return
		}
		ld := loader{lib: lib}
		cublas.create = ld.get("cublasCreate_v2")
		cublas.destroy = ld.get("cublasDestroy_v2")
		cublas.setStream = ld.get("cublasSetStream_v2")
		cublas.sgemm = ld.get("cublasSgemm_v2")
		cublas.gemmEx = ld.opt("cublasGemmEx")
		if ld.err != nil {
			cublas.err = fmt.Errorf("cuBLAS %s is unusable: %w", lib.name, ld.err)
			return
		}
		if p := ld.opt("cublasGetStatusName"); p != 0 {
			purego.RegisterFunc(&cublas.statusName, p)
		}
		cublas.lib = lib
	})
	return cublas.err
}

// CUBLASLibrary returns the file name of the loaded cuBLAS library.
func CUBLASLibrary() string { return cublas.lib.name }

// BLASHandle is a cublasHandle_t, bound to the context current when it was
// created.
type BLASHandle uintptr

// BLASError is a failed cuBLAS call.
type BLASError struct {
	Call   string
	Status int32
	Name   string
}

func (e *BLASError) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Status) }

func blasCheck(callName string, r Result) error {
	if r == 0 {
		return nil
	}
	name := fmt.Sprintf("CUBLAS_STATUS_%d", int32(r))
	if cublas.statusName != nil {
		name = cublas.statusName(int32(r))
	}
	return &BLASError{Call: callName, Status: int32(r), Name: name}
}

// BLASCreate creates a cuBLAS handle in the current context.
func BLASCreate() (BLASHandle, error) {
	if err := LoadCUBLAS(); err != nil {
		return 0, err
	}
	var h BLASHandle
	err := blasCheck("cublasCreate_v2", call(cublas.create, uintptr(unsafe.Pointer(&h))))
	return h, err
}

// BLASDestroy destroys h.
func BLASDestroy(h BLASHandle) error {
	return blasCheck("cublasDestroy_v2", call(cublas.destroy, uintptr(h)))
}

// BLASSetStream makes h's work go to s.
func BLASSetStream(h BLASHandle, s Stream) error {
	return blasCheck("cublasSetStream_v2", call(cublas.setStream, uintptr(h), uintptr(s)))
}

// BLAS operations (cublasOperation_t).
const (
	OpN = 0
	OpT = 1
)

// Sgemm computes C = alpha*op(A)*op(B) + beta*C on column-major float32
// matrices in device memory; op(A) is m×k, op(B) k×n, C m×n.
func Sgemm(h BLASHandle, transA, transB int, m, n, k int, alpha float32, a DevPtr, lda int, b DevPtr, ldb int, beta float32, c DevPtr, ldc int) error {
	return blasCheck("cublasSgemm_v2", call(cublas.sgemm, uintptr(h), uintptr(transA), uintptr(transB),
		uintptr(m), uintptr(n), uintptr(k), uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda),
		uintptr(b), uintptr(ldb), uintptr(unsafe.Pointer(&beta)), uintptr(c), uintptr(ldc)))
}

// Data types (cudaDataType) and compute types (cublasComputeType_t) of
// GemmEx.
const (
	R32F       = 0  // CUDA_R_32F
	R16F       = 2  // CUDA_R_16F
	R8I        = 3  // CUDA_R_8I
	R32I       = 10 // CUDA_R_32I
	Compute32F = 68 // CUBLAS_COMPUTE_32F
	Compute32I = 72 // CUBLAS_COMPUTE_32I
)

// GemmEx computes C = alpha*op(A)*op(B) + beta*C on column-major matrices
// of the given types (cublasGemmEx, with CUBLAS_GEMM_DEFAULT). alpha and
// beta point to scalars of the compute type (int32 for Compute32I, float32
// for Compute32F), in host memory.
func GemmEx(h BLASHandle, transA, transB int, m, n, k int, alpha unsafe.Pointer, a DevPtr, aType, lda int,
	b DevPtr, bType, ldb int, beta unsafe.Pointer, c DevPtr, cType, ldc int, compute int) error {
	if cublas.gemmEx == 0 {
		return fmt.Errorf("cublasGemmEx: not in %s", cublas.lib.name)
	}
	const gemmDefault = ^uintptr(0) // CUBLAS_GEMM_DEFAULT (-1)
	return blasCheck("cublasGemmEx", call(cublas.gemmEx, uintptr(h), uintptr(transA), uintptr(transB),
		uintptr(m), uintptr(n), uintptr(k), uintptr(alpha), uintptr(a), uintptr(aType), uintptr(lda),
		uintptr(b), uintptr(bType), uintptr(ldb), uintptr(beta), uintptr(c), uintptr(cType), uintptr(ldc),
		uintptr(compute), gemmDefault))
}
