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
