package allpairs

import "github.com/xsect/xsect/internal/engine"

// Engine is one technique on one device for this workload: Estimate must
// be cheap (O(sets + universe) at most, from p.Stats, p.DFR, p.DFS and the
// set sizes), and Run delivers, for a tiled problem (p.Tiled), every tile
// of the caller's grid through out.Tile, otherwise every qualifying pair,
// through writers from out.Writer or through out.Tile with tiles of any
// shape, returning the first error of out.
type Engine = engine.Engine[*Problem, *Output]

// Candidate is one engine's answer to the planner.
type Candidate = engine.Candidate[Engine]

// The framework's vocabulary, under the names this package's engines use.
type (
	// DeviceKind says what kind of processor a device is.
	DeviceKind = engine.Kind
	// Device describes where an engine runs.
	Device = engine.Device
	// Estimate is an engine's prediction for one problem.
	Estimate = engine.Estimate
)

// Device kinds.
const (
	CPU = engine.CPU
	GPU = engine.GPU
)

// ErrCannotRun is wrapped by the errors of techniques or devices that
// cannot run a problem (a bitmap over a huge universe, a GPU that is
// absent).
var ErrCannotRun = engine.ErrCannotRun

// ProblemDevice is an Engine whose device depends on the problem: a GPU
// engine that runs on the GPUs of Problem.GPUs. The planner asks
// DeviceFor in place of Device, so that only those GPUs are opened.
type ProblemDevice interface {
	DeviceFor(p *Problem) (Device, error)
}

// DeviceOf returns the device e would run p on: DeviceFor where e has it,
// else Device.
func DeviceOf(e Engine, p *Problem) (Device, error) {
	if pd, ok := e.(ProblemDevice); ok {
		return pd.DeviceFor(p)
	}
	return e.Device()
}

var registered = engine.NewRegistry[Engine]("allpairs")

// Register adds an engine for the planner; the GPU engines' package calls
// it from init. It panics if an engine with the same name and device kind
// is already registered.
func Register(e Engine) { registered.Register(e) }

// Engines returns the registered engines, CPU ones first (the built-in
// engines register before any package that imports this one).
func Engines() []Engine { return registered.Engines() }

// Techniques returns the names of the registered techniques, sorted.
func Techniques() []string { return registered.Names() }

// cpuEngine is the part the built-in engines share.
type cpuEngine struct{ name string }

func (e cpuEngine) Name() string { return e.name }

func (e cpuEngine) Kind() DeviceKind { return CPU }

func (e cpuEngine) Device() (Device, error) { return engine.CPUDevice(), nil }

func cannot(format string, args ...any) error { return engine.Cannot(format, args...) }

// overBudget is cannot for a reason that a larger memory budget removes.
func overBudget(format string, args ...any) error { return engine.OverBudget(format, args...) }
