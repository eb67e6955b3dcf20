package sysinfo

import "golang.org/x/sys/unix"

// readCaches asks sysctl: macOS gives the sizes, and on Apple silicon those
// of the performance cores (hw.perflevel0), which the planners' workers
// run on first.
func readCaches() (Caches, bool) {
	get := func(names ...string) int64 {
		for _, name := range names {
			if v, err := unix.SysctlUint64(name); err == nil && v > 0 {
				return int64(v)
			}
		}
		return 0
	}
	c := Caches{
		L1: get("hw.perflevel0.l1dcachesize", "hw.l1dcachesize"),
		L2: get("hw.perflevel0.l2cachesize", "hw.l2cachesize"),
		L3: get("hw.l3cachesize"),
		// Apple's L2 is shared by a cluster of cores.
		L2Shared: int(get("hw.perflevel0.cpusperl2")),
	}
	return fillCaches(c, "sysctl")
}
