package gpurt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/cuda"
)

// Source is a CUDA C translation unit. Kernels that Go looks up by name
// must be declared extern "C". NVRTC offers no standard headers: the
// source must be self-contained.
type Source struct {
	// Name is the file name compiler messages show, such as "sisi.cu".
	Name string
	// Code is the CUDA C source.
	Code string
	// Options are extra NVRTC options, such as "-DTILE=2048". The target
	// architecture is added for the device.
	Options []string
	// Prebuilt is the directory of the source's prebuilt kernels (see
	// EmbeddedSource), or nil: Load then compiles with NVRTC.
	Prebuilt fs.FS
}

// Origin says where a module's device code came from.
type Origin int

const (
	// FromCubin is a prebuilt cubin for the device's architecture.
	FromCubin Origin = iota + 1
	// FromPTX is prebuilt PTX, compiled by the driver.
	FromPTX
	// FromCache is a cubin NVRTC compiled earlier, from the disk cache.
	FromCache
	// FromNVRTC is a cubin NVRTC compiled now.
	FromNVRTC
)

func (o Origin) String() string {
	switch o {
	case FromCubin:
		return "prebuilt cubin"
	case FromPTX:
		return "prebuilt PTX"
	case FromCache:
		return "NVRTC (disk cache)"
	case FromNVRTC:
		return "NVRTC"
	}
	return "unknown"
}

// Module is compiled device code loaded into a device's context.
type Module struct {
	mod     cuda.Module
	name    string
	kernels map[string]*Kernel
	// From says where the device code came from.
	From Origin
	// Log is NVRTC's log (warnings), if it compiled and said anything.
	Log string
}

