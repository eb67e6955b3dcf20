package bench

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/sets"
)

// shapes covers both sampling paths, the extremes of every parameter and
// universes that are exactly used up.
var shapes = []Shape{
	{Large: 1, Ratio: 1, Selectivity: 0, Density: 0.5},
	{Large: 1, Ratio: 1, Selectivity: 1, Density: 1},
	{Large: 7, Ratio: 100, Selectivity: 1, Density: 0.01},   // Small rounds up to 1
	{Large: 1000, Ratio: 1, Selectivity: 0, Density: 0.5},   // needs the whole universe
	{Large: 1000, Ratio: 1, Selectivity: 1, Density: 1},     // a == b == universe
	{Large: 1000, Ratio: 3, Selectivity: 0.5, Density: 0.8}, // dense path
	{Large: 10000, Ratio: 1, Selectivity: 0.33, Density: 0.01},
	{Large: 10000, Ratio: 10, Selectivity: 0.01, Density: 0.33},
	{Large: 100000, Ratio: 1000, Selectivity: 0.5, Density: 0.01},
	{Large: 1000, Ratio: 1, Selectivity: 0.5, Density: 1000.0 / (1 << 32)}, // universe 2^32
}

func TestPair(t *testing.T) {
	for _, s := range shapes {
		a, b, err := Pair(s, 1)
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if len(a) != s.Small() || len(b) != s.Large {
			t.Errorf("%v: sizes %d, %d; want %d, %d", s, len(a), len(b), s.Small(), s.Large)
		}
		if !sets.IsStrict(a) || !sets.IsStrict(b) {
			t.Errorf("%v: not strictly increasing", s)
		}
		u := s.Universe()
		if len(a) > 0 && uint64(a[len(a)-1]) >= u || len(b) > 0 && uint64(b[len(b)-1]) >= u {
			t.Errorf("%v: values beyond the universe of %d", s, u)
		}
		in := make(map[uint32]bool, len(a))
		for _, x := range a {
			in[x] = true
		}
		common := 0
		for _, x := range b {
			if in[x] {
				common++
			}
		}
		if common != s.Overlap() {
			t.Errorf("%v: %d common elements, want %d", s, common, s.Overlap())
		}
		a2, b2, _ := Pair(s, 1)
		if !slices.Equal(a, a2) || !slices.Equal(b, b2) {
			t.Errorf("%v: the same seed gave different pairs", s)
		}
	}
}

func TestPairSeedsDiffer(t *testing.T) {
	s := Shape{Large: 1000, Ratio: 1, Selectivity: 0.5, Density: 0.01}
	_, b1, _ := Pair(s, 1)
	_, b2, _ := Pair(s, 2)
	if slices.Equal(b1, b2) {
		t.Error("seeds 1 and 2 gave the same set")
	}
}

