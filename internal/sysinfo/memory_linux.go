package sysinfo

import "golang.org/x/sys/unix"

// memory is the physical memory the kernel reports, or 0.
func memory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		return int64(si.Totalram) * int64(si.Unit)
	}
	return 0
}
