// Package pairs is the frequent-pairs workload's engine room: the
// prepared data (supports, ranks, tidlists), the CPU miners (Apriori-style
// triangular counting, Eclat over tidlist intersections, FP-growth
// restricted to pairs, BATMAP, bitmap products), their cost model with its
// calibration probe, and the planner. The public package pairs
// (github.com/xsect/xsect/pairs) is its API.
package pairs

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
)

// Pair is a frequent pair: items I < J (the input's ids) occur together in
// Count transactions. It is the pair type of every xsect workload.
type Pair = sets.Pair

// Options are the options of package pairs, whose Options documents each
// exported field (pairs converts its Options to these in one place); the
// unexported ones are switches for tests.
type Options struct {
	MinSupport int
	Technique  string
	Device     string
	Threads    int
	Memory     int64
	Progress   func(stage string, done, total int64)
	// CountOnly lets engines give Run's fn no pairs (Output.CountOnly).
	CountOnly  bool
	Rows, Cols sets.Range
	GPUs       []int

	// For tests: probe makes an auto plan measure the CPU's costs always;
	// lateHorizontal leaves the horizontal database to be built on first
	// use, as when memory is short.
	probe, lateHorizontal bool
}

// ParseSupport returns the absolute minimum support that s denotes for a
// database of the given number of transactions: an integer count, or a
// fraction of the transactions when below 1 ("0.001", "1e-4", or with a
// percent sign "0.1%"), rounded up, as Borgelt's miners do. The fraction is
// evaluated exactly: "0.0001" of 100000 transactions is 10, not 11.
func ParseSupport(s string, transactions int) (int, error) {
	text := strings.TrimSpace(s)
	percent := strings.HasSuffix(text, "%")
	text = strings.TrimSuffix(text, "%")
	var r big.Rat
	if _, ok := r.SetString(text); !ok {
		return 0, fmt.Errorf("pairs: support %q is not a number", s)
	}
	if percent {
		r.Quo(&r, big.NewRat(100, 1))
	}
	if r.Sign() <= 0 {
		return 0, fmt.Errorf("pairs: support %q must be positive", s)
	}
	one := big.NewRat(1, 1)
	if !percent && r.Cmp(one) >= 0 {
		if !r.IsInt() || !r.Num().IsInt64() || r.Num().Int64() > min(1<<32-1, math.MaxInt) {
			return 0, fmt.Errorf("pairs: absolute support %q must be an integer below 2^32", s)
		}
		return int(r.Num().Int64()), nil
	}
	if r.Cmp(one) > 0 {
		return 0, fmt.Errorf("pairs: support %q is more than all transactions", s)
	}
	// ceil(r · transactions), at least 1.
	r.Mul(&r, new(big.Rat).SetInt64(int64(transactions)))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return max(int(q.Int64()), 1), nil
}

// Plan is a prepared mining run: the data with infrequent items removed,
// every engine's estimate, and the engine chosen.
type Plan struct {
	// Data is the prepared database.
	Data *Data
	// Engine is the engine Run uses.
	Engine Engine
	// Candidates are the estimates of every engine considered, fastest
	// first, those that cannot run last; Err says why one cannot run.
	Candidates []Candidate

	chosen    Candidate // Err says why no engine can run (Engine nil)
	opt       Options
	probeNote string // why the CPU costs were not measured
	notes     engine.Notes
	budget    int64 // the memory budget
	spent     int64 // the memory of the prepared data
}

// Memory is the CPU memory the plan holds and its engine is predicted to
// take at its peak: the prepared data and, for a CPU engine, its
// estimate.
func (p *Plan) Memory() int64 {
	if p.chosen.Err != nil || p.chosen.Device.Kind != engine.CPU {
		return p.spent
	}
	return p.spent + p.chosen.Estimate.Memory
}

// calibrate measures per-unit costs on this machine (a probe of a
// millisecond or two, once per process and number of threads) when that
// could change the choice among cs and is lost in the run's time: two
// candidates, one on the CPU, within probeSpread of the fastest, which
// takes probeWorth or more. It returns the engines to estimate again with
// them: the CPU ones, or nil without a probe.
func (p *Plan) calibrate(cs []Candidate) func(Engine) bool {
	fastest := 0.0
	for _, c := range cs {
		if c.Err == nil && (fastest == 0 || c.Estimate.Seconds < fastest) {
			fastest = c.Estimate.Seconds
		}
	}
	near, cpu := 0, false
	for _, c := range cs {
		if c.Err == nil && c.Estimate.Seconds <= probeSpread*fastest {
			near++
			cpu = cpu || c.Engine.Kind() == engine.CPU
		}
	}
	switch {
	case p.opt.probe:
	case !cpu || near < 2:
		p.probeNote = fmt.Sprintf("no probe: no other engine within %gx", probeSpread)
		return nil
	case fastest < probeWorth:
		p.probeNote = fmt.Sprintf("no probe: the fastest estimate is below %g s", probeWorth)
		return nil
	}
	costs := measure(p.Data.Threads).costs()
	p.Data.costs = &costs
	return func(e Engine) bool { return e.Kind() == engine.CPU }
}

