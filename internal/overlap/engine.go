package overlap

import (
	"context"
	"fmt"
	"runtime"

	"github.com/xsect/xsect/internal/registry"
	"github.com/xsect/xsect/internal/sysinfo"
)

// Engine is one technique on one device. The CPU engines are built in;
// other packages add theirs with Register. An engine must be safe for
// concurrent use: one engine value serves every plan.
type Engine interface {
	// Name is the technique, for example "scancount". Engines of
	// different devices that compute alike share a name, so that
	// Options.Technique picks it on whatever device Options.Device allows.
	Name() string
	// Kind is the kind of device the engine runs on. Unlike Device it
	// must not touch the device: Register and the planner's filtering by
	// Options.Device call it without opening a GPU.
	Kind() DeviceKind
	// Device returns the device the engine runs on, or an error (wrapping
	// ErrCannotRun) saying why it is not available on this machine.
	Device() (Device, error)
	// Estimate predicts the engine's time and memory on p, or returns an
	// error (wrapping ErrCannotRun) saying why it cannot run p. It must be
	// cheap: O(sets + universe) at most, from p.Stats, p.DFR, p.DFS and the
	// set sizes.
	Estimate(p *Problem) (Estimate, error)
	// Run computes p and delivers the result through out: for a tiled
	// problem (p.Tiled) every tile of the caller's grid through out.Tile,
	// otherwise every qualifying pair, through writers from out.Writer or
	// through out.Tile with tiles of any shape. It returns ctx.Err() soon
	// after ctx is done, and the first error of out.
	Run(ctx context.Context, p *Problem, out *Output) error
}

// DeviceKind says what kind of processor a device is.
type DeviceKind int

// Device kinds.
const (
	CPU DeviceKind = iota
	GPU
)

// String returns "cpu" or "gpu".
func (k DeviceKind) String() string {
	if k == GPU {
		return "gpu"
	}
	return "cpu"
}

// Device describes where an engine runs, for the planner and for Explain.
type Device struct {
	Kind DeviceKind
	// Name identifies the device for people, e.g. "NVIDIA H100 80GB HBM3".
	Name string
	// Memory is the bytes an engine may use there (for a GPU, its free
	// device memory); engines whose Estimate needs more are not chosen.
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
	// Detail says how the engine would run, for Explain (e.g. the chosen
	// split of heavy and light elements).
	Detail string
}

var registered = registry.New("allpairs", func(e Engine) (string, string) { return e.Name(), e.Kind().String() })

// Register adds an engine for the planner. Packages of GPU engines call it
// from init. It panics if an engine with the same name and device kind is
// already registered.
func Register(e Engine) { registered.Register(e) }

// Engines returns the registered engines, CPU ones first (the built-in
// engines register before any package that imports allpairs).
func Engines() []Engine { return registered.Engines() }

// Techniques returns the names of the registered techniques, sorted.
func Techniques() []string { return registered.Names() }

// cpuDevice describes this machine's CPU for the built-in engines.
func cpuDevice(threads int) Device {
	return Device{Kind: CPU, Name: fmt.Sprintf("%s, %d threads", sysinfo.CPUName(), threads), Memory: sysinfo.Memory(), Parallelism: threads}
}

// cpuEngine is the part the built-in engines share.
type cpuEngine struct{ name string }

func (e cpuEngine) Name() string { return e.name }

func (e cpuEngine) Kind() DeviceKind { return CPU }

func (e cpuEngine) Device() (Device, error) { return cpuDevice(runtime.GOMAXPROCS(0)), nil }

func cannot(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCannotRun, fmt.Sprintf(format, args...))
}
