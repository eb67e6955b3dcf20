package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Handles of the driver API. They are opaque pointers (CUdeviceptr is an
// address in the device's space).
type (
	Device   int32   // CUdevice, an ordinal
	Context  uintptr // CUcontext
	Stream   uintptr // CUstream; 0 is the legacy default stream
	Event    uintptr // CUevent
	Module   uintptr // CUmodule
	Function uintptr // CUfunction
	DevPtr   uintptr // CUdeviceptr
)

// driverAPI holds libcuda.so.1's entry points.
type driverAPI struct {
	lib library

	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString                           uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceTotalMem, cuDeviceGetAttribute uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuCtxSynchronize uintptr
	cuMemGetInfo, cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemFreeHost                     uintptr
	cuMemHostRegister, cuMemHostUnregister                                                 uintptr
	cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD                                               uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync                                uintptr
	cuMemsetD8Async, cuMemsetD32Async                                                      uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize                                   uintptr
	cuEventCreate, cuEventDestroy, cuEventRecord, cuEventSynchronize, cuEventElapsedTime   uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction                                  uintptr
	cuLaunchKernel, cuFuncSetAttribute, cuFuncGetAttribute                                 uintptr
	cuOccupancyMaxActiveBlocksPerMultiprocessor                                            uintptr
}

var drv driverAPI

// Load opens libcuda.so.1, resolves the driver entry points and calls
// cuInit. It runs once; later calls return the first result. The error says
// why the driver is unusable: no library, a missing symbol, or cuInit's
// status (CUDA_ERROR_NO_DEVICE on a machine without a GPU).
func Load() error {
	driverOnce.Do(func() { driverErr = load() })
	return driverErr
}

func load() error {
	lib, err := openFirst("libcuda.so.1", "libcuda.so")
	if err != nil {
		return fmt.Errorf("no CUDA driver (%w)", err)
	}
	ld := loader{lib: lib}
	d := &drv
	d.cuGetErrorName = ld.get("cuGetErrorName")
	d.cuGetErrorString = ld.get("cuGetErrorString")
	d.cuInit = ld.get("cuInit")
	d.cuDriverGetVersion = ld.get("cuDriverGetVersion")
	d.cuDeviceGetCount = ld.get("cuDeviceGetCount")
	d.cuDeviceGet = ld.get("cuDeviceGet")
	d.cuDeviceGetName = ld.get("cuDeviceGetName")
	d.cuDeviceTotalMem = ld.get("cuDeviceTotalMem_v2")
	d.cuDeviceGetAttribute = ld.get("cuDeviceGetAttribute")
	d.cuDevicePrimaryCtxRetain = ld.get("cuDevicePrimaryCtxRetain")
	d.cuDevicePrimaryCtxRelease = ld.get("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease")
	d.cuCtxSetCurrent = ld.get("cuCtxSetCurrent")
	d.cuCtxSynchronize = ld.get("cuCtxSynchronize")
	d.cuMemGetInfo = ld.get("cuMemGetInfo_v2")
	d.cuMemAlloc = ld.get("cuMemAlloc_v2")
	d.cuMemFree = ld.get("cuMemFree_v2")
	d.cuMemAllocHost = ld.get("cuMemAllocHost_v2")
	d.cuMemFreeHost = ld.get("cuMemFreeHost")
	d.cuMemHostRegister = ld.get("cuMemHostRegister_v2")
	d.cuMemHostUnregister = ld.get("cuMemHostUnregister")
	d.cuMemcpyHtoD = ld.get("cuMemcpyHtoD_v2")
	d.cuMemcpyDtoH = ld.get("cuMemcpyDtoH_v2")
	d.cuMemcpyDtoD = ld.get("cuMemcpyDtoD_v2")
	d.cuMemcpyHtoDAsync = ld.get("cuMemcpyHtoDAsync_v2")
	d.cuMemcpyDtoHAsync = ld.get("cuMemcpyDtoHAsync_v2")
	d.cuMemcpyDtoDAsync = ld.get("cuMemcpyDtoDAsync_v2")
	d.cuMemsetD8Async = ld.get("cuMemsetD8Async")
	d.cuMemsetD32Async = ld.get("cuMemsetD32Async")
	d.cuStreamCreate = ld.get("cuStreamCreate")
	d.cuStreamDestroy = ld.get("cuStreamDestroy_v2", "cuStreamDestroy")
	d.cuStreamSynchronize = ld.get("cuStreamSynchronize")
	d.cuEventCreate = ld.get("cuEventCreate")
	d.cuEventDestroy = ld.get("cuEventDestroy_v2", "cuEventDestroy")
	d.cuEventRecord = ld.get("cuEventRecord")
	d.cuEventSynchronize = ld.get("cuEventSynchronize")
	d.cuEventElapsedTime = ld.get("cuEventElapsedTime_v2", "cuEventElapsedTime")
	d.cuModuleLoadData = ld.get("cuModuleLoadData")
	d.cuModuleUnload = ld.get("cuModuleUnload")
	d.cuModuleGetFunction = ld.get("cuModuleGetFunction")
	d.cuLaunchKernel = ld.get("cuLaunchKernel")
	d.cuFuncSetAttribute = ld.get("cuFuncSetAttribute")
	d.cuFuncGetAttribute = ld.get("cuFuncGetAttribute")
	d.cuOccupancyMaxActiveBlocksPerMultiprocessor = ld.get("cuOccupancyMaxActiveBlocksPerMultiprocessor")
	d.lib = lib
	if ld.err != nil {
		drv = driverAPI{}
		return fmt.Errorf("CUDA driver %s is unusable: %w", lib.name, ld.err)
	}
	if err := check("cuInit", call(d.cuInit, 0)); err != nil {
		return err
	}
	return nil
}

// DriverVersion returns the CUDA version the driver supports, as
// 1000*major + 10*minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	var v int32
	err := check("cuDriverGetVersion", call(drv.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))))
	return int(v), err
}

