package sysinfo

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memory is the physical memory the kernel reports, or 0.
func memory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		return int64(si.Totalram) * int64(si.Unit)
	}
	return 0
}

// addressSpaceLeft is the soft RLIMIT_AS less the address space mapped
// now (VmSize), or -1 without a limit.
func addressSpaceLeft() int64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > 1<<62 {
		return -1
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return max(int64(rl.Cur)-kb<<10, 0)
		}
	}
	return -1
}

// cgroupMemory is the memory limit of the process's cgroup (version 2's
// memory.max, version 1's memory.limit_in_bytes), or -1 without one.
func cgroupMemory() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		// "0::/path" is the unified hierarchy (version 2), "N:memory:/path"
		// version 1's memory controller.
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "/sys/fs/cgroup", "memory.max"
		case f[1] == "memory":
			dir, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// Inside a cgroup namespace the path may not be visible: the root
		// of the mount is then the process's own group.
		for _, path := range []string{dir + f[2] + "/" + file, dir + "/" + file} {
			m, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			// "max", or version 1's "no limit" (2^63 rounded to pages).
			n, err := strconv.ParseInt(strings.TrimSpace(string(m)), 10, 64)
			if err == nil && n > 0 && n < 1<<62 {
				return n
			}
			break
		}
	}
	return -1
}
