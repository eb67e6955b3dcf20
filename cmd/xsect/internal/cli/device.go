package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/intersect"
)

// deviceFlagHelp documents --device.
const deviceFlagHelp = "where to intersect: cpu, gpu, or auto (the GPU when one is present and beats all CPU cores)"

// prewarmInput is the size of input from which --device auto opens the
// GPUs while it reads: a collection of 16 MiB (4 million elements) takes
// the CPU a second or more to join, more than the GPU's start-up (a few
// tenths of a second), which the planner would otherwise wait for.
const prewarmInput = 16 << 20

// prewarmAll is the size of input from which a command opens every GPU
// of the host while it reads, where --gpus leaves them to the planner: a
// collection of 1 GiB (256 million elements) keeps a GPU busy for
// seconds, which the others divide. Below it the first GPU opens alone,
// and the planner opens the others where it finds a run long enough to
// pay for their start (gpurt.Weigh).
const prewarmAll = 1 << 30

// inputSize is the total size of the regular files at paths.
func inputSize(paths ...string) int64 {
	var total int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	return total
}

// worthPrewarmSize reports whether a command should start opening the
// GPUs before it reads or generates its input of size bytes: always with
// --device gpu; with --device auto where a GPU is present and the input
// holds at least prewarmInput bytes. Below that the planner opens the
// GPUs only for a problem the CPU would take longer on: opening keeps a
// core busy a few tenths of a second, and a process that ends before the
// driver has started waits for it.
func worthPrewarmSize(device string, size int64) bool {
	switch {
	case device == "gpu":
		return true
	case device != "auto" || gpurt.Present() != nil:
		return false
	}
	return size >= prewarmInput
}

// prewarm starts opening the GPUs of gpus in the background where
// worthPrewarmSize says so of the files at paths, so that the driver and the contexts start while
// the input is read, and reports whether it did (prewarmGPUs).
func prewarm(device string, gpus []int, paths ...string) bool {
	size := inputSize(paths...)
	if !worthPrewarmSize(device, size) {
		return false
	}
	prewarmGPUs(gpus, size)
	return true
}

// prewarmGPUs starts opening the GPUs of gpus for an input of size bytes:
// those it names, or, where it leaves them to the planner (nil), the
// first GPU, and every GPU from prewarmAll bytes of input.
func prewarmGPUs(gpus []int, size int64) {
	if gpus == nil && size < prewarmAll {
		gpurt.Prewarm()
		return
	}
	gpurt.PrewarmGPUs(gpus)
}

// explainProcess ends --explain: the GPU's start-up steps, where a GPU was
// opened, the phases the command marked (writePhases), and the process's
// time so far.
func explainProcess(env *Env) {
	io.WriteString(env.Stderr, gpurt.StartupSummary(env.started))
	var gpu gpuSpan
	gpu.first, gpu.last, gpu.opened = gpurt.StartupSpan()
	gpu.estimate = gpurt.StartupEstimate()
	writePhases(env.Stderr, env.started, env.phases, gpu)
	fmt.Fprintf(env.Stderr, "process      %s since it started, output written (the exit follows)\n",
		time.Since(env.started).Round(time.Millisecond))
}

// gpusFlag defines --gpus, the GPUs a command spreads its work over.
func gpusFlag(fs *flag.FlagSet) *string {
	return fs.String("gpus", "all", "GPUs to use: all (the first alone where the others' start would cost more than they save; --explain says which), the first N, or a comma-separated `LIST` of ordinals (\"2,\" is GPU 2 alone; see xsect devices)")
}

// parseGPUs reads --gpus: a malformed value is a usage error, and so is
// an ordinal beyond the host's GPUs (checkGPUs).
func parseGPUs(value, device string) ([]int, error) {
	list, err := parseGPUList(value)
	if err != nil {
		return nil, err
	}
	return list, checkGPUs(value, device, list)
}

// parseGPUList reads --gpus without checking its ordinals against the
// host's GPUs, for a command that opens the GPUs beside its reading and
// checks them after it (checkGPUs), when the driver has loaded meanwhile.
func parseGPUList(value string) ([]int, error) {
	list, err := gpu.ParseGPUs(value)
	if err != nil {
		return nil, usagef("--%v", err)
	}
	return list, nil
}

// checkGPUs checks a list of GPUs read from --gpus value: an ordinal
// beyond the host's GPUs is a usage error when a GPU may run (device is
// not "cpu") and the driver reports devices. Checking that loads the
// driver, a tenth of a second, which the default, all, does not need. A
// host without a usable GPU is left to the planner (auto runs on the CPU;
// gpu says why not).
func checkGPUs(value, device string, list []int) error {
	if list == nil || device == "cpu" || gpu.Available() != nil {
		return nil
	}
	if _, err := gpu.CheckGPUs(list); err != nil {
		return usagef("--gpus %s: %v", value, err)
	}
	return nil
}

