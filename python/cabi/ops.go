package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// The error codes of an outcome; the Python package raises xsect.Error,
// OSError, xsect.CannotRun and KeyboardInterrupt for them.
const (
	codeOK        = 0
	codeError     = 1 // bad input or options: xsect.Error, a ValueError
	codeOS        = 2 // a file that cannot be opened, read or written: OSError
	codeCannotRun = 3 // no engine can run it here (memory, device): xsect.CannotRun
	codeCancelled = 4 // cancelled by xsect_cancel
)

// params_ are the parameters of every operation, as the Python package
// sends them in JSON; each operation reads those it takes.
type params_ struct {
	Technique  string `json:"technique"`
	Device     string `json:"device"`
	GPUs       string `json:"gpus"`
	Threads    int    `json:"threads"`
	Memory     int64  `json:"memory"` // MiB, 0 for the default budget
	Explain    bool   `json:"explain"`
	CountOnly  bool   `json:"count_only"`
	MinOverlap int    `json:"min_overlap"`
	MinDegree  string `json:"min_degree"`
	Measure    string `json:"measure"`
	Threshold  string `json:"threshold"`
	Distinct   bool   `json:"distinct"`
	MinSupport string `json:"min_support"`
	Path       string `json:"path"`
	Index      int64  `json:"index"`
	Limit      int    `json:"limit"`
	DenseRatio int    `json:"dense_ratio"`
	// AssumeSorted says that count's and intersect's sets are strictly
	// increasing: they are not checked.
	AssumeSorted bool `json:"assume_sorted"`
	// Other says whether the inputs hold a second collection.
	Other bool `json:"other"`
}

// userError is bad input or options: codeError with its message.
type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

// budgetError is work that the memory budget cannot hold: codeCannotRun.
type budgetError struct{ msg string }

func (e budgetError) Error() string { return e.msg }

// run runs the operation name and returns its outcome and result arrays.
func run(ctx context.Context, name string, p *params_, in [][]byte) (outcome, [][]byte) {
	var (
		o   outcome
		out [][]byte
		err error
	)
	if p.Threads < 0 || p.Threads > 4096 {
		err = usagef("threads=%d: want 1 to 4096, or 0 for every core", p.Threads)
	} else if p.Memory < 0 || p.Memory > 1<<30 {
		err = usagef("memory=%d: want MiB in [0, 2^30], 0 for the default", p.Memory)
	} else {
		switch name {
		case "validate":
			_, err = collection(in, 0, "collection")
		case "count", "intersect":
			o, out, err = pairwise(name, p, in)
		case "load":
			out, err = load(p)
		case "allpairs", "containment":
			o, out, err = join(ctx, name, p, in)
		case "simjoin":
			o, out, err = simJoin(ctx, p, in)
		case "pairs":
			o, out, err = frequentPairs(ctx, p, in)
		case "index_build":
			o, err = indexBuild(p, in)
		case "index_open":
			o, err = indexOpen(p)
		case "index_save":
			err = indexSave(p)
		case "query":
			o, out, err = indexQuery(ctx, p, in)
		default:
			err = usagef("xsect: unknown operation %q", name)
		}
	}
	if err != nil {
		explain := o.Explain
		o = classify(err)
		o.Explain = explain
		out = nil
	}
	return o, out
}

// classify turns an error into an outcome with its code.
func classify(err error) outcome {
	msg := err.Error()
	var (
		ue    userError
		be    budgetError
		le    *setio.LimitError
		me    *query.MemoryError
		errno syscall.Errno
		pe    *fs.PathError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return outcome{Code: codeCancelled, Message: "xsect: cancelled"}
	case errors.As(err, &ue):
		return outcome{Code: codeError, Message: msg}
	case errors.As(err, &be), errors.As(err, &le), errors.As(err, &me):
		return outcome{Code: codeCannotRun, Message: msg + ": raise memory= (MiB)"}
	case errors.Is(err, allpairs.ErrOverBudget):
		return outcome{Code: codeCannotRun, Message: msg + ": raise memory= (MiB)"}
	case errors.Is(err, allpairs.ErrCannotRun):
		return outcome{Code: codeCannotRun, Message: msg}
	case errors.Is(err, setio.ErrBadInput):
		return outcome{Code: codeError, Message: msg}
	case errors.As(err, &pe), errors.As(err, &errno):
		o := outcome{Code: codeOS, Message: msg}
		if errors.As(err, &errno) {
			o.Errno = int(errno)
		}
		return o
	}
	return outcome{Code: codeError, Message: msg}
}

