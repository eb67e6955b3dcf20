package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// budget is the memory a command may give its data: the collections it
// reads, an engine's structures, sorted runs and output queues. Work that
// would need more fails at once, with exit status 1 and what to raise,
// rather than run into the Go runtime's fatal out-of-memory error.
type budget struct {
	bytes int64
	// source is what set it, which says what to raise: "--memory",
	// "GOMEMLIMIT", "the address-space limit", "the cgroup's memory
	// limit", or "" for the default, half of the machine's memory.
	source string
}

// memoryFlagHelp documents --memory on every command that takes it.
const memoryFlagHelp = "memory budget in `MiB` (0: half of the machine's memory, or of GOMEMLIMIT, the address-space or the cgroup limit when lower)"

// maxMemoryMiB bounds --memory: 1 PiB.
const maxMemoryMiB = 1 << 30

// memoryFlag declares --memory.
func memoryFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("memory", 0, memoryFlagHelp)
}

// newBudget returns the budget of a command run with --memory mib (0:
// not given). The tightest limit on the process bounds it: half of the
// machine's memory by default, half of GOMEMLIMIT, of the address space
// left under ulimit -v, or of the cgroup's limit, where those are lower;
// --memory may only lower it further. It also sets the Go runtime's soft
// memory limit, unless GOMEMLIMIT did, to a budget and a quarter more than
// the runtime holds now, so that the garbage collector works harder
// before garbage takes the process past its budget. The caller restores
// the runtime's limit.
func newBudget(mib int64) (budget, error) {
	if mib < 0 || mib > maxMemoryMiB {
		return budget{}, usagef("--memory %d: want MiB in [0, 2^30], 0 for the default", mib)
	}
	b := budget{bytes: sysinfo.Memory() / 2}
	tighter := func(limit int64, source string) {
		if limit/2 < b.bytes {
			b = budget{limit / 2, source}
		}
	}
	goLimit := debug.SetMemoryLimit(-1)
	if goLimit < math.MaxInt64 {
		tighter(goLimit, "GOMEMLIMIT")
	}
	if n, ok := sysinfo.AddressSpaceLeft(); ok {
		tighter(n, "the address-space limit")
	}
	if n, ok := sysinfo.CgroupMemory(); ok {
		tighter(n, "the cgroup's memory limit")
	}
	if mib > 0 && mib<<20 < b.bytes {
		b = budget{mib << 20, "--memory"}
	}
	b.bytes = max(b.bytes, 1<<20)
	if goLimit == math.MaxInt64 {
		debug.SetMemoryLimit(runtimeMapped() + b.bytes + b.bytes/4)
	}
	return b, nil
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

// String describes the budget for messages: "1.5 GiB (half the
// address-space limit)".
func (b budget) String() string {
	switch b.source {
	case "":
		return engine.Bytes(b.bytes) + " (half the machine's memory)"
	case "--memory":
		return engine.Bytes(b.bytes) + " (--memory)"
	}
	return engine.Bytes(b.bytes) + " (half " + b.source + ")"
}

// advice says what to do when work does not fit the budget.
func (b budget) advice() string {
	switch b.source {
	case "", "--memory":
		return "raise --memory"
	case "GOMEMLIMIT":
		return "raise GOMEMLIMIT"
	case "the address-space limit":
		return "raise the address-space limit (ulimit -v)"
	}
	return "raise " + b.source
}

// left returns the budget less n bytes already spent, at least 1 MiB:
// what the next stage of a command may use.
func (b budget) left(n int64) budget {
	b.bytes = max(b.bytes-n, 1<<20)
	return b
}

// memoryError is work that the budget cannot hold: exit status 1, with
// one line that says what to raise.
type memoryError struct {
	what string // what needs the memory
	need int64  // how much, or 0 if only known to be more than the budget
	b    budget
}

func (e memoryError) Error() string {
	if e.need > 0 {
		return fmt.Sprintf("%s needs %s, over the memory budget of %s: %s", e.what, engine.Bytes(e.need), e.b, e.b.advice())
	}
	return fmt.Sprintf("%s, more than the memory budget of %s allows: %s", e.what, e.b, e.b.advice())
}

// check returns a memoryError if what needs more than the budget.
func (b budget) check(what string, need int64) error {
	if need > b.bytes {
		return memoryError{what, need, b}
	}
	return nil
}

// readError turns a collection that exceeds the reader's limit into a
// memoryError; other errors are returned as they are.
func (b budget) readError(err error) error {
	var le *setio.LimitError
	if !errors.As(err, &le) {
		return err
	}
	what := fmt.Sprintf("%s: %d sets and %d elements", le.File, le.Sets, le.Elements)
	if le.Need == 0 {
		what += " read"
	}
	return memoryError{what, le.Need, b}
}

// memoryOf is the memory of a collection's arrays.
func memoryOf(c *sets.Collection) int64 {
	if c == nil {
		return 0
	}
	return 8*int64(cap(c.Offsets)) + 4*int64(cap(c.Elements))
}

// planError classifies a planner's error. A problem that some engine
// could run with more memory is a failure (exit status 1) that says what
// to raise, and so is one whose engines' devices this machine lacks (no
// GPU). A technique or device asked for that cannot run this input for
// another reason (the technique does not apply to it) is bad usage (exit
// status 2); when every engine was allowed and none applies, it is a
// failure. Other errors are invalid options. It tests the errors as a
// library user does, through the public packages (allpairs's are pairs's
// and simjoin's too).
func planError(err error, technique, device string, b budget) error {
	switch {
	case errors.Is(err, allpairs.ErrOverBudget):
		return fmt.Errorf("%w: %s", err, b.advice())
	case errors.Is(err, allpairs.ErrUnavailable):
		return err
	case errors.Is(err, allpairs.ErrCannotRun) && (technique != "auto" || device != "auto"):
		return inputError{err}
	case errors.Is(err, allpairs.ErrCannotRun):
		return err
	}
	return usageError{err.Error()}
}
