// Package sysinfo describes the machine for the planners (its CPU model and
// its memory) and measures the process's CPU time for benchmarks.
package sysinfo

import (
	"os"
	"runtime"
	"strings"
	"sync"
)

// CPUName returns the CPU's model name from /proc/cpuinfo, or GOARCH where
// there is none.
func CPUName() string { return cpuName() }

var cpuName = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
})

// Memory returns the machine's physical memory in bytes, or 8 GiB where it
// cannot be read.
func Memory() int64 {
	if m := memory(); m > 0 {
		return m
	}
	return 8 << 30
}

// AddressSpaceLeft returns the address space this process may still map
// under its limit (ulimit -v: RLIMIT_AS, less what is mapped now), and
// false where there is no such limit or it cannot be read.
func AddressSpaceLeft() (int64, bool) {
	n := addressSpaceLeft()
	return n, n >= 0
}

// CgroupMemory returns the memory limit of the process's control group
// (a container's limit), and false where there is none or it cannot be
// read.
func CgroupMemory() (int64, bool) {
	n := cgroupMemory()
	return n, n > 0
}
