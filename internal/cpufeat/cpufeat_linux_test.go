//go:build linux

package cpufeat

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestProcCPUInfo checks every feature against the flags that Linux
// reports in /proc/cpuinfo (it hides the AVX-512 ones when it does not
// save the AVX-512 state), and against all false under purego and off
// amd64.
func TestProcCPUInfo(t *testing.T) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo: %v", err)
	}
	defer f.Close()
	flags, vendor, family, model := map[string]bool{}, "", -1, -1
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		switch strings.TrimSpace(key) {
		case "flags":
			for _, fl := range strings.Fields(value) {
				flags[fl] = true
			}
		case "vendor_id":
			vendor = strings.TrimSpace(value)
		case "cpu family":
			family, _ = strconv.Atoi(strings.TrimSpace(value))
		case "model":
			model, _ = strconv.Atoi(strings.TrimSpace(value))
		}
		if len(flags) > 0 && vendor != "" && family >= 0 && model >= 0 {
			break // the first CPU's
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(flags) == 0 {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	on := runtime.GOARCH == "amd64" && !purego
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"AVX2", AVX2, flags["avx2"]},
		{"BMI2", BMI2, flags["bmi2"]},
		{"POPCNT", POPCNT, flags["popcnt"]},
		{"AVX512F", AVX512F, flags["avx512f"]},
		{"AVX512BW", AVX512BW, flags["avx512bw"]},
		{"AVX512VL", AVX512VL, flags["avx512vl"]},
		{"AVX512VBMI2", AVX512VBMI2, flags["avx512_vbmi2"]},
		{"AVX512VPOPCNTDQ", AVX512VPOPCNTDQ, flags["avx512_vpopcntdq"]},
		{"AVX512VP2INTERSECT", AVX512VP2INTERSECT, flags["avx512_vp2intersect"]},
		{"AMD", AMD, vendor == "AuthenticAMD"},
	} {
		if c.got != (on && c.want) {
			t.Errorf("%s = %v; /proc/cpuinfo says %v (GOARCH %s, purego %v)", c.name, c.got, c.want, runtime.GOARCH, purego)
		}
	}
	if !on {
		vendor, family, model = "", 0, 0
	}
	if Vendor != vendor || Family != family || Model != model {
		t.Errorf("Vendor, Family, Model = %q, %d, %d; /proc/cpuinfo says %q, %d, %d (GOARCH %s, purego %v)",
			Vendor, Family, Model, vendor, family, model, runtime.GOARCH, purego)
	}
}

// TestL2Size checks L2Size against the size Linux gives the first CPU's
// level 2 cache in sysfs, and against 0 under purego and off amd64.
func TestL2Size(t *testing.T) {
	on := runtime.GOARCH == "amd64" && !purego
	if !on {
		if L2Size != 0 {
			t.Fatalf("L2Size = %d, want 0 (GOARCH %s, purego %v)", L2Size, runtime.GOARCH, purego)
		}
		return
	}
	for i := 0; ; i++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", i)
		level, err := os.ReadFile(dir + "level")
		if err != nil {
			t.Skipf("no level 2 cache in sysfs: %v", err)
		}
		if strings.TrimSpace(string(level)) != "2" {
			continue
		}
		size, err := os.ReadFile(dir + "size")
		if err != nil {
			t.Skip(err)
		}
		kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(size)), "K"))
		if err != nil {
			t.Skipf("sysfs size %q: %v", size, err)
		}
		if L2Size != kib<<10 {
			t.Fatalf("L2Size = %d; sysfs says %d KiB", L2Size, kib)
		}
		return
	}
}