// DeviceCount returns the number of CUDA devices.
func DeviceCount() (int, error) {
	var n int32
	err := check("cuDeviceGetCount", call(drv.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))))
	return int(n), err
}

// DeviceGet returns the device with the given ordinal.
func DeviceGet(ordinal int) (Device, error) {
	var d Device
	err := check("cuDeviceGet", call(drv.cuDeviceGet, uintptr(unsafe.Pointer(&d)), uintptr(ordinal)))
	return d, err
}

// DeviceName returns the device's marketing name.
func DeviceName(d Device) (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", call(drv.cuDeviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(d))); err != nil {
		return "", err
	}
	return cStringBytes(buf), nil
}

// DeviceTotalMem returns the device's memory in bytes.
func DeviceTotalMem(d Device) (uint64, error) {
	var n uint64
	err := check("cuDeviceTotalMem_v2", call(drv.cuDeviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(d)))
	return n, err
}

// Device attributes xsect reads (CUdevice_attribute).
const (
	AttrMaxThreadsPerBlock           = 1
	AttrMaxSharedMemoryPerBlock      = 8
	AttrClockRate                    = 13
	AttrMultiprocessorCount          = 16
	AttrMemoryClockRate              = 36
	AttrGlobalMemoryBusWidth         = 37
	AttrL2CacheSize                  = 38
	AttrMaxThreadsPerMultiprocessor  = 39
	AttrComputeCapabilityMajor       = 75
	AttrComputeCapabilityMinor       = 76
	AttrMaxSharedMemoryPerBlockOptin = 97
)

// DeviceAttribute returns one attribute of d.
func DeviceAttribute(d Device, attr int) (int, error) {
	var v int32
	err := check("cuDeviceGetAttribute", call(drv.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(d)))
	return int(v), err
}

// PrimaryCtxRetain retains d's primary context.
func PrimaryCtxRetain(d Device) (Context, error) {
	var c Context
	err := check("cuDevicePrimaryCtxRetain", call(drv.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&c)), uintptr(d)))
	return c, err
}

// PrimaryCtxRelease releases d's primary context.
func PrimaryCtxRelease(d Device) error {
	return check("cuDevicePrimaryCtxRelease_v2", call(drv.cuDevicePrimaryCtxRelease, uintptr(d)))
}

// CtxSetCurrent binds c to the calling OS thread.
func CtxSetCurrent(c Context) error {
	return check("cuCtxSetCurrent", call(drv.cuCtxSetCurrent, uintptr(c)))
}