// TestPairSpread checks that both sets and their common part spread over
// the whole universe rather than bunching at one end.
func TestPairSpread(t *testing.T) {
	for _, s := range []Shape{
		{Large: 100000, Ratio: 1, Selectivity: 0.33, Density: 0.01},
		{Large: 100000, Ratio: 10, Selectivity: 0.5, Density: 0.33},
	} {
		a, b, _ := Pair(s, 3)
		mean := func(x []uint32) float64 {
			sum := 0.0
			for _, v := range x {
				sum += float64(v)
			}
			return sum / float64(len(x)) / float64(s.Universe())
		}
		common := intersect.Intersect(nil, a, b)
		for name, x := range map[string][]uint32{"a": a, "b": b, "a∩b": common} {
			if m := mean(x); math.Abs(m-0.5) > 0.05 {
				t.Errorf("%v: %s has mean %.3f of the universe, want about 0.5", s, name, m)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Shape{
		{Large: 0, Ratio: 1, Selectivity: 0.5, Density: 0.5},
		{Large: 10, Ratio: 0, Selectivity: 0.5, Density: 0.5},
		{Large: 10, Ratio: 1, Selectivity: -0.1, Density: 0.5},
		{Large: 10, Ratio: 1, Selectivity: 1.1, Density: 0.5},
		{Large: 10, Ratio: 1, Selectivity: math.NaN(), Density: 0.5},
		{Large: 10, Ratio: 1, Selectivity: 0.5, Density: 0},
		{Large: 10, Ratio: 1, Selectivity: 0.5, Density: 1.5},
		{Large: 10, Ratio: 1, Selectivity: 0.5, Density: math.NaN()},
		{Large: 100, Ratio: 1, Selectivity: 0.5, Density: 1e-8}, // universe 10^10 > 2^32
		{Large: 100, Ratio: 1, Selectivity: 0, Density: 0.6},    // 200 values from 167
		{Large: 100, Ratio: 1, Selectivity: 0.99, Density: 1},   // 101 values from 100
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
		if _, _, err := Pair(s, 1); err == nil {
			t.Errorf("%+v: Pair made a pair", s)
		}
	}
}

func TestNames(t *testing.T) {
	s := Shape{Large: 1000000, Ratio: 1000, Selectivity: 0.33, Density: 0.01}
	if got, want := s.String(), "1M:1K sel=0.33 dens=0.01"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := s.BenchName(), "size=1M/ratio=1000/sel=33%/dens=1%"; got != want {
		t.Errorf("BenchName() = %q, want %q", got, want)
	}
	for n, want := range map[int]string{1: "1", 999: "999", 1000: "1K", 1500: "1500", 2000000: "2M", 3e9: "3G"} {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	for sec, want := range map[float64]string{2.5: "2.5s", 0.0135: "13.5ms", 13.519e-6: "13.52µs", 8.125e-9: "8.125ns", 1e-6: "1µs", 0: "0ns"} {
		if got := FormatSeconds(sec); got != want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", sec, got, want)
		}
	}
}

func TestGrid(t *testing.T) {
	g := Grid([]int{1000, 1000000}, []int{1, 1000}, []float64{0.33}, []float64{0.01, 0.33})
	if len(g) != 8 {
		t.Fatalf("%d shapes, want 8", len(g))
	}
	if g[0] != (Shape{Large: 1000, Ratio: 1, Selectivity: 0.33, Density: 0.01}) ||
		g[7] != (Shape{Large: 1000000, Ratio: 1000, Selectivity: 0.33, Density: 0.33}) {
		t.Errorf("grid order: first %+v, last %+v", g[0], g[7])
	}
}

func TestParseCounts(t *testing.T) {
	got, err := ParseCounts("1e3, 1M,10K,2.5m,7,1.5e3")
	if want := []int{1000, 1000000, 10000, 2500000, 7, 1500}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "x", "0", "1.5", "-1", "1e10", "1K,", "M", "NaN", "Inf"} {
		if got, err := ParseCounts(bad); err == nil {
			t.Errorf("ParseCounts(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseFractions(t *testing.T) {
	got, err := ParseFractions("0, 0.33,1")
	if want := []float64{0, 0.33, 1}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "x", "-0.1", "1.01", "NaN", "0.5,"} {
		if got, err := ParseFractions(bad); err == nil {
			t.Errorf("ParseFractions(%q) = %v, want an error", bad, got)
		}
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	d := Measure(func() { calls++; time.Sleep(100 * time.Microsecond) }, 3, 2*time.Millisecond)
	if d < 100e-6 {
		t.Errorf("median %v is shorter than the sleep in the call", d)
	}
	// Calibration reaches a loop of n >= 2ms/call-time calls, then 3 more.
	if calls < 4 {
		t.Errorf("f called %d times", calls)
	}
}

func TestRun(t *testing.T) {
	cfg := Config{
		Shapes:  []Shape{{Large: 2000, Ratio: 1, Selectivity: 0.33, Density: 0.01}, {Large: 5000, Ratio: 100, Selectivity: 1, Density: 0.33}},
		Methods: append([]intersect.Method{{Name: "auto", Count: intersect.Count, Intersect: intersect.Intersect}}, intersect.Methods()...),
		Repeat:  2,
		MinTime: time.Millisecond,
	}
	for _, op := range []Op{Count, Intersect} {
		cfg.Op = op
		rs, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(cfg.Shapes)*len(cfg.Methods) {
			t.Fatalf("%d results, want %d", len(rs), len(cfg.Shapes)*len(cfg.Methods))
		}
		for i := 0; i < len(rs); i += len(cfg.Methods) {
			best := math.Inf(1)
			for _, r := range rs[i : i+len(cfg.Methods)] {
				if r.PerOp <= 0 || r.Rate <= 0 || r.Ratio < 1 {
					t.Errorf("%s %v %s: %+v", op, r.Shape, r.Method, r)
				}
				best = min(best, r.Ratio)
			}
			if best != 1 {
				t.Errorf("%s %v: best ratio %v, want 1", op, rs[i].Shape, best)
			}
		}
		var buf bytes.Buffer
		if err := WriteTable(&buf, rs); err != nil {
			t.Fatal(err)
		}
		if out := buf.String(); !strings.HasPrefix(out, "shape") || strings.Count(out, "\n") != len(rs)+1 ||
			!strings.Contains(out, "2K:2K sel=0.33 dens=0.01  merge") {
			t.Errorf("table:\n%s", out)
		}
	}
}

// TestRunChecks checks that Run refuses a method that answers wrongly
// instead of timing it.
func TestRunChecks(t *testing.T) {
	s := Shape{Large: 100, Ratio: 1, Selectivity: 0.5, Density: 0.5}
	wrong := []intersect.Method{
		{Name: "off-by-one", Count: func(a, b []uint32) int { return intersect.Count(a, b) + 1 }},
		{Name: "drops-last", Intersect: func(dst, a, b []uint32) []uint32 {
			dst = intersect.Intersect(dst, a, b)
			return dst[:len(dst)-1]
		}},
		{Name: "unsorted", Intersect: func(dst, a, b []uint32) []uint32 {
			dst = intersect.Intersect(dst, a, b)
			slices.Reverse(dst)
			return dst
		}},
		{Name: "foreign", Intersect: func(dst, a, b []uint32) []uint32 {
			dst = intersect.Intersect(dst, a, b)
			dst[0] = 1<<32 - 1
			slices.Sort(dst)
			return dst
		}},
	}
	for i, m := range wrong {
		op := Intersect
		if i == 0 {
			op = Count
		}
		if _, err := Run(Config{Shapes: []Shape{s}, Methods: []intersect.Method{m}, Op: op, MinTime: time.Microsecond}); err == nil {
			t.Errorf("method %s: no error", m.Name)
		}
	}
	if _, err := Run(Config{Shapes: []Shape{s}}); err == nil {
		t.Error("no methods: no error")
	}
}
