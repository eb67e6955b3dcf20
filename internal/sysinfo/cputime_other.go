//go:build !unix

package sysinfo

import "time"

// CPUTime is the CPU time this process has used; 0 on this system, where
// it is not read.
func CPUTime() time.Duration { return 0 }