// Kernel is one __global__ function of a module.
type Kernel struct {
	f         cuda.Function
	name      string
	dynShared int // the dynamic shared memory limit set so far
	numRegs   int
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Registers returns the registers each thread of k uses.
func (k *Kernel) Registers() int { return k.numRegs }

// compileOptions returns the NVRTC options for src on arch (a real
// architecture, sm_XY, or a virtual one, compute_XY, for PTX).
func compileOptions(src Source, arch string) []string {
	return append([]string{"--gpu-architecture=" + arch, "--std=c++17"}, src.Options...)
}

// CompileCubin compiles src with NVRTC for a real architecture such as
// "sm_90", as Load does; internal/kernelgen prebuilds kernels with it.
func CompileCubin(src Source, arch string) ([]byte, error) {
	b, _, err := cuda.CompileCUBIN(src.Name, src.Code, compileOptions(src, arch))
	return b, err
}

// CompilePTX compiles src with NVRTC to PTX for a virtual architecture
// such as "compute_80", without the trailing NUL.
func CompilePTX(src Source, arch string) ([]byte, error) {
	b, _, err := cuda.CompilePTX(src.Name, src.Code, compileOptions(src, arch))
	return bytes.TrimRight(b, "\x00"), err
}

// cacheKey names a cubin by everything that determines it: the source, the
// options (which hold the architecture) and the compiler's version.
func cacheKey(src Source, options []string, compiler string) string {
	h := sha256.New()
	for _, part := range []string{"xsect-cubin-1", compiler, src.Name, src.Code} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	for _, o := range options {
		fmt.Fprintf(h, "%d:%s;", len(o), o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CacheDir returns the directory compiled kernels are cached in:
// $XSECT_CACHE_DIR/cubin if that is set, else xsect/cubin under the user's
// cache directory (os.UserCacheDir).
func CacheDir() (string, error) {
	if d := os.Getenv("XSECT_CACHE_DIR"); d != "" {
		return filepath.Join(d, "cubin"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "xsect", "cubin"), nil
}

// readCache returns the cached cubin for key, or nil.
func readCache(key string) []byte {
	dir, err := CacheDir()
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, key+".cubin"))
	if err != nil {
		return nil
	}
	return b
}

// writeCache stores a cubin under key, atomically; failures only cost a
// recompilation next time, so they are ignored.
func writeCache(key string, cubin []byte) error {
	dir, err := CacheDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, key+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(cubin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, key+".cubin"))
}

func removeCache(key string) {
	if dir, err := CacheDir(); err == nil {
		if err := os.Remove(filepath.Join(dir, key+".cubin")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// KernelsEnv names the environment variable that chooses where Load takes
// device code from: "auto" (the default: a prebuilt cubin, else prebuilt
// PTX, else NVRTC), "prebuilt" (prebuilt only: fails where NVRTC would be
// needed), "ptx" (prebuilt PTX, never a cubin; then NVRTC) or "nvrtc"
// (always NVRTC, for work on the kernels' sources).
const KernelsEnv = "XSECT_KERNELS"

// kernelsMode reads KernelsEnv.
func kernelsMode() (string, error) {
	switch m := os.Getenv(KernelsEnv); m {
	case "", "auto":
		return "auto", nil
	case "prebuilt", "ptx", "nvrtc":
		return m, nil
	default:
		return "", fmt.Errorf("gpu: %s=%q: want auto, prebuilt, ptx or nvrtc", KernelsEnv, m)
	}
}

// Load loads src's device code for the device: its prebuilt cubin or PTX
// where the binary holds them (no NVRTC needed), else compiled by NVRTC
// (or taken from its disk cache); see KernelsEnv. A module is loaded once
// per device: later Loads of the same source return the same *Module. A
// compilation error carries NVRTC's log.
func (c *Ctx) Load(src Source) (*Module, error) {
	key := src.Digest()
	if m := c.modules[key]; m != nil {
		return m, nil
	}
	start := time.Now()
	mode, err := kernelsMode()
	if err != nil {
		return nil, err
	}
	m := &Module{name: src.Name, kernels: map[string]*Kernel{}}
	why := "NVRTC asked for (" + KernelsEnv + "=nvrtc)"
	if mode != "nvrtc" {
		var image []byte
		info := c.dev.info
		image, m.From, why = prebuiltImage(src, info.Major, info.Minor, mode != "ptx")
		if image != nil {
			if m.mod, err = cuda.ModuleLoadData(image); err != nil {
				// A driver older than the PTX's ISA refuses it: NVRTC may
				// still compile for it.
				why = fmt.Sprintf("the driver refused the %v: %v", m.From, err)
			}
		}
	}
	if m.mod == 0 {
		if mode == "prebuilt" {
			return nil, c.wrap(fmt.Errorf("loading %s: %s, and %s=prebuilt forbids NVRTC", src.Stem(), why, KernelsEnv))
		}
		if err := c.compile(src, m); err != nil {
			if _, _, nerr := cuda.NVRTCVersion(); nerr != nil {
				return nil, c.wrap(fmt.Errorf("loading %s: %s, and no NVRTC to compile it: %v", src.Stem(), why, nerr))
			}
			return nil, err
		}
	}
	c.modules[key] = m
	record(fmt.Sprintf("module %s on GPU %d from %v", src.Stem(), c.dev.info.Ordinal, m.From), start, 0)
	return m, nil
}

// Unload unloads m from the device; its kernels must not be launched
// again, and the next Load of its source loads it afresh.
func (c *Ctx) Unload(m *Module) error {
	for key, x := range c.modules {
		if x == m {
			delete(c.modules, key)
		}
	}
	return c.wrap(cuda.ModuleUnload(m.mod))
}

// compile compiles src for the device with NVRTC, or takes the cubin from
// the disk cache, and loads it into m.
func (c *Ctx) compile(src Source, m *Module) error {
	maj, min, err := cuda.NVRTCVersion()
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	opts := compileOptions(src, c.dev.info.Arch())
	key := cacheKey(src, opts, fmt.Sprintf("nvrtc-%d.%d", maj, min))
	if cubin := readCache(key); cubin != nil {
		if h, err := cuda.ModuleLoadData(cubin); err == nil {
			m.mod, m.From = h, FromCache
			return nil
		}
		removeCache(key) // stale or damaged: compile afresh
	}
	cubin, log, err := cuda.CompileCUBIN(src.Name, src.Code, opts)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	m.Log = strings.TrimSpace(log)
	if m.mod, err = cuda.ModuleLoadData(cubin); err != nil {
		return c.wrap(fmt.Errorf("loading %s: %w", src.Name, err))
	}
	m.From = FromNVRTC
	writeCache(key, cubin)
	return nil
}

// Kernel returns the extern "C" kernel called name. Call it inside Do.
func (m *Module) Kernel(name string) (*Kernel, error) {
	if k := m.kernels[name]; k != nil {
		return k, nil
	}
	f, err := cuda.ModuleGetFunction(m.mod, name)
	if err != nil {
		return nil, fmt.Errorf("gpu: module %s: %w", m.name, err)
	}
	k := &Kernel{f: f, name: name}
	if k.numRegs, err = cuda.FuncGetAttribute(f, cuda.FuncAttrNumRegs); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	m.kernels[name] = k
	return k, nil
}

// Dim is a grid or block shape; Y and Z of 0 mean 1.
type Dim struct{ X, Y, Z int }

func (d Dim) cuda(what string, limYZ int) (cuda.Dim3, error) {
	y, z := max(d.Y, 1), max(d.Z, 1)
	if d.X < 1 || d.X > 1<<31-1 || y > limYZ || z > limYZ || d.Y < 0 || d.Z < 0 {
		return cuda.Dim3{}, fmt.Errorf("%s %dx%dx%d out of range", what, d.X, y, z)
	}
	return cuda.Dim3{X: uint32(d.X), Y: uint32(y), Z: uint32(z)}, nil
}

// Launch queues kernel k on s with the given grid and block shape and
// dynamic shared memory. args are the kernel's parameters in order, each of
// the Go type matching its C type: Buffer for pointers, int32 for int,
// uint32 for unsigned, int64 and uint64 for the 64-bit integers, float32
// and float64. A plain int is refused, since its C width is ambiguous.
// Launch checks that the launch was accepted; with XSECT_GPU_SYNC=1 it also
// waits for the kernel and reports faults as this launch's.
func (c *Ctx) Launch(k *Kernel, grid, block Dim, shared int, s *Stream, args ...any) error {
	c.args.Reset()
	if err := packArgs(&c.args, args); err != nil {
		return fmt.Errorf("gpu: launching %s: %w", k.name, err)
	}
	g, err := grid.cuda("grid", 65535)
	if err != nil {
		return fmt.Errorf("gpu: launching %s: %w", k.name, err)
	}
	b, err := block.cuda("block", 1024)
	if err != nil {
		return fmt.Errorf("gpu: launching %s: %w", k.name, err)
	}
	if shared > 48<<10 && shared > k.dynShared {
		if err := cuda.FuncSetAttribute(k.f, cuda.FuncAttrMaxDynamicSharedSizeBytes, shared); err != nil {
			return c.wrap(fmt.Errorf("launching %s with %d bytes of shared memory: %w", k.name, shared, err))
		}
		k.dynShared = shared
	}
	c.lastLaunch = k.name
	if err := cuda.LaunchKernel(k.f, g, b, uint32(shared), s.handle(), &c.args); err != nil {
		return c.wrap(fmt.Errorf("launching %s (grid %d, block %d, shared %d): %w", k.name, grid.X, block.X, shared, err))
	}
	if c.syncLaunches {
		if err := cuda.StreamSynchronize(s.handle()); err != nil {
			return c.wrap(fmt.Errorf("kernel %s: %w", k.name, err))
		}
	}
	return nil
}

// packArgs packs Go values as C kernel parameters.
func packArgs(a *cuda.Args, args []any) error {
	for i, v := range args {
		switch v := v.(type) {
		case Buffer:
			a.Ptr(v.ptr)
		case int32:
			a.I32(v)
		case uint32:
			a.U32(v)
		case int64:
			a.I64(v)
		case uint64:
			a.U64(v)
		case float32:
			a.F32(v)
		case float64:
			a.F64(v)
		case int, uint:
			return fmt.Errorf("argument %d is a Go %T: pass int32/uint32 or int64/uint64 to match the C parameter", i, v)
		default:
			return fmt.Errorf("argument %d has unsupported type %T", i, v)
		}
	}
	return a.Err()
}

// Occupancy returns how many blocks of k, of the given size and dynamic
// shared memory, fit on one multiprocessor at a time.
func (c *Ctx) Occupancy(k *Kernel, block, shared int) (int, error) {
	n, err := cuda.OccupancyMaxActiveBlocks(k.f, block, shared)
	return n, c.wrap(err)
}

// Compiler returns the NVRTC library in use and its version, such as
// "libnvrtc.so.13" and "13.0", or why there is none.
func Compiler() (lib, version string, err error) {
	maj, min, err := cuda.NVRTCVersion()
	if err != nil {
		return "", "", fmt.Errorf("gpu: %w", err)
	}
	return cuda.NVRTCLibrary(), fmt.Sprintf("%d.%d", maj, min), nil
}
