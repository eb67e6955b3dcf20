package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtcLibs lists the NVRTC libraries tried, newest first.
var nvrtcLibs = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so"}

var nvrtc struct {
	lib                                                                                      library
	version, create, compile, logSize, getLog, cubinSize, getCubin, ptxSize, getPTX, destroy uintptr
	errorString                                                                              func(int32) string

	once sync.Once
	err  error
}

// LoadNVRTC opens the newest NVRTC library present. It runs once.
func LoadNVRTC() error {
	nvrtc.once.Do(func() {
		lib, err := openFirst(nvrtcLibs...)
		if err != nil {
			nvrtc.err = fmt.Errorf("no NVRTC runtime compiler (%w)", err)
			return
		}
		ld := loader{lib: lib}
		nvrtc.version = ld.get("nvrtcVersion")
		nvrtc.create = ld.get("nvrtcCreateProgram")
		nvrtc.compile = ld.get("nvrtcCompileProgram")
		nvrtc.logSize = ld.get("nvrtcGetProgramLogSize")
		nvrtc.getLog = ld.get("nvrtcGetProgramLog")
		nvrtc.cubinSize = ld.get("nvrtcGetCUBINSize")
		nvrtc.getCubin = ld.get("nvrtcGetCUBIN")
		nvrtc.ptxSize = ld.get("nvrtcGetPTXSize")
		nvrtc.getPTX = ld.get("nvrtcGetPTX")
		nvrtc.destroy = ld.get("nvrtcDestroyProgram")
		es := ld.get("nvrtcGetErrorString")
		if ld.err != nil {
			nvrtc.err = fmt.Errorf("NVRTC %s is unusable: %w", lib.name, ld.err)
			return
		}
		purego.RegisterFunc(&nvrtc.errorString, es)
		nvrtc.lib = lib
	})
	return nvrtc.err
}

// NVRTCVersion returns the loaded NVRTC's version.
func NVRTCVersion() (major, minor int, err error) {
	if err := LoadNVRTC(); err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if r := call(nvrtc.version, uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi))); r != 0 {
		return 0, 0, nvrtcError("nvrtcVersion", r)
	}
	return int(ma), int(mi), nil
}

// NVRTCLibrary returns the file name of the loaded NVRTC library.
func NVRTCLibrary() string { return nvrtc.lib.name }

// CompileError is a failed NVRTC compilation with the compiler's log.
type CompileError struct {
	Name string // the program's name, shown in the log's messages
	Err  error
	Log  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s: %v\n%s", e.Name, e.Err, strings.TrimSpace(e.Log))
}

func (e *CompileError) Unwrap() error { return e.Err }

func nvrtcError(call string, r Result) error {
	return fmt.Errorf("%s: %s (%d)", call, nvrtc.errorString(int32(r)), int32(r))
}

// CompileCUBIN compiles CUDA C source to a cubin with NVRTC. options are
// NVRTC's command-line options, such as "--gpu-architecture=sm_90".
func CompileCUBIN(name, source string, options []string) (cubin []byte, log string, err error) {
	cubin, log, err = compile(name, source, options, nvrtc.cubinSize, nvrtc.getCubin, "nvrtcGetCUBIN")
	if err == nil && len(cubin) == 0 {
		err = fmt.Errorf("nvrtc: %s: empty cubin (is the target a real architecture, sm_XY?)", name)
	}
	return cubin, log, err
}

// CompilePTX compiles CUDA C source to PTX with NVRTC, for a virtual
// architecture such as "--gpu-architecture=compute_80". The PTX ends in the
// NUL that cuModuleLoadData needs.
func CompilePTX(name, source string, options []string) (ptx []byte, log string, err error) {
	return compile(name, source, options, nvrtc.ptxSize, nvrtc.getPTX, "nvrtcGetPTX")
}

// compile runs NVRTC on source and returns the output that sizeFn and
// getFn read (a cubin or PTX) with the compiler's log.
func compile(name, source string, options []string, sizeFn, getFn uintptr, getName string) (out []byte, log string, err error) {
	if err := LoadNVRTC(); err != nil {
		return nil, "", err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	src, cname := cString(source), cString(name)
	var prog uintptr
	if r := call(nvrtc.create, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); r != 0 {
		return nil, "", nvrtcError("nvrtcCreateProgram", r)
	}
	defer call(nvrtc.destroy, uintptr(unsafe.Pointer(&prog)))

	opts := make([]uintptr, len(options)+1)
	for i, o := range options {
		b := cString(o)
		pin.Pin(&b[0])
		opts[i] = uintptr(unsafe.Pointer(&b[0]))
	}
	rc := call(nvrtc.compile, prog, uintptr(len(options)), uintptr(unsafe.Pointer(&opts[0])))

	var logSize uintptr
	if r := call(nvrtc.logSize, prog, uintptr(unsafe.Pointer(&logSize))); r == 0 && logSize > 1 {
		buf := make([]byte, logSize)
		if call(nvrtc.getLog, prog, uintptr(unsafe.Pointer(&buf[0]))) == 0 {
			log = cStringBytes(buf)
		}
	}
	if rc != 0 {
		return nil, log, &CompileError{Name: name, Err: nvrtcError("nvrtcCompileProgram", rc), Log: log}
	}
	var size uintptr
	if r := call(sizeFn, prog, uintptr(unsafe.Pointer(&size))); r != 0 {
		return nil, log, nvrtcError(getName+"Size", r)
	}
	if size == 0 {
		return nil, log, nil
	}
	out = make([]byte, size)
	if r := call(getFn, prog, uintptr(unsafe.Pointer(&out[0]))); r != 0 {
		return nil, log, nvrtcError(getName, r)
	}
	return out, log, nil
}
