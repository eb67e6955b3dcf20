// Package cuda holds xsect's raw bindings to the CUDA driver API
// (libcuda.so.1), NVRTC (libnvrtc.so.13, or an older major) and cuBLAS
// (libcublas.so.13), loaded at run time through purego: no cgo, so a binary
// built with CGO_ENABLED=0 runs on machines with and without a GPU.
//
// The bindings are thin: one Go function per C function xsect needs, taking
// and returning the C types' Go equivalents, each CUresult turned into an
// *Error that names the call. Handles are opaque uintptrs. The typed,
// goroutine-safe runtime built on them is internal/gpurt; nothing else
// should import this package.
//
// Hot calls (launches, copies, event records) go through purego.SyscallN,
// which costs about 70 ns, not through purego.RegisterFunc wrappers, which
// cost 200 to 580 ns.
package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Result is a CUresult, the status every driver API call returns.
type Result int32

// Success is CUDA_SUCCESS.
const Success Result = 0

// Results xsect looks for by value.
const (
	ErrorInvalidValue     Result = 1
	ErrorOutOfMemory      Result = 2
	ErrorNotInitialized   Result = 3
	ErrorNoDevice         Result = 100
	ErrorInvalidContext   Result = 201
	ErrorNotReady         Result = 600
	ErrorIllegalAddress   Result = 700
	ErrorLaunchOutOfRes   Result = 701
	ErrorLaunchFailed     Result = 719
	ErrorStubLibrary      Result = 34
	ErrorNoBinaryForGPU   Result = 209
	ErrorUnsupportedPTX   Result = 222
	ErrorSystemDriverMism Result = 803
	ErrorCompatNotSupp    Result = 804
)

// Error is a failed CUDA call: the function, the status and its name.
type Error struct {
	Call string // the C function, e.g. "cuMemAlloc_v2"
	Code Result
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, int32(e.Code))
}

// Is matches another *Error with the same code, so that callers can test
// errors.Is(err, &cuda.Error{Code: cuda.ErrorOutOfMemory}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// IsOutOfMemory reports whether err is a CUDA out-of-memory error.
func IsOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == ErrorOutOfMemory
}

// check turns a CUresult into an error naming call.
func check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Call: call, Code: r, Name: ErrorName(r)}
}

// ErrorName returns the CUDA name of r, such as "CUDA_ERROR_OUT_OF_MEMORY",
// asking the driver when it is loaded.
func ErrorName(r Result) string {
	if drv.cuGetErrorName != 0 {
		var p *byte
		if call(drv.cuGetErrorName, uintptr(r), uintptr(unsafe.Pointer(&p))) == Success && p != nil {
			return goString(p)
		}
	}
	if n, ok := knownNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUDA_ERROR_%d", int32(r))
}

// knownNames names the results seen most, for when the driver cannot.
var knownNames = map[Result]string{
	Success:               "CUDA_SUCCESS",
	ErrorInvalidValue:     "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:      "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:   "CUDA_ERROR_NOT_INITIALIZED",
	ErrorStubLibrary:      "CUDA_ERROR_STUB_LIBRARY",
	ErrorNoDevice:         "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidContext:   "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNoBinaryForGPU:   "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorUnsupportedPTX:   "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorNotReady:         "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:   "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfRes:   "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchFailed:     "CUDA_ERROR_LAUNCH_FAILED",
	ErrorSystemDriverMism: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrorCompatNotSupp:    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
}

// call invokes the C function fn. Arguments that are Go pointers converted
// to uintptr in the call expression stay alive and in place for the call.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) Result {
	r, _, _ := purego.SyscallN(fn, args...)
	return Result(int32(r))
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// cStringBytes trims b at its first NUL.
func cStringBytes(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// library is a dlopened shared library.
type library struct {
	name   string
	handle uintptr
}

// openFirst dlopens the first of names that loads. If none does, the error
// is the first name's: that is the library a user is expected to install.
func openFirst(names ...string) (library, error) {
	var first error
	for _, n := range names {
		h, err := dlopen(n)
		if err == nil {
			return library{name: n, handle: h}, nil
		}
		if first == nil {
			first = err
		}
	}
	return library{}, first
}

// sym resolves the first of names that the library exports: CUDA keeps old
// entry points beside the versioned ones (_v2), and the newest that exists
// is the one the C headers would pick.
func (l library) sym(names ...string) (uintptr, error) {
	for _, n := range names {
		if p, err := dlsym(l.handle, n); err == nil && p != 0 {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%s: no symbol %s", l.name, names[0])
}

// loader collects the first symbol error so that a table of lookups reads
// as a list.
type loader struct {
	lib library
	err error
}

func (ld *loader) get(names ...string) uintptr {
	p, err := ld.lib.sym(names...)
	if err != nil && ld.err == nil {
		ld.err = err
	}
	return p
}

// opt resolves a symbol the bindings can do without.
func (ld *loader) opt(names ...string) uintptr {
	p, _ := ld.lib.sym(names...)
	return p
}

var (
	driverOnce sync.Once
	driverErr  error
)
