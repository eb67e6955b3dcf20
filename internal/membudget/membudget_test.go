package membudget

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/xsect/xsect/internal/sysinfo"
)

// The budget is half the tightest limit: the machine's memory by default,
// GOMEMLIMIT when that is lower; never below MinBytes.
func TestProcess(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	b := Process()
	if b.Bytes < MinBytes || b.Bytes > max(sysinfo.Memory()/2, MinBytes) {
		t.Errorf("no GOMEMLIMIT: %+v, over half the machine's %d bytes", b, sysinfo.Memory())
	}
	if n, ok := sysinfo.CgroupMemory(); ok && b.Bytes > n/2 {
		t.Errorf("no GOMEMLIMIT: %+v, over half the cgroup's %d bytes", b, n)
	}
	debug.SetMemoryLimit(4 << 20)
	if b := Process(); b != (Budget{2 << 20, GoLimit}) {
		t.Errorf("GOMEMLIMIT 4 MiB: %+v, want half of it", b)
	}
	debug.SetMemoryLimit(1 << 10)
	if b := Process(); b != (Budget{MinBytes, GoLimit}) {
		t.Errorf("GOMEMLIMIT 1 KiB: %+v, want the least budget", b)
	}
}

// A cap only lowers a budget, and a budget spent keeps its source and
// MinBytes at least.
func TestCapLeft(t *testing.T) {
	b := Budget{64 << 20, Cgroup}
	for _, tc := range []struct {
		cap  int64
		want Budget
	}{
		{0, b},
		{-1, b},
		{128 << 20, b},
		{64 << 20, b},
		{16 << 20, Budget{16 << 20, "--memory"}},
		{1, Budget{MinBytes, "--memory"}},
	} {
		if got := b.Cap(tc.cap, "--memory"); got != tc.want {
			t.Errorf("Cap(%d) = %+v, want %+v", tc.cap, got, tc.want)
		}
	}
	if got := b.Left(60 << 20); got != (Budget{4 << 20, Cgroup}) {
		t.Errorf("Left(60 MiB) = %+v", got)
	}
	if got := b.Left(100 << 20); got != (Budget{MinBytes, Cgroup}) {
		t.Errorf("Left(100 MiB) = %+v", got)
	}
}

func TestString(t *testing.T) {
	for b, want := range map[Budget]string{
		{1 << 20, Machine}:      "1.0 MiB (half the machine's memory)",
		{2 << 20, GoLimit}:      "2.0 MiB (half GOMEMLIMIT)",
		{3 << 20, AddressSpace}: "3.0 MiB (half the address-space limit)",
		{4 << 20, Cgroup}:       "4.0 MiB (half the cgroup's memory limit)",
		{5 << 20, "--memory"}:   "5.0 MiB (--memory)",
	} {
		if got := b.String(); got != want {
			t.Errorf("%+v: %q, want %q", b, got, want)
		}
	}
}

// LimitRuntime sets a soft limit above the budget where GOMEMLIMIT set
// none, and leaves GOMEMLIMIT's alone.
func TestLimitRuntime(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	b := Budget{256 << 20, Machine}
	if old := LimitRuntime(b); old != math.MaxInt64 {
		t.Errorf("LimitRuntime returned %d, want the limit it replaced", old)
	}
	if got := debug.SetMemoryLimit(-1); got < b.Bytes+b.Bytes/4 || got == math.MaxInt64 {
		t.Errorf("soft limit %d for a budget of %d", got, b.Bytes)
	}
	debug.SetMemoryLimit(1 << 30)
	if old := LimitRuntime(b); old != 1<<30 {
		t.Errorf("LimitRuntime returned %d, want GOMEMLIMIT's", old)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("LimitRuntime changed GOMEMLIMIT's limit to %d", got)
	}
}
