package sysinfo

import (
	"io/fs"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Caches are the sizes of the data caches one core of the CPU uses, in
// bytes, and how many logical CPUs share each: the planners' cost models
// pick a per-unit cost by where an array fits (L1, L2, L3 or memory), so
// the sizes must be this machine's, not those of the machine the costs were
// fitted on.
type Caches struct {
	L1, L2, L3         int64 // L1 data, L2 and L3 sizes; 0 where the level is absent
	L1Shared, L2Shared int   // logical CPUs sharing the L1 and the L2 (1: private)
	L3Shared           int   // logical CPUs sharing the L3 (as many as the system shows)
	Source             string
}

// defaultCaches are the sizes CPUCaches returns where the system does not
// say: those of the development machine the cost models were first fitted
// on (AMD Zen 5: 48 KiB L1d and 1 MiB L2 per core, 32 MiB of L3), which
// leave the planners' choices as they were fitted.
var defaultCaches = Caches{L1: 48 << 10, L2: 1 << 20, L3: 32 << 20, L1Shared: 1, L2Shared: 1, L3Shared: 1, Source: "defaults (Zen 5)"}

// CPUCaches returns the data caches of the first CPU: on Linux from
// /sys/devices/system/cpu/cpu0/cache, on macOS from sysctl; each size the
// system does not give is defaultCaches'. It is read once.
func CPUCaches() Caches { return cpuCaches() }

var cpuCaches = sync.OnceValue(func() Caches {
	c, ok := readCaches()
	if !ok {
		return defaultCaches
	}
	return c
})

// Cores returns the logical CPUs this process may run on.
func Cores() int { return runtime.NumCPU() }

// fillCaches completes c with defaultCaches where a size is missing and
// reports whether any size was found.
func fillCaches(c Caches, source string) (Caches, bool) {
	if c.L1 <= 0 && c.L2 <= 0 && c.L3 <= 0 {
		return Caches{}, false
	}
	d := defaultCaches
	if c.L1 <= 0 {
		c.L1, c.L1Shared = d.L1, d.L1Shared
	}
	if c.L2 <= 0 {
		c.L2, c.L2Shared = d.L2, d.L2Shared
	}
	if c.L3 < 0 {
		c.L3 = 0
	}
	c.L1Shared, c.L2Shared, c.L3Shared = max(c.L1Shared, 1), max(c.L2Shared, 1), max(c.L3Shared, 1)
	c.Source = source
	return c, true
}

// parseSize reads a size as sysfs writes it: "48K", "2048K", "1M", "32768".
func parseSize(s string) int64 {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

// countCPUs counts the CPUs of a list as sysfs writes it: "0", "0-1",
// "0,2,4-7"; 0 if it cannot be read.
func countCPUs(list string) int {
	list = strings.TrimSpace(list)
	if list == "" {
		return 0
	}
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// sysfsCaches reads the caches described by a Linux sysfs cache directory
// (/sys/devices/system/cpu/cpu0/cache): index*/level, type, size and
// shared_cpu_list.
func sysfsCaches(fsys fs.FS) (Caches, bool) {
	dirs, err := fs.Glob(fsys, "index*")
	if err != nil || len(dirs) == 0 {
		return Caches{}, false
	}
	read := func(dir, name string) string {
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	var c Caches
	for _, dir := range dirs {
		if t := read(dir, "type"); t != "Data" && t != "Unified" {
			continue
		}
		size := parseSize(read(dir, "size"))
		shared := countCPUs(read(dir, "shared_cpu_list"))
		switch read(dir, "level") {
		case "1":
			c.L1, c.L1Shared = size, shared
		case "2":
			c.L2, c.L2Shared = size, shared
		case "3":
			c.L3, c.L3Shared = size, shared
		}
	}
	return fillCaches(c, "sysfs")
}