// NewPlan prepares tx (each set a transaction, its elements the items) for
// mining with opt: it counts supports, drops infrequent items, builds the
// tidlists of the frequent ones, and picks the engine. When no engine can
// run, the plan comes back with the error: it can Explain, not Run.
func NewPlan(tx *sets.Collection, opt Options) (*Plan, error) {
	if opt.MinSupport < 1 {
		return nil, fmt.Errorf("pairs: minimum support %d: want at least 1", opt.MinSupport)
	}
	choice, err := engine.Choice{Device: opt.Device, Technique: opt.Technique}.Normalize("pairs", EngineNames())
	if err != nil {
		return nil, err
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	budget := opt.Memory
	if budget <= 0 {
		budget = sysinfo.Memory() / 2
	}
	if opt.Progress != nil {
		opt.Progress("supports", 0, int64(len(tx.Elements)))
	}
	t, err := newTile(opt.Rows, opt.Cols)
	if err != nil {
		return nil, err
	}
	d, err := prepare(tx, opt.MinSupport, threads, budget, !opt.lateHorizontal, t)
	if err != nil {
		return nil, err
	}
	d.GPUs = opt.GPUs
	if opt.Progress != nil {
		opt.Progress("supports", int64(len(tx.Elements)), int64(len(tx.Elements)))
		// Estimating (and probing, for auto) is a stage of its own, so
		// that its time shows (xsect pairs --timings).
		opt.Progress("estimates", 0, 1)
	}
	spent := d.preparedBytes()
	p := &Plan{Data: d, opt: opt, budget: budget, spent: spent}
	d.unitCosts() // set before the engines read it concurrently
	planning := engine.Planning[*Data, Engine]{Workload: "pairs", Choice: choice, Problem: d, Engines: Engines(),
		Threads: threads, Budget: budget, Prepared: spent}
	if choice.Technique == "auto" {
		planning.Again = p.calibrate
	} else {
		p.probeNote = "no probe: the engine was named"
	}
	p.Candidates, p.chosen, err = engine.Choose(planning)
	if err != nil {
		// The plan still explains why each engine cannot run.
		return p, err
	}
	p.Engine = p.chosen.Engine
	return p, nil
}

// Run mines the pairs and calls fn with batches of them, from several
// goroutines at once (fn must be safe for that); a batch is only valid
// during the call. An error from fn stops the run and is returned. Pairs
// come in no particular order.
func (p *Plan) Run(ctx context.Context, fn func([]Pair) error) (int64, error) {
	// A tile off the diagonal keeps only some of the pairs mined: they
	// must be named to be counted.
	filter := p.Data.tile.filters()
	out := &Output{notes: &p.notes, d: p.Data, fn: fn, progress: p.opt.Progress, countOnly: p.opt.CountOnly && !filter, filter: filter}
	// The engine's set-up (tidlists, spans, memory), until it reports a
	// stage of its own.
	out.Progress("run", 0, 1)
	err := p.Engine.Run(ctx, p.Data, out)
	if err == nil {
		err = out.Err()
	}
	return out.count.Load(), err
}

// Collect runs the plan and returns its pairs sorted by I, then J.
func (p *Plan) Collect(ctx context.Context) ([]Pair, error) {
	return engine.CollectPairs(func(fn func([]Pair) error) error {
		_, err := p.Run(ctx, fn)
		return err
	})
}

// Collect returns the frequent pairs of tx sorted by I, then J.
func Collect(ctx context.Context, tx *sets.Collection, opt Options) ([]Pair, error) {
	p, err := NewPlan(tx, opt)
	if err != nil {
		return nil, err
	}
	return p.Collect(ctx)
}

// Explain describes the plan: the data's shape, every engine's estimate,
// and the choice.
func (p *Plan) Explain() string {
	d := p.Data
	var b strings.Builder
	fmt.Fprintf(&b, "input: %d transactions, %d item occurrences, %d distinct items\n", d.Transactions, d.AllOccurrences, d.DistinctItems)
	fmt.Fprintf(&b, "min support: %d transactions (%.4g%%)\n", d.MinSupport, 100*float64(d.MinSupport)/float64(max(d.Transactions, 1)))
	if d.tile != (tile{}) {
		fmt.Fprintf(&b, "tile: %s\n", d.tile)
	}
	fmt.Fprintf(&b, "frequent items: %d, %d occurrences, density %.3g%%, %d pairs of items, %d pair occurrences\n",
		d.Frequent(), d.Occurrences, 100*d.Density(), int64(d.Frequent())*int64(max(d.Frequent()-1, 0))/2, d.PairSteps)
	fmt.Fprintf(&b, "threads: %d\n", d.Threads)
	fmt.Fprintf(&b, "memory budget: %s, %s of it for the prepared data\n", engine.Bytes(p.budget), engine.Bytes(p.spent))
	costs := d.unitCosts().source
	if p.probeNote != "" {
		costs += " (" + p.probeNote + ")"
	}
	fmt.Fprintf(&b, "CPU estimates: %s\n", costs)
	fmt.Fprintf(&b, "engines:\n")
	engine.WriteChoice(&b, p.Candidates, p.chosen)
	return b.String()
}

// Output receives an engine's pairs; its methods are safe for concurrent
// use, except those of each Writer.
type Output struct {
	notes     *engine.Notes
	d         *Data
	fn        func([]Pair) error
	progress  func(stage string, done, total int64)
	count     atomic.Int64
	countOnly bool
	filter    bool // keep only the pairs of the data's tile
	first     engine.FirstError
}

// Err returns the first error of the caller's callback; engines check it
// between chunks of work and stop.
func (o *Output) Err() error { return o.first.Err() }

// Note records a line of the run's account (where its time went), which
// the plan's Notes return.
func (o *Output) Note(format string, args ...any) { o.notes.Add(format, args...) }

// Notes returns what the engine said about its run, once it has run.
func (p *Plan) Notes() string { return p.notes.String() }

// Progress reports progress in a stage of an engine.
func (o *Output) Progress(stage string, done, total int64) {
	if o.progress != nil {
		o.progress(stage, done, total)
	}
}

// CountOnly reports whether the caller wants only the number of pairs
// (Options.CountOnly): an engine may then report them with
// Writer.AddCount instead of Writer.Add.
func (o *Output) CountOnly() bool { return o.countOnly }

// Writer returns a buffer for one goroutine's pairs; Close it at the end.
func (o *Output) Writer() *Writer {
	return &Writer{o: o, items: o.d.Items, buf: make([]Pair, 0, 4096)}
}

// Writer buffers the pairs of one goroutine.
type Writer struct {
	o     *Output
	items []uint32
	buf   []Pair
	n     int64
}

// Add reports the pair of ranks a and b (in either order) with its
// support; it does not check the threshold.
func (w *Writer) Add(a, b uint32, support uint32) {
	w.buf = append(w.buf, w.pair(a, b, support))
	if len(w.buf) == cap(w.buf) {
		w.flush()
	}
}

// pair returns the pair of ranks a and b, as items in increasing order.
func (w *Writer) pair(a, b, support uint32) Pair {
	x, y := w.items[a], w.items[b]
	return Pair{I: min(x, y), J: max(x, y), Count: support}
}

// addRanked is Add for every pair of ps: ranks I and J, support Count.
func (w *Writer) addRanked(ps []allpairs.Pair) {
	for len(ps) > 0 {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		k := len(w.buf)
		part := ps[:min(len(ps), cap(w.buf)-k)]
		dst := w.buf[k : k+len(part)]
		for x, p := range part {
			dst[x] = w.pair(p.I, p.J, p.Count)
		}
		w.buf = w.buf[:k+len(part)]
		ps = ps[len(part):]
	}
}

func (w *Writer) flush() {
	if w.o.filter {
		w.buf = w.o.d.tile.keep(w.buf)
	}
	w.n += int64(len(w.buf))
	w.buf = engine.Send(w.o.fn, w.buf, &w.o.first)
}

// AddCount reports n pairs without naming them; only when the Output is
// CountOnly.
func (w *Writer) AddCount(n int64) { w.n += n }

// Close flushes the writer.
func (w *Writer) Close() {
	w.flush()
	w.o.count.Add(w.n)
	w.n = 0
}
