// Package gpurt is xsect's runtime for NVIDIA GPUs, in pure Go: it loads the
// CUDA driver (libcuda.so.1), and NVRTC and cuBLAS where needed, at run time, so a binary
// built with CGO_ENABLED=0 runs everywhere and uses a GPU where there is one.
//
// Available says whether a GPU can be used and, if not, why. Devices lists
// the GPUs. Open starts one goroutine per device, locked to its OS thread,
// that owns the device's primary CUDA context; the rest of the program
// hands it work with Device.Do, whose closure receives a *Ctx, the handle
// through which device memory, pinned host memory, streams, events, modules
// and launches are reached:
//
//	err := dev.Do(func(c *gpurt.Ctx) error {
//		buf, err := c.Alloc(4 * len(xs))
//		if err != nil {
//			return err
//		}
//		defer c.Free(buf)
//		return c.CopyToDevice(buf, gpurt.Bytes(xs))
//	})
//
// Kernels are CUDA C, prebuilt into the binary as cubins and PTX (see
// EmbeddedSource and internal/kernelgen), so that the driver alone loads
// them; NVRTC compiles, and caches on disk, only sources that are not
// prebuilt for the device (see Source and KernelsEnv). Every CUDA failure
// is returned as an error that names the CUDA call and the CUDA error.
package gpurt

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/internal/cuda"
)

// MinDriverVersion is the oldest CUDA driver API version xsect runs on
// (CUDA 11.0, as reported by cuDriverGetVersion).
const MinDriverVersion = 11000

var (
	availOnce sync.Once
	availErr  error
	availDone atomic.Bool // availErr is set
)

// Available returns nil if the CUDA driver loads and reports at least one
// device, and otherwise an error that says why not: no libcuda.so.1, a
// driver too old, no device. The answer is computed once and cached.
func Available() error {
	availOnce.Do(func() {
		availErr = probe()
		availDone.Store(true)
	})
	return availErr
}

// Probed reports whether Available has computed its answer, so that
// Available and Devices return without loading the driver.
func Probed() bool { return availDone.Load() }

// Present says cheaply whether a GPU may be used, for planners that must
// not pay the driver's start-up (cuInit takes a tenth of a second or more
// where a GPU is) just to weigh a GPU engine: Available's answer once it
// is known, and before that whether the NVIDIA driver's control device
// exists. A machine with the device node but a broken driver passes until
// Available has run.
func Present() error {
	if availDone.Load() {
		return availErr
	}
	if _, err := os.Stat("/dev/nvidiactl"); err != nil {
		return fmt.Errorf("gpu: no NVIDIA driver device (%v)", err)
	}
	return nil
}