// checkGPUsBeside runs checkGPUs beside the work that follows and returns
// a wait for its verdict. The check waits for the driver's start, which
// takes 20-40 ms on a GPU in use and 180-200 ms on one that has idled,
// while the preparation that follows needs no GPU; a bad ordinal also
// fails the planner's opening of the GPUs, so the caller waits for the
// verdict before it reports the plan's error, the usage error first.
func checkGPUsBeside(value, device string, list []int) (wait func() error) {
	if list == nil || device == "cpu" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- checkGPUs(value, device, list) }()
	return sync.OnceValue(func() error { return <-done })
}

// pairwise is the pairwise method a command runs, on the CPU or the GPU,
// and, for the GPU, a check for errors after the work (intersect.Method's
// functions cannot return them).
type pairwise struct {
	intersect.Method
	err func() error
}

// checkMethod rejects a --technique that --device does not offer, before any
// input is read.
func checkMethod(device, method string) error {
	switch device {
	case "cpu", "gpu", "auto":
	default:
		return usagef("--device %q: want cpu, gpu or auto", device)
	}
	if slices.Contains(listMethods(device), method) {
		return nil
	}
	return usagef("unknown method %q for --device %s (methods: %s)", method, device, strings.Join(listMethods(device), ", "))
}

// choosePairwise resolves --device and --technique for the given inputs,
// counted (count) or listed, on the first GPU of gpus (nil: GPU 0). With --device auto and --technique auto it takes
// the GPU only where gpu.Worthwhile says it beats the CPU on all
// its cores, and when no GPU can be used there says why, once, on stderr;
// a method that only one device has picks that device.
func choosePairwise(env *Env, device, method string, inputs [][]uint32, count bool, gpus []int) (pairwise, error) {
	if err := checkMethod(device, method); err != nil {
		return pairwise{}, err
	}
	if device == "auto" {
		_, cpuErr := intersect.Lookup(method)
		switch {
		case method != "auto" && cpuErr == nil:
			device = "cpu" // a CPU method, named
		case method != "auto":
			device = "gpu" // a GPU method, named
		case len(inputs) < 2 || !worthGPU(inputs, count):
			device = "cpu"
		case gpu.Available() != nil:
			gpuNote.Do(func() { fmt.Fprintf(env.Stderr, "xsect: using the CPU: %v\n", gpu.Available()) })
			device = "cpu"
		default:
			device = "gpu"
		}
	}
	if device == "cpu" {
		m, err := intersect.Lookup(method)
		if err != nil {
			return pairwise{}, usageError{err.Error()}
		}
		if method == "auto" {
			// Large sets are split by value range over all cores.
			m.Count = func(a, b []uint32) int { return intersect.CountParallel(a, b, 0) }
			m.Intersect = func(dst, a, b []uint32) []uint32 { return intersect.IntersectParallel(dst, a, b, 0) }
		}
		return pairwise{m, func() error { return nil }}, nil
	}
	m, err := gpu.LookupMethod(method)
	if err != nil {
		return pairwise{}, usageError{err.Error()}
	}
	ordinal := 0 // the steps follow each other: the first GPU chosen
	if len(gpus) > 0 {
		ordinal = gpus[0]
	}
	p, err := gpu.OpenPairwise(ordinal)
	if err != nil {
		return pairwise{}, err
	}
	g := &gpuPairwise{p: p, m: m}
	return pairwise{intersect.Method{Name: "gpu-" + m.String(), Count: g.count, Intersect: g.intersect}, g.finish}, nil
}

var gpuNote sync.Once

// worthGPU reports whether the first step, the two smallest inputs, is
// worth the GPU: counted when only their count is wanted, materialised
// when there are more inputs to go or the elements are printed.
func worthGPU(inputs [][]uint32, count bool) bool {
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return len(inputs[x]) - len(inputs[y]) })
	return gpu.Worthwhile(inputs[order[0]], inputs[order[1]], !count || len(inputs) > 2)
}

// gpuPairwise adapts the GPU's pairwise engine to intersect.Method,
// keeping the first error for finish.
type gpuPairwise struct {
	p   *gpu.Pairwise
	m   gpu.Method
	err error
}

func (g *gpuPairwise) count(a, b []uint32) int {
	if g.err != nil {
		return 0
	}
	n, err := g.p.Count(a, b, g.m)
	g.err = err
	return n
}

func (g *gpuPairwise) intersect(dst, a, b []uint32) []uint32 {
	if g.err != nil {
		return dst
	}
	dst, g.err = g.p.Intersect(dst, a, b, g.m)
	return dst
}

func (g *gpuPairwise) finish() error {
	if err := g.p.Close(); g.err == nil {
		g.err = err
	}
	if g.err != nil {
		return fmt.Errorf("on the GPU: %w", g.err)
	}
	return nil
}

// listMethods writes the methods --technique accepts on a device.
func listMethods(device string) []string {
	names := []string{"auto"}
	if device != "gpu" {
		for _, m := range intersect.Methods() {
			names = append(names, m.Name)
		}
	}
	if device != "cpu" {
		for _, m := range gpu.Methods() {
			names = append(names, m.String())
		}
	}
	return names
}
