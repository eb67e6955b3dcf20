//go:build windows

package cuda

import "syscall"

// Windows has no dlopen: LoadLibrary and GetProcAddress do its work. The
// callers ask for the Linux names of the CUDA libraries, which do not load
// here, so the GPU is reported absent and everything runs on the CPU.

func dlopen(name string) (uintptr, error) {
	h, err := syscall.LoadLibrary(name)
	return uintptr(h), err
}

func dlsym(handle uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(handle), name)
}
