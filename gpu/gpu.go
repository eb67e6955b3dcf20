// Package gpu is what a user of xsect needs to know about NVIDIA GPUs: which
// ones there are, whether xsect can use them (and why not), and the
// pairwise intersection engine that keeps sets resident on a device.
//
// xsect reaches CUDA from pure Go (no cgo): the driver, and cuBLAS where a
// matrix-product technique runs, are loaded at first use; the kernels are
// prebuilt into the binary (cubins for the A100 and H100/H200, PTX that the
// driver compiles for newer GPUs), so the driver alone suffices; NVRTC, where
// present, compiles only kernels whose sources changed since they were
// prebuilt. One goroutine per device owns its context. The
// workload packages (allpairs, pairs, simjoin, query) use GPUs through
// their Options.Device without this package; everything works on the CPU
// where there is none.
package gpu

import (
	"time"

	"github.com/xsect/xsect/internal/gpuintersect"
	"github.com/xsect/xsect/internal/gpurt"
)

// Info describes a GPU: ordinal, name, memory, multiprocessors, compute
// capability, clocks, caches and memory bus.
type Info = gpurt.Info

// Available returns nil if a GPU can be used, or an error saying why not
// (no driver, no device, a driver that is too old). The first call loads
// the driver; later calls return the same answer at once.
func Available() error { return gpurt.Available() }

// Devices lists the GPUs xsect can use.
func Devices() ([]Info, error) { return gpurt.Devices() }

// ParseGPUs parses a choice of GPUs, the value of the workloads'
// Options.GPUs, as xsect's --gpus flag writes it: "all" (or "") is every
// GPU and returns nil; a number N is the first N GPUs; a comma-separated
// list names ordinals ("1,3"; "2," is GPU 2 alone). An ordinal listed
// twice gets two owners on that GPU, which gains nothing in speed but
// runs the splitting of the work on one GPU. It does not load the driver;
// CheckGPUs checks the choice against the devices.
func ParseGPUs(s string) ([]int, error) { return gpurt.ParseGPUs(s) }

// CheckGPUs checks a choice from ParseGPUs against the host's GPUs and
// returns it with nil resolved to every ordinal.
func CheckGPUs(list []int) ([]int, error) { return gpurt.CheckGPUs(list) }

// Method is a GPU pairwise intersection method: Intersect Path, optimized
// binary search, their hybrids, hashing and bitmaps.
type Method = gpuintersect.Method

// Methods returns every pairwise method.
func Methods() []Method { return gpuintersect.Methods() }

// LookupMethod returns the method of the given name ("ip", "obs", ...).
func LookupMethod(name string) (Method, error) { return gpuintersect.Lookup(name) }

// Worthwhile reports whether intersecting a and b on a GPU, starting it and
// the transfers included, is expected to beat the CPU on all its cores;
// materialise says that the intersection itself is wanted, not only its
// size. It times the CPU on a slice of the inputs.
func Worthwhile(a, b []uint32, materialise bool) bool {
	return gpuintersect.Worthwhile(a, b, materialise)
}

// Set is a sorted set resident in a device's memory.
type Set = gpuintersect.Set

// Pairwise intersects sorted sets on one GPU: sets from host memory, or
// sets uploaded once and intersected many times. It is safe for concurrent
// use; its work runs on the device's owner goroutine.
type Pairwise struct {
	dev *gpurt.Device
	e   *gpuintersect.Engine
}

// OpenPairwise opens the GPU with the given ordinal (0 for the first) for
// pairwise intersections.
func OpenPairwise(ordinal int) (*Pairwise, error) {
	dev, err := gpurt.Open(ordinal)
	if err != nil {
		return nil, err
	}
	e, err := gpuintersect.New(dev)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return &Pairwise{dev, e}, nil
}

// Info describes the engine's device.
func (p *Pairwise) Info() Info { return p.dev.Info() }

// Close frees the engine's device memory and closes the device.
func (p *Pairwise) Close() error {
	err := p.e.Close()
	if cerr := p.dev.Close(); err == nil {
		err = cerr
	}
	return err
}

// Count returns |a ∩ b| for strictly increasing a and b in host memory.
func (p *Pairwise) Count(a, b []uint32, m Method) (int, error) { return p.e.Count(a, b, m) }

// Intersect appends a ∩ b to dst, in increasing order.
func (p *Pairwise) Intersect(dst, a, b []uint32, m Method) ([]uint32, error) {
	return p.e.Intersect(dst, a, b, m)
}

// Upload copies a strictly increasing set to the device.
func (p *Pairwise) Upload(s []uint32) (*Set, error) { return p.e.Upload(s) }

// CountSets returns |a ∩ b| of two resident sets and the kernel's time.
func (p *Pairwise) CountSets(a, b *Set, m Method) (int, time.Duration, error) {
	return p.e.CountSets(a, b, m)
}

// IntersectSets returns a ∩ b of two resident sets as a new resident set,
// and the kernels' time.
func (p *Pairwise) IntersectSets(a, b *Set, m Method) (*Set, time.Duration, error) {
	return p.e.IntersectSets(a, b, m)
}

// Download appends a resident set's elements to dst.
func (p *Pairwise) Download(dst []uint32, s *Set) ([]uint32, error) { return p.e.Download(dst, s) }

// Free releases a resident set's device memory.
func (p *Pairwise) Free(s *Set) error { return p.e.Free(s) }

// DriverVersion returns the CUDA driver's version, such as "13.0".
func DriverVersion() (string, error) { return gpurt.DriverVersion() }

// Compiler returns the NVRTC library and its version, or why there is
// none. xsect needs it only for kernels not prebuilt for the GPU (see
// Kernels).
func Compiler() (lib, version string, err error) { return gpurt.Compiler() }

// Kernels says how a GPU gets xsect's kernels: "prebuilt cubins" for an
// architecture the binary holds machine code for, "prebuilt PTX" (compiled
// by the driver at first use, then cached by it) for a newer one, or
// "NVRTC" for an older one, which needs the CUDA toolkit's NVRTC.
func Kernels(in Info) string { return gpurt.KernelsFor(in) }

// BLASLibrary returns the cuBLAS library that the matrix-product
// techniques (allpairs' mm and mmjoin) use, or why there is none: without
// it those techniques are not planned and every other one runs.
func BLASLibrary() (string, error) { return gpurt.BLASLibrary() }

// CacheDir returns the folder where compiled kernels are kept between runs.
func CacheDir() (string, error) { return gpurt.CacheDir() }