// CtxSynchronize waits for all work in the current context.
func CtxSynchronize() error {
	return check("cuCtxSynchronize", call(drv.cuCtxSynchronize))
}

// MemGetInfo returns the free and total device memory of the current
// context's device.
func MemGetInfo() (free, total uint64, err error) {
	err = check("cuMemGetInfo_v2", call(drv.cuMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total))))
	return
}

// MemAlloc allocates n bytes of device memory.
func MemAlloc(n uint64) (DevPtr, error) {
	var p DevPtr
	err := check("cuMemAlloc_v2", call(drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n)))
	return p, err
}

// MemFree frees device memory.
func MemFree(p DevPtr) error { return check("cuMemFree_v2", call(drv.cuMemFree, uintptr(p))) }

// MemAllocHost allocates n bytes of page-locked host memory and returns it
// as a byte slice that is valid until MemFreeHost.
func MemAllocHost(n uint64) ([]byte, error) {
	var p *byte
	if err := check("cuMemAllocHost_v2", call(drv.cuMemAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(n))); err != nil {
		return nil, err
	}
	return unsafe.Slice(p, n), nil
}

// MemFreeHost frees memory from MemAllocHost.
func MemFreeHost(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return check("cuMemFreeHost", call(drv.cuMemFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
}

// MemHostRegister page-locks existing host memory so that copies from it
// run at full speed. The memory must stay allocated until MemHostUnregister.
func MemHostRegister(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return check("cuMemHostRegister_v2", call(drv.cuMemHostRegister, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0))
}

// MemHostUnregister undoes MemHostRegister.
func MemHostUnregister(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return check("cuMemHostUnregister", call(drv.cuMemHostUnregister, uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
}

// MemcpyHtoD copies src to device memory at dst on the default stream. From
// pageable memory it may return once src is staged, before the DMA ends.
func MemcpyHtoD(dst DevPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD_v2", call(drv.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src))))
}

// MemcpyDtoH copies device memory at src to dst, synchronously.
func MemcpyDtoH(dst []byte, src DevPtr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH_v2", call(drv.cuMemcpyDtoH, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst))))
}

// MemcpyDtoD copies n bytes between device buffers, synchronously.
func MemcpyDtoD(dst, src DevPtr, n uint64) error {
	if n == 0 {
		return nil
	}
	return check("cuMemcpyDtoD_v2", call(drv.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n)))
}

// MemcpyHtoDAsync queues a copy from host memory to the device on s. The
// host memory must stay valid (and, to overlap, be page-locked) until the
// copy completes.
func MemcpyHtoDAsync(dst DevPtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoDAsync_v2", call(drv.cuMemcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), uintptr(s)))
}

// MemcpyDtoHAsync queues a copy from the device to host memory on s.
func MemcpyDtoHAsync(dst []byte, src DevPtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoHAsync_v2", call(drv.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst)), uintptr(s)))
}

// MemcpyDtoDAsync queues a device-to-device copy of n bytes on s.
func MemcpyDtoDAsync(dst, src DevPtr, n uint64, s Stream) error {
	if n == 0 {
		return nil
	}
	return check("cuMemcpyDtoDAsync_v2", call(drv.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), uintptr(s)))
}

// MemsetD8Async sets n bytes at p to v on s.
func MemsetD8Async(p DevPtr, v uint8, n uint64, s Stream) error {
	return check("cuMemsetD8Async", call(drv.cuMemsetD8Async, uintptr(p), uintptr(v), uintptr(n), uintptr(s)))
}

// MemsetD32Async sets n 32-bit words at p to v on s.
func MemsetD32Async(p DevPtr, v uint32, n uint64, s Stream) error {
	return check("cuMemsetD32Async", call(drv.cuMemsetD32Async, uintptr(p), uintptr(v), uintptr(n), uintptr(s)))
}

// Stream creation flags.
const StreamNonBlocking = 1 // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0

// StreamCreate creates a stream.
func StreamCreate(flags uint32) (Stream, error) {
	var s Stream
	err := check("cuStreamCreate", call(drv.cuStreamCreate, uintptr(unsafe.Pointer(&s)), uintptr(flags)))
	return s, err
}

// StreamDestroy destroys s.
func StreamDestroy(s Stream) error {
	return check("cuStreamDestroy_v2", call(drv.cuStreamDestroy, uintptr(s)))
}

// StreamSynchronize waits for s's work.
func StreamSynchronize(s Stream) error {
	return check("cuStreamSynchronize", call(drv.cuStreamSynchronize, uintptr(s)))
}

// Event creation flags.
const (
	EventDefault       = 0
	EventBlockingSync  = 1
	EventDisableTiming = 2
)

// EventCreate creates an event.
func EventCreate(flags uint32) (Event, error) {
	var e Event
	err := check("cuEventCreate", call(drv.cuEventCreate, uintptr(unsafe.Pointer(&e)), uintptr(flags)))
	return e, err
}

// EventDestroy destroys e.
func EventDestroy(e Event) error {
	return check("cuEventDestroy_v2", call(drv.cuEventDestroy, uintptr(e)))
}

// EventRecord records e on s.
func EventRecord(e Event, s Stream) error {
	return check("cuEventRecord", call(drv.cuEventRecord, uintptr(e), uintptr(s)))
}

// EventSynchronize waits until e has completed.
func EventSynchronize(e Event) error {
	return check("cuEventSynchronize", call(drv.cuEventSynchronize, uintptr(e)))
}

// EventElapsedTime returns the milliseconds between two completed events.
func EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	err := check("cuEventElapsedTime", call(drv.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)))
	return ms, err
}

