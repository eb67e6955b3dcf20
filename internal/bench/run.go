package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/intersect"
)

// Op is the operation that Run times.
type Op int

const (
	// Count times Method.Count.
	Count Op = iota
	// Intersect times Method.Intersect into a reused buffer.
	Intersect
)

// String returns "count" or "intersect".
func (op Op) String() string {
	if op == Intersect {
		return "intersect"
	}
	return "count"
}

// Config says what Run measures.
type Config struct {
	Shapes  []Shape
	Methods []intersect.Method
	Op      Op
	// Repeat is how many timed loops to take the median of (at least 1).
	Repeat int
	// MinTime is how long each timed loop runs at least; 50ms if zero.
	MinTime time.Duration
	// Seed seeds the pair generator.
	Seed uint64
}

// Result is the time of one method on one shape.
type Result struct {
	Shape  Shape
	Method string
	// PerOp is the median time of one operation, in seconds.
	PerOp float64
	// Rate is input elements (both sets) per second, in billions.
	Rate float64
	// Ratio is PerOp over the shortest PerOp on this shape: 1 for the
	// fastest method.
	Ratio float64
}

// Run generates each shape's pair, checks every method's answer on it, and
// times each method. It returns one result per shape and method, in order.
func Run(cfg Config) ([]Result, error) {
	if len(cfg.Methods) == 0 {
		return nil, fmt.Errorf("bench: no methods to time")
	}
	minTime := cfg.MinTime
	if minTime <= 0 {
		minTime = 50 * time.Millisecond
	}
	var out []Result
	for _, s := range cfg.Shapes {
		a, b, err := Pair(s, cfg.Seed)
		if err != nil {
			return nil, err
		}
		first := len(out)
		for _, m := range cfg.Methods {
			f, err := check(m, cfg.Op, s, a, b)
			if err != nil {
				return nil, err
			}
			d := Measure(f, cfg.Repeat, minTime)
			out = append(out, Result{Shape: s, Method: m.Name, PerOp: d,
				Rate: float64(s.Elements()) / d / 1e9})
		}
		best := slices.MinFunc(out[first:], func(x, y Result) int { return cmp.Compare(x.PerOp, y.PerOp) }).PerOp
		for i := first; i < len(out); i++ {
			out[i].Ratio = out[i].PerOp / best
		}
	}
	return out, nil
}

// sink keeps the results of timed calls alive.
var sink int

// check runs m once on a and b, compares its answer with what the shape
// says it must be, and returns the call to time.
func check(m intersect.Method, op Op, s Shape, a, b []uint32) (func(), error) {
	if op == Count {
		if got := m.Count(a, b); got != s.Overlap() {
			return nil, fmt.Errorf("bench: method %s counts %d on %v, want %d", m.Name, got, s, s.Overlap())
		}
		return func() { sink += m.Count(a, b) }, nil
	}
	buf := m.Intersect(make([]uint32, 0, s.Overlap()), a, b)
	if len(buf) != s.Overlap() || !subset(buf, a) || !subset(buf, b) {
		return nil, fmt.Errorf("bench: method %s returns a wrong intersection on %v (%d elements, want %d)",
			m.Name, s, len(buf), s.Overlap())
	}
	return func() {
		buf = m.Intersect(buf[:0], a, b)
		sink += len(buf)
	}, nil
}

// subset reports whether x is strictly increasing and every element of x
// is in the strictly increasing s.
func subset(x, s []uint32) bool {
	j := 0
	for i, v := range x {
		if i > 0 && v <= x[i-1] {
			return false
		}
		for j < len(s) && s[j] < v {
			j++
		}
		if j == len(s) || s[j] != v {
			return false
		}
	}
	return true
}

// Measure returns the median time of one call of f, in seconds. It first calls f in
// loops of growing length until a loop takes at least minTime (which also
// warms caches and branch predictors), then times repeat loops of that
// length (at least 1).
func Measure(f func(), repeat int, minTime time.Duration) float64 {
	loop := func(n int) time.Duration {
		start := time.Now()
		for range n {
			f()
		}
		return time.Since(start)
	}
	n := 1
	for {
		d := loop(n)
		if d >= minTime {
			break
		}
		// Aim 20% past minTime, growing at least 2x and at most 100x.
		next := int(float64(n) * 1.2 * float64(minTime) / float64(max(d, 1)))
		n = min(max(next, 2*n), 100*n)
	}
	times := make([]float64, max(repeat, 1))
	for i := range times {
		times[i] = loop(n).Seconds() / float64(n)
	}
	slices.Sort(times)
	return times[len(times)/2]
}

// WriteTable writes results as an aligned table: shape, method, time per
// operation, G input elements/s, and time relative to the fastest method on
// the same shape.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shape\tmethod\ttime/op\tGelem/s\tvs best")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.2fx\n", r.Shape, r.Method, FormatSeconds(r.PerOp), r.Rate, r.Ratio)
	}
	return tw.Flush()
}

// FormatSeconds writes a time in seconds with four significant digits and
// the unit that suits it: "13.52µs", "8.125ns".
func FormatSeconds(sec float64) string {
	for _, u := range []struct {
		name  string
		scale float64
	}{{"s", 1}, {"ms", 1e-3}, {"µs", 1e-6}} {
		if sec >= u.scale {
			return strconv.FormatFloat(sec/u.scale, 'g', 4, 64) + u.name
		}
	}
	return strconv.FormatFloat(sec*1e9, 'g', 4, 64) + "ns"
}
