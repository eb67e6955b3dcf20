//go:build unix

package sysinfo

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time this process has used, all threads, user and
// system (0 where it cannot be read): on a machine shared with other work
// it measures a computation far more steadily than the wall clock, so
// benchmarks and calibrations report it beside wall time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
