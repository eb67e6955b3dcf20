package sysinfo

import (
	"testing"
	"testing/fstest"
)

func TestSysfsCaches(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }
	dir := func(level, typ, size, shared string) fstest.MapFS {
		return fstest.MapFS{"level": file(level), "type": file(typ), "size": file(size), "shared_cpu_list": file(shared)}
	}
	add := func(fsys fstest.MapFS, name string, d fstest.MapFS) {
		for k, v := range d {
			fsys[name+"/"+k] = v
		}
	}
	// The Xeon of the development VM: 48K L1d, 32K L1i, 2 MiB L2, 260 MiB
	// L3 over both CPUs.
	xeon := fstest.MapFS{}
	add(xeon, "index0", dir("1", "Data", "48K", "0"))
	add(xeon, "index1", dir("1", "Instruction", "32K", "0"))
	add(xeon, "index2", dir("2", "Unified", "2048K", "0"))
	add(xeon, "index3", dir("3", "Unified", "266240K", "0-1"))
	c, ok := sysfsCaches(xeon)
	want := Caches{L1: 48 << 10, L2: 2 << 20, L3: 260 << 20, L1Shared: 1, L2Shared: 1, L3Shared: 2, Source: "sysfs"}
	if !ok || c != want {
		t.Errorf("Xeon: got %+v, %v; want %+v", c, ok, want)
	}

	// No L3, an L2 shared by a cluster of four, sizes in M.
	arm := fstest.MapFS{}
	add(arm, "index0", dir("1", "Data", "64K", "0"))
	add(arm, "index1", dir("2", "Unified", "4M", "0-3"))
	c, ok = sysfsCaches(arm)
	want = Caches{L1: 64 << 10, L2: 4 << 20, L3: 0, L1Shared: 1, L2Shared: 4, L3Shared: 1, Source: "sysfs"}
	if !ok || c != want {
		t.Errorf("no L3: got %+v, %v; want %+v", c, ok, want)
	}

	// An L3 only: the other levels fall back to the defaults.
	odd := fstest.MapFS{}
	add(odd, "index3", dir("3", "Unified", "16384K", "0,2,4-7"))
	c, ok = sysfsCaches(odd)
	want = defaultCaches
	want.L3, want.L3Shared, want.Source = 16<<20, 6, "sysfs"
	if !ok || c != want {
		t.Errorf("L3 only: got %+v, %v; want %+v", c, ok, want)
	}

	// Nothing readable: not found, so CPUCaches uses the defaults.
	for name, fsys := range map[string]fstest.MapFS{
		"empty":     {},
		"bad sizes": func() fstest.MapFS { m := fstest.MapFS{}; add(m, "index0", dir("1", "Data", "lots", "0")); return m }(),
		"instruction": func() fstest.MapFS {
			m := fstest.MapFS{}
			add(m, "index0", dir("1", "Instruction", "32K", "0"))
			return m
		}(),
	} {
		if c, ok := sysfsCaches(fsys); ok {
			t.Errorf("%s: got %+v, want nothing", name, c)
		}
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{"48K": 48 << 10, "2048K": 2 << 20, "1M": 1 << 20, "1G": 1 << 30, "32768": 32768, " 8K\n": 8 << 10, "": 0, "K": 0, "-1K": 0, "x": 0} {
		if got := parseSize(s); got != want {
			t.Errorf("parseSize(%q) = %d, want %d", s, got, want)
		}
	}
	for s, want := range map[string]int{"0": 1, "0-1": 2, "0,2,4-7": 6, "": 0, "3-1": 0, "a": 0, "0-x": 0} {
		if got := countCPUs(s); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestCPUCaches(t *testing.T) {
	c := CPUCaches()
	if c.L1 < 4<<10 || c.L2 < c.L1 || (c.L3 != 0 && c.L3 < c.L2) || c.Source == "" {
		t.Errorf("CPUCaches() = %+v: implausible", c)
	}
	if Cores() < 1 {
		t.Errorf("Cores() = %d", Cores())
	}
}
