// Package membudget sets the memory a process may give its data: half of
// the tightest limit on it, among the machine's memory, GOMEMLIMIT, the
// address space left under ulimit -v and the cgroup's (a container's)
// limit. Work that would need more is refused at once, saying what to
// raise, rather than killed by the kernel or the Go runtime. The xsect
// command and the Beam pipeline's workers share it.
package membudget

import (
	"math"
	"runtime/debug"
	"runtime/metrics"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/sysinfo"
)

// Budget is an amount of memory and what set it.
type Budget struct {
	// Bytes is the memory, at least MinBytes.
	Bytes int64
	// Source is what set it, which says what to raise: Machine (""),
	// GoLimit, AddressSpace or Cgroup for half of those, or what Cap was
	// given.
	Source string
}

// The sources of Process's budgets.
const (
	Machine      = ""
	GoLimit      = "GOMEMLIMIT"
	AddressSpace = "the address-space limit"
	Cgroup       = "the cgroup's memory limit"
)

// MinBytes is the least budget: below it nothing runs anyway, and a
// budget spent to nothing would make every later check fail with a
// misleading "needs N bytes".
const MinBytes = 1 << 20

// Process returns the budget of this process: half of the machine's
// memory, or half of GOMEMLIMIT, of the address space left under its
// limit, or of the cgroup's limit, where those are lower. Half leaves
// room for what no estimate counts: garbage not yet collected, the
// runtime's own structures, the page cache of the files read.
func Process() Budget {
	b := Budget{Bytes: sysinfo.Memory() / 2, Source: Machine}
	tighter := func(limit int64, source string) {
		if limit/2 < b.Bytes {
			b = Budget{limit / 2, source}
		}
	}
	if goLimit := debug.SetMemoryLimit(-1); goLimit < math.MaxInt64 {
		tighter(goLimit, GoLimit)
	}
	if n, ok := sysinfo.AddressSpaceLeft(); ok {
		tighter(n, AddressSpace)
	}
	if n, ok := sysinfo.CgroupMemory(); ok {
		tighter(n, Cgroup)
	}
	b.Bytes = max(b.Bytes, MinBytes)
	return b
}

// Cap returns b lowered to bytes, with source as what set it, where bytes
// is positive and less; a cap may only lower a budget, never raise it past
// a limit of the process.
func (b Budget) Cap(bytes int64, source string) Budget {
	if bytes > 0 && bytes < b.Bytes {
		b = Budget{max(bytes, MinBytes), source}
	}
	return b
}

// Left returns the budget less n bytes already spent, at least MinBytes:
// what the next stage of the work may use.
func (b Budget) Left(n int64) Budget {
	b.Bytes = max(b.Bytes-n, MinBytes)
	return b
}

// String describes the budget for messages: "1.5 GiB (half the
// address-space limit)", "64 MiB (--memory)".
func (b Budget) String() string {
	switch b.Source {
	case Machine:
		return engine.Bytes(b.Bytes) + " (half the machine's memory)"
	case GoLimit, AddressSpace, Cgroup:
		return engine.Bytes(b.Bytes) + " (half " + b.Source + ")"
	}
	return engine.Bytes(b.Bytes) + " (" + b.Source + ")"
}

// LimitRuntime sets the Go runtime's soft memory limit, unless GOMEMLIMIT
// did, to b and a quarter more than the runtime holds now, so that the
// garbage collector works harder before garbage takes the process past
// its budget. It returns the limit it replaced, which the caller restores
// (debug.SetMemoryLimit) when the work ends.
func LimitRuntime(b Budget) (old int64) {
	old = debug.SetMemoryLimit(-1)
	if old == math.MaxInt64 {
		debug.SetMemoryLimit(runtimeMapped() + b.Bytes + b.Bytes/4)
	}
	return old
}

// runtimeMapped is the memory the Go runtime holds now (mapped, not
// returned to the system), which its soft limit counts.
func runtimeMapped() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