// budget is the memory an operation may use, in bytes: memory MiB when
// given, otherwise half of the machine's memory, or half of GOMEMLIMIT
// where that is lower. (xsect's CLI also heeds the address-space and
// cgroup limits, through an internal package this module cannot import.)
func budget(mib int64) int64 {
	var si syscall.Sysinfo_t
	b := int64(math.MaxInt64)
	if syscall.Sysinfo(&si) == nil {
		b = int64(si.Totalram) * int64(si.Unit) / 2
	}
	if lim := debug.SetMemoryLimit(-1); lim < math.MaxInt64 && lim/2 < b {
		b = lim / 2
	}
	if mib > 0 && mib<<20 < b {
		b = mib << 20
	}
	return max(b, 1<<20)
}

// describe says a budget in messages: "1.5 GiB (memory=)" or "(half the
// machine's memory)".
func describe(b int64, mib int64) string {
	s := fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	if mib > 0 && mib<<20 == b {
		return s + " (memory=)"
	}
	return s + " (half the machine's memory)"
}

// collection returns the collection of inputs in[i] (offsets) and in[i+1]
// (elements), in place, after checking that it is one.
func collection(in [][]byte, i int, what string) (*sets.Collection, error) {
	if len(in) < i+2 {
		return nil, usagef("xsect: %s missing", what)
	}
	c := &sets.Collection{Offsets: asSlice[uint64](in[i]), Elements: asSlice[uint32](in[i+1])}
	if len(c.Offsets) == 0 {
		return nil, usagef("%s: no offsets (want k+1 of them, starting with 0)", what)
	}
	if err := c.Validate(); err != nil {
		return nil, usagef("%s: %v", what, err)
	}
	return c, nil
}

// collections returns the first collection of the inputs and, when p.Other,
// the second.
func collections(in [][]byte, p *params_) (r, s *sets.Collection, err error) {
	if r, err = collection(in, 0, "collection"); err != nil {
		return nil, nil, err
	}
	if p.Other {
		if s, err = collection(in, 2, "other"); err != nil {
			return nil, nil, err
		}
	}
	return r, s, nil
}

// memoryOf is the memory of a collection's arrays.
func memoryOf(c *sets.Collection) int64 {
	if c == nil {
		return 0
	}
	return 8*int64(len(c.Offsets)) + 4*int64(len(c.Elements))
}

// gpus reads the gpus= parameter.
func gpus(p *params_) ([]int, error) {
	list, err := gpu.ParseGPUs(p.GPUs)
	if err != nil {
		return nil, usagef("gpus=: %v", err)
	}
	return list, nil
}

// strict reports whether s is strictly increasing, checking parts of it on
// up to threads goroutines (0: every core) when it is long.
func strict(s []uint32, threads int) bool {
	const part = 1 << 18
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if len(s) < 2*part || threads == 1 {
		return sets.IsStrict(s)
	}
	parts := min(threads, len(s)/part)
	var wg sync.WaitGroup
	var bad atomic.Bool
	for p := range parts {
		lo, hi := p*len(s)/parts, (p+1)*len(s)/parts
		if lo > 0 {
			lo-- // overlap by one: the boundary between parts
		}
		wg.Go(func() {
			if !sets.IsStrict(s[lo:hi]) {
				bad.Store(true)
			}
		})
	}
	wg.Wait()
	return !bad.Load()
}

// set returns input i as a set: in place if it is strictly increasing (or
// assumed to be), otherwise a sorted copy without duplicates.
func set(in [][]byte, i int, assumed bool) []uint32 {
	s := asSlice[uint32](in[i])
	if assumed || strict(s, 0) {
		return s
	}
	return sets.Normalize(slices.Clone(s))
}

