//go:build unix

package synth

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, all threads, user and
// system: benchmarks report throughput per CPU second beside the wall-clock
// figure, which other work on a shared machine distorts.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