func probe() error {
	defer record("driver", time.Now(), 0)
	if err := cuda.Load(); err != nil {
		var ce *cuda.Error
		if errors.As(err, &ce) && ce.Code == cuda.ErrorNoDevice {
			return fmt.Errorf("gpu: no CUDA device (%w)", err)
		}
		return fmt.Errorf("gpu: %w", err)
	}
	v, err := cuda.DriverVersion()
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if v < MinDriverVersion {
		return fmt.Errorf("gpu: CUDA driver too old: it supports CUDA %s, xsect needs %s or newer", versionString(v), versionString(MinDriverVersion))
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if n == 0 {
		return errors.New("gpu: the CUDA driver reports no device")
	}
	return nil
}

func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// DriverVersion returns the CUDA version the installed driver supports, such
// as "13.0".
func DriverVersion() (string, error) {
	if err := cuda.Load(); err != nil {
		return "", fmt.Errorf("gpu: %w", err)
	}
	v, err := cuda.DriverVersion()
	if err != nil {
		return "", fmt.Errorf("gpu: %w", err)
	}
	return versionString(v), nil
}

// Info describes one GPU.
type Info struct {
	Ordinal int
	Name    string
	// Memory is the device memory in bytes.
	Memory uint64
	// SMs is the number of multiprocessors.
	SMs int
	// Major and Minor are the compute capability (9.0 for an H100).
	Major, Minor int
	// ClockKHz is the multiprocessors' peak clock.
	ClockKHz int
	// L2Bytes is the size of the L2 cache.
	L2Bytes int
	// SharedPerBlock is the most shared memory one block may opt in to.
	SharedPerBlock int
	// MaxThreadsPerSM is the most resident threads per multiprocessor.
	MaxThreadsPerSM int
	// MemClockKHz and BusWidth give the memory's peak bandwidth.
	MemClockKHz, BusWidth int
}

// Arch returns the NVRTC target for the device, such as "sm_90".
func (i Info) Arch() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// PeakBandwidth returns the memory's theoretical bandwidth in bytes per
// second (double data rate over the bus), or 0 if the driver did not say.
func (i Info) PeakBandwidth() float64 {
	return 2 * float64(i.MemClockKHz) * 1e3 * float64(i.BusWidth) / 8
}

// ReferenceH100 describes the GPU the planners' device throughputs were
// fitted on: the H100 80GB HBM3 (SXM) of the device host, as the driver
// reports it (132 SMs at 1.98 GHz, HBM3 at 2.619 GHz over 5120 bits: 3352
// GB/s peak, 50 MiB of L2).
func ReferenceH100() Info {
	return Info{Name: "NVIDIA H100 80GB HBM3", Memory: 80 << 30, SMs: 132, Major: 9, Minor: 0, ClockKHz: 1980000,
		L2Bytes: 50 << 20, SharedPerBlock: 227 << 10, MaxThreadsPerSM: 2048, MemClockKHz: 2619000, BusWidth: 5120}
}

// Speed says how much faster a device is than another at the three kinds
// of work the planners' cost models tell apart; see Info.SpeedOver.
type Speed struct {
	// Compute scales work bound by the multiprocessors' issue rate
	// (integer and bit operations, shared-memory atomics, latency-bound
	// lookups): the SMs times their clock.
	Compute float64
	// Tensor scales matrix products on the tensor cores (cuBLAS int8 and
	// float16 GEMMs): Compute times the dense tensor throughput per SM and
	// clock of the architecture, relative (from NVIDIA's data sheets, not
	// measured here: Ampere A100 half of Hopper's, the other Ampere and Ada
	// parts a quarter, Blackwell twice).
	Tensor float64
	// Memory scales work bound by device memory: the peak bandwidth.
	Memory float64
}

// SpeedOver returns i's speed relative to ref, the device a cost model was
// fitted on: a rate measured on ref times the matching field is the
// expected rate on i. A figure either device does not report counts as
// equal.
func (i Info) SpeedOver(ref Info) Speed {
	ratio := func(a, b float64) float64 {
		if a <= 0 || b <= 0 {
			return 1
		}
		return a / b
	}
	s := Speed{
		Compute: ratio(float64(i.SMs), float64(ref.SMs)) * ratio(float64(i.ClockKHz), float64(ref.ClockKHz)),
		Memory:  ratio(i.PeakBandwidth(), ref.PeakBandwidth()),
	}
	s.Tensor = s.Compute
	if i.Major > 0 && ref.Major > 0 {
		s.Tensor *= tensorPerSMClock(i.Major, i.Minor) / tensorPerSMClock(ref.Major, ref.Minor)
	}
	return s
}

// tensorPerSMClock is the dense int8/float16 tensor throughput of one SM
// per clock of an architecture, relative to Hopper's.
func tensorPerSMClock(major, minor int) float64 {
	switch {
	case major >= 10:
		return 2
	case major == 9:
		return 1
	case major == 8 && minor == 0:
		return 0.5
	}
	return 0.25
}

// Devices lists the GPUs, or returns Available's error.
func Devices() ([]Info, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	infos := make([]Info, n)
	for i := range infos {
		if infos[i], err = deviceInfo(i); err != nil {
			return nil, err
		}
	}
	return infos, nil
}

func deviceInfo(ordinal int) (Info, error) {
	d, err := cuda.DeviceGet(ordinal)
	if err != nil {
		return Info{}, fmt.Errorf("gpu: device %d: %w", ordinal, err)
	}
	info := Info{Ordinal: ordinal}
	if info.Name, err = cuda.DeviceName(d); err != nil {
		return Info{}, fmt.Errorf("gpu: device %d: %w", ordinal, err)
	}
	if info.Memory, err = cuda.DeviceTotalMem(d); err != nil {
		return Info{}, fmt.Errorf("gpu: device %d: %w", ordinal, err)
	}
	attrs := []struct {
		attr int
		dst  *int
	}{
		{cuda.AttrMultiprocessorCount, &info.SMs},
		{cuda.AttrComputeCapabilityMajor, &info.Major},
		{cuda.AttrComputeCapabilityMinor, &info.Minor},
		{cuda.AttrClockRate, &info.ClockKHz},
		{cuda.AttrL2CacheSize, &info.L2Bytes},
		{cuda.AttrMaxSharedMemoryPerBlockOptin, &info.SharedPerBlock},
		{cuda.AttrMaxThreadsPerMultiprocessor, &info.MaxThreadsPerSM},
		{cuda.AttrMemoryClockRate, &info.MemClockKHz},
		{cuda.AttrGlobalMemoryBusWidth, &info.BusWidth},
	}
	for _, a := range attrs {
		if *a.dst, err = cuda.DeviceAttribute(d, a.attr); err != nil {
			return Info{}, fmt.Errorf("gpu: device %d: %w", ordinal, err)
		}
	}
	return info, nil
}