// pairwise counts or intersects two sets, on the CPU (split by value range
// over threads) or, with device="gpu", on the first GPU of gpus=.
func pairwise(name string, p *params_, in [][]byte) (outcome, [][]byte, error) {
	if len(in) != 2 {
		return outcome{}, nil, usagef("xsect: %s takes two sets", name)
	}
	a, b := set(in, 0, p.AssumeSorted), set(in, 1, p.AssumeSorted)
	count := name == "count"
	device := p.Device
	method := p.Technique
	switch device {
	case "", "auto":
		device = "cpu"
		if gpu.Available() == nil && gpu.Worthwhile(a, b, !count) {
			device = "gpu"
		}
	case "cpu", "gpu":
	default:
		return outcome{}, nil, usagef("device=%q: want cpu, gpu or auto", device)
	}
	if method == "" {
		method = "auto"
	}
	if device == "cpu" {
		m, err := intersect.Lookup(method)
		if err != nil {
			return outcome{}, nil, usagef("technique=: %v", err)
		}
		if method == "auto" {
			m.Count = func(a, b []uint32) int { return intersect.CountParallel(a, b, p.Threads) }
			m.Intersect = func(dst, a, b []uint32) []uint32 { return intersect.IntersectParallel(dst, a, b, p.Threads) }
		}
		o := outcome{Explain: fmt.Sprintf("pairwise     %s on the CPU, sets of %d and %d elements\n", m.Name, len(a), len(b))}
		if count {
			o.N = int64(m.Count(a, b))
			return o, nil, nil
		}
		r := m.Intersect(make([]uint32, 0, min(len(a), len(b))), a, b)
		o.N = int64(len(r))
		return o, [][]byte{asBytes(r)}, nil
	}
	m, err := gpu.LookupMethod(method)
	if err != nil {
		return outcome{}, nil, usagef("technique=: %v", err)
	}
	list, err := gpus(p)
	if err != nil {
		return outcome{}, nil, err
	}
	ordinal := 0
	if len(list) > 0 {
		ordinal = list[0]
	}
	g, err := gpu.OpenPairwise(ordinal)
	if err != nil {
		return outcome{}, nil, err
	}
	defer g.Close()
	o := outcome{Explain: fmt.Sprintf("pairwise     %s on GPU %d, sets of %d and %d elements\n", m, ordinal, len(a), len(b))}
	if count {
		n, err := g.Count(a, b, m)
		o.N = int64(n)
		return o, nil, err
	}
	r, err := g.Intersect(nil, a, b, m)
	o.N = int64(len(r))
	return o, [][]byte{asBytes(r)}, err
}

// load reads the collection file p.Path (text, gzip or binary) within the
// budget.
func load(p *params_) ([][]byte, error) {
	f, err := os.Open(p.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: p.Path, Err: syscall.EISDIR}
	}
	size := int64(-1)
	if st.Mode().IsRegular() {
		size = st.Size()
	}
	c, _, err := setio.ReadLimited(f, p.Path, size, budget(p.Memory))
	if err != nil {
		return nil, err
	}
	return [][]byte{asBytes(c.Offsets), asBytes(c.Elements)}, nil
}

// collector gathers the pairs of a join into one slice, within a budget of
// limit bytes: a run whose pairs need more stops with a budgetError.
type collector[T any] struct {
	mu    sync.Mutex
	ps    []T
	limit int64
	what  string
}

func (c *collector[T]) add(ps []T) error {
	var zero T
	c.mu.Lock()
	defer c.mu.Unlock()
	if need := int64(len(c.ps)+len(ps)) * int64(unsafe.Sizeof(zero)); need > c.limit {
		return budgetError{fmt.Sprintf("%s: more than %d pairs, over what the memory budget leaves for them (%.1f MiB); ask count_only=True, or raise the threshold", c.what, len(c.ps)+len(ps), float64(c.limit)/(1<<20))}
	}
	c.ps = append(c.ps, ps...)
	return nil
}

// join runs allpairs or containment.
func join(ctx context.Context, name string, p *params_, in [][]byte) (outcome, [][]byte, error) {
	r, s, err := collections(in, p)
	if err != nil {
		return outcome{}, nil, err
	}
	var q allpairs.Query
	if name == "containment" {
		d, err := allpairs.ParseRatio(p.MinDegree)
		if err != nil {
			return outcome{}, nil, usagef("min_degree=%q: %v", p.MinDegree, err)
		}
		q.Containment = d
	} else {
		if p.MinOverlap < 0 {
			return outcome{}, nil, usagef("min_overlap=%d is negative", p.MinOverlap)
		}
		q.MinOverlap = p.MinOverlap
	}
	list, err := gpus(p)
	if err != nil {
		return outcome{}, nil, err
	}
	left := max(budget(p.Memory)-memoryOf(r)-memoryOf(s), 1<<20)
	opt := allpairs.Options{Device: p.Device, Technique: p.Technique, Threads: p.Threads, Memory: left, GPUs: list, CountOnly: p.CountOnly}
	plan, err := allpairs.NewPlan(r, s, q, opt)
	return runPlan(ctx, p, plan, plan != nil, err, left, (*allpairs.Plan).Memory, name, sets.SortPairs)
}

