// Package engine is the framework every xsect workload plans with: a
// workload (all-pairs counts, containment joins, frequent pairs,
// similarity joins) defines its problem type and its output type, and each
// of its techniques on each device is an Engine over them. The workload's
// planner asks every engine allowed by the caller's choice of device and
// technique for an Estimate, keeps those that fit their device, and runs
// the fastest; Explain prints what it saw. Conjunctive queries plan the
// same way, with engines that open a runner for many batches in place of
// Run.
//
// The package knows nothing of any workload: it holds the vocabulary
// (devices, estimates, candidates, the "cannot run" error), the registry of
// engines, the selection rules and the explanation table, so that every
// workload plans, fails and explains itself alike.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says what kind of processor a device is.
type Kind int

// Device kinds.
const (
	CPU Kind = iota
	GPU
)

// String returns "cpu" or "gpu".
func (k Kind) String() string {
	if k == GPU {
		return "gpu"
	}
	return "cpu"
}

// Device describes where an engine runs, for the planner and for Explain.
type Device struct {
	Kind Kind
	// Name identifies the device for people, e.g. "NVIDIA H100 80GB HBM3".
	Name string
	// Memory is the bytes an engine may use there (for a GPU, its free
	// device memory); an engine whose estimate needs more is not chosen.
	Memory int64
	// Parallelism is the number of CPU threads or GPU multiprocessors.
	Parallelism int
}

// Estimate is an engine's prediction for one problem.
type Estimate struct {
	// Seconds is the predicted time of Run, without writing the output.
	Seconds float64
	// Memory is the peak number of bytes the engine allocates on its
	// device.
	Memory int64
	// Detail says how the engine would run, for Explain.
	Detail string
	// DeviceName, if not empty, names what the run takes of the device
	// the engine's Device describes, where the estimate chose it (a GPU
	// engine weighing how many of the host's GPUs pay); the explanation's
	// choice says it in place of Device.Name.
	DeviceName string
}

// Duration returns Seconds as a time.Duration, the form in which the
// public packages' plans report their estimate.
func (e Estimate) Duration() time.Duration {
	return time.Duration(e.Seconds * float64(time.Second))
}

// Engine is one technique on one device for problems of type P, delivering
// its results to outputs of type O. An engine must be safe for concurrent
// use: one engine value serves every plan.
type Engine[P, O any] interface {
	Estimator[P]
	// Run computes p and delivers the result through out. It returns
	// ctx.Err() soon after ctx is done.
	Run(ctx context.Context, p P, out O) error
}

// ErrCannotRun is wrapped by the errors of engines or devices that cannot
// run a problem: too much memory, no GPU, a technique that does not apply.
var ErrCannotRun = errors.New("cannot run")

// ErrOverBudget is wrapped, beside ErrCannotRun, by the errors of engines
// that would run within a larger CPU memory budget: the remedy is to raise
// the budget, not to ask for something else.
var ErrOverBudget = errors.New("over the memory budget")

// ErrUnavailable is wrapped, beside ErrCannotRun, by the errors of engines
// whose device this machine does not offer (no GPU, no driver): nothing
// about the problem stops them.
var ErrUnavailable = errors.New("device unavailable")

// Unavailable marks err, an engine's device error, with ErrUnavailable
// and ErrCannotRun.
func Unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if !errors.Is(err, ErrCannotRun) {
		err = Cannot("%v", err)
	}
	return marked{err, ErrUnavailable}
}

// Cannot returns an error wrapping ErrCannotRun with the formatted reason.
func Cannot(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCannotRun, fmt.Sprintf(format, args...))
}

// OverBudget is Cannot for a reason that a larger CPU memory budget
// removes: the error wraps ErrOverBudget too.
func OverBudget(format string, args ...any) error {
	return marked{Cannot(format, args...), ErrOverBudget}
}

// marked is an error that also matches a marker (ErrOverBudget,
// ErrUnavailable) under errors.Is.
type marked struct{ err, marker error }

func (e marked) Error() string   { return e.err.Error() }
func (e marked) Unwrap() []error { return []error{e.err, e.marker} }

// Reason returns err's message without the "cannot run: " prefix that
// Cannot adds, for tables and lists of reasons.
func Reason(err error) string {
	return strings.TrimPrefix(err.Error(), ErrCannotRun.Error()+": ")
}

// Choice is what the caller allows the planner: a device ("cpu", "gpu" or
// "auto") and a technique (a registered name or "auto"). The empty string
// means "auto" for both.
type Choice struct {
	Device    string
	Technique string
}

// Normalize validates c against the registered technique names and returns
// it with "" replaced by "auto" and the device in lower case. workload
// prefixes its errors.
func (c Choice) Normalize(workload string, techniques []string) (Choice, error) {
	c.Device = strings.ToLower(strings.TrimSpace(c.Device))
	if c.Device == "" {
		c.Device = "auto"
	}
	if c.Device != "auto" && c.Device != "cpu" && c.Device != "gpu" {
		return c, fmt.Errorf("%s: unknown device %q (cpu, gpu or auto)", workload, c.Device)
	}
	if c.Technique == "" {
		c.Technique = "auto"
	}
	if c.Technique != "auto" && !contains(techniques, c.Technique) {
		return c, fmt.Errorf("%s: unknown technique %q (auto, %s)", workload, c.Technique, strings.Join(techniques, ", "))
	}
	return c, nil
}

// Allows reports whether the choice lets an engine of this name and kind
// be considered.
func (c Choice) Allows(name string, kind Kind) bool {
	return (c.Device == "auto" || c.Device == "" || c.Device == kind.String()) &&
		(c.Technique == "auto" || c.Technique == "" || c.Technique == name)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
