package cli

import (
	"errors"
	"flag"
	"fmt"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/membudget"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// budget is the memory a command may give its data: the collections it
// reads, an engine's structures, sorted runs and output queues (see
// membudget). Work that would need more fails at once, with exit status 1
// and what to raise, rather than run into the Go runtime's fatal
// out-of-memory error.
type budget struct{ membudget.Budget }

// memoryFlagHelp documents --memory on every command that takes it.
const memoryFlagHelp = "memory budget in `MiB` (0: half of the machine's memory, or of GOMEMLIMIT, the address-space or the cgroup limit when lower)"

// maxMemoryMiB bounds --memory: 1 PiB.
const maxMemoryMiB = 1 << 30

// memoryFlag declares --memory.
func memoryFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("memory", 0, memoryFlagHelp)
}

// newBudget returns the budget of a command run with --memory mib (0:
// not given): the process's (membudget.Process), which --memory may only
// lower. It also sets the Go runtime's soft memory limit to match, unless
// GOMEMLIMIT did (membudget.LimitRuntime); the caller restores it.
func newBudget(mib int64) (budget, error) {
	if mib < 0 || mib > maxMemoryMiB {
		return budget{}, usagef("--memory %d: want MiB in [0, 2^30], 0 for the default", mib)
	}
	b := membudget.Process().Cap(mib<<20, "--memory")
	membudget.LimitRuntime(b)
	return budget{b}, nil
}

// advice says what to do when work does not fit the budget.
func (b budget) advice() string {
	switch b.Source {
	case membudget.Machine, "--memory":
		return "raise --memory"
	case membudget.GoLimit:
		return "raise GOMEMLIMIT"
	case membudget.AddressSpace:
		return "raise the address-space limit (ulimit -v)"
	}
	return "raise " + b.Source
}

// left returns the budget less n bytes already spent, at least 1 MiB:
// what the next stage of a command may use.
func (b budget) left(n int64) budget { return budget{b.Left(n)} }

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
	if need > b.Bytes {
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