// workPlan is what the plans of allpairs, simjoin and pairs share, with
// pairs of type T.
type workPlan[T any] interface {
	Explain(w io.Writer) error
	Count(ctx context.Context) (int64, error)
	Join(ctx context.Context, fn func([]T) error) error
	Technique() string
	Device() string
	Notes() string
}

// runPlan finishes an operation whose planner returned plan (ok: not nil)
// and err: it explains the plan if asked, then counts its pairs or collects
// them, within what the budget left leaves beside the plan's memory, and
// sorts them with sortPairs. what names the operation in errors.
func runPlan[T any, P workPlan[T]](ctx context.Context, p *params_, plan P, ok bool, err error, left int64,
	memory func(P) int64, what string, sortPairs func([]T)) (outcome, [][]byte, error) {
	var o outcome
	if ok && p.Explain {
		var w bytes.Buffer
		plan.Explain(&w)
		o.Explain = w.String()
	}
	if err != nil {
		return o, nil, err
	}
	ran := func(n int64) string {
		return fmt.Sprintf("ran          %s on %s (%d pairs)\n%s", plan.Technique(), plan.Device(), n, plan.Notes())
	}
	if p.CountOnly {
		o.N, err = plan.Count(ctx)
		o.Explain += ran(o.N)
		return o, nil, err
	}
	c := &collector[T]{limit: max(left-memory(plan), 1<<20), what: what}
	if err := plan.Join(ctx, c.add); err != nil {
		return o, nil, err
	}
	sortPairs(c.ps)
	o.N = int64(len(c.ps))
	o.Explain += ran(o.N)
	return o, [][]byte{asBytes(c.ps)}, nil
}

// simJoin runs a set similarity join.
func simJoin(ctx context.Context, p *params_, in [][]byte) (outcome, [][]byte, error) {
	r, s, err := collections(in, p)
	if err != nil {
		return outcome{}, nil, err
	}
	m, err := simjoin.ParseMeasure(p.Measure)
	if err != nil {
		return outcome{}, nil, usagef("measure=: %v", err)
	}
	th, err := simjoin.ParseThreshold(m, p.Threshold)
	if err != nil {
		return outcome{}, nil, usagef("threshold=%q: %v", p.Threshold, err)
	}
	list, err := gpus(p)
	if err != nil {
		return outcome{}, nil, err
	}
	left := max(budget(p.Memory)-memoryOf(r)-memoryOf(s), 1<<20)
	opt := simjoin.Options{Threshold: th, Technique: p.Technique, Device: p.Device, Threads: p.Threads,
		Distinct: p.Distinct, Memory: left, GPUs: list}
	plan, err := simjoin.NewPlan(r, s, opt)
	memory := func(pl *simjoin.Plan) int64 { _, m := pl.Estimate(); return m }
	return runPlan(ctx, p, plan, plan != nil, err, left, memory, "simjoin", simjoin.SortPairs)
}

// frequentPairs mines the frequent pairs of the transactions.
func frequentPairs(ctx context.Context, p *params_, in [][]byte) (outcome, [][]byte, error) {
	tx, err := collection(in, 0, "transactions")
	if err != nil {
		return outcome{}, nil, err
	}
	support, err := pairs.ParseSupport(p.MinSupport, tx.Len())
	if err != nil {
		return outcome{}, nil, usagef("min_support=%q: %v", p.MinSupport, err)
	}
	list, err := gpus(p)
	if err != nil {
		return outcome{}, nil, err
	}
	left := max(budget(p.Memory)-memoryOf(tx), 1<<20)
	plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: support, Technique: p.Technique, Device: p.Device,
		Threads: p.Threads, Memory: left, CountOnly: p.CountOnly, GPUs: list})
	return runPlan(ctx, p, plan, plan != nil, err, left, (*pairs.Plan).Memory, "frequent_pairs", sets.SortPairs)
}