// ModuleLoadData loads a module from a cubin (or PTX) image.
func ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("cuModuleLoadData: empty image")
	}
	var m Module
	err := check("cuModuleLoadData", call(drv.cuModuleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&image[0]))))
	return m, err
}

// ModuleUnload unloads m.
func ModuleUnload(m Module) error {
	return check("cuModuleUnload", call(drv.cuModuleUnload, uintptr(m)))
}

// ModuleGetFunction returns the kernel called name (an extern "C" name).
func ModuleGetFunction(m Module, name string) (Function, error) {
	var f Function
	cname := cString(name)
	r := call(drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0])))
	if r != Success {
		return 0, fmt.Errorf("kernel %q: %w", name, check("cuModuleGetFunction", r))
	}
	return f, nil
}

// Function attributes (CUfunction_attribute).
const (
	FuncAttrMaxThreadsPerBlock        = 0
	FuncAttrSharedSizeBytes           = 1
	FuncAttrNumRegs                   = 4
	FuncAttrMaxDynamicSharedSizeBytes = 8
)

// FuncGetAttribute reads an attribute of f.
func FuncGetAttribute(f Function, attr int) (int, error) {
	var v int32
	err := check("cuFuncGetAttribute", call(drv.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(f)))
	return int(v), err
}

// FuncSetAttribute sets an attribute of f, such as the dynamic shared
// memory limit above 48 KB.
func FuncSetAttribute(f Function, attr, value int) error {
	return check("cuFuncSetAttribute", call(drv.cuFuncSetAttribute, uintptr(f), uintptr(attr), uintptr(value)))
}

// OccupancyMaxActiveBlocks returns how many blocks of f fit on one
// multiprocessor at once.
func OccupancyMaxActiveBlocks(f Function, blockSize, dynSmem int) (int, error) {
	var n int32
	err := check("cuOccupancyMaxActiveBlocksPerMultiprocessor", call(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor,
		uintptr(unsafe.Pointer(&n)), uintptr(f), uintptr(blockSize), uintptr(dynSmem)))
	return int(n), err
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// LaunchKernel launches f with its arguments packed in args (see Args). It
// checks only that the launch was accepted: faults inside the kernel show
// at the next synchronising call.
func LaunchKernel(f Function, grid, block Dim3, sharedBytes uint32, s Stream, args *Args) error {
	if f == 0 {
		return fmt.Errorf("cuLaunchKernel: nil kernel")
	}
	args.prepare()
	r := call(drv.cuLaunchKernel, uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedBytes), uintptr(s), 0, uintptr(unsafe.Pointer(&args.extra[0])))
	runtime.KeepAlive(args)
	return check("cuLaunchKernel", r)
}
