package plantest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestQuantileGeoMean(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 1: 5} {
		if got := Quantile(xs, q); got != want {
			t.Errorf("Quantile(%v, %g) = %g, want %g", xs, q, got, want)
		}
	}
	if xs[0] != 5 {
		t.Error("Quantile sorted its argument")
	}
	if !math.IsInf(Quantile(nil, 0.5), 1) {
		t.Error("Quantile of nothing is not +Inf")
	}
	if g := GeoMean([]float64{1, 4}); math.Abs(g-2) > 1e-12 {
		t.Errorf("GeoMean(1, 4) = %g", g)
	}
	if GeoMean(nil) != 1 {
		t.Error("GeoMean of nothing is not 1")
	}
}

// TestTime checks the schedule with engines that do not take time: every
// engine runs reps times, the choice too, an engine cut short by its
// deadline is marked and not run again, estimates come from the runs, and
// an error stops the validation with the problem and engine named.
func TestTime(t *testing.T) {
	calls := map[string]int{}
	p := Problem{
		Name: "toy", Choice: "b", Threads: 2,
		Engines: []Engine{{"slow", 9}, {"a", 1}, {"b", 2}},
		Run: func(ctx context.Context, engine string) (float64, error) {
			calls[engine]++
			if _, ok := ctx.Deadline(); ok && engine == "slow" {
				return 0, context.DeadlineExceeded // as if stopped at its deadline
			}
			return map[string]float64{Auto: 2, "a": 1, "b": 2, "slow": 9}[engine], nil
		},
	}
	var out bytes.Buffer
	res, err := Time(&out, p, 3)
	if err != nil {
		t.Fatal(err)
	}
	if calls[Auto] != 3 || calls["a"] != 3 || calls["b"] != 3 || calls["slow"] != 1 {
		t.Errorf("calls %v: want 3 of each, 1 of the engine stopped", calls)
	}
	if res.Auto == nil || len(res.Auto.Walls) != 3 || res.Auto.Estimate != 2 || res.Fastest == nil || res.Fastest.Engine == "slow" {
		t.Errorf("result %+v", res)
	}
	if res.Ratio != res.Auto.Median()/res.Fastest.Median() {
		t.Errorf("ratio %g, want %g", res.Ratio, res.Auto.Median()/res.Fastest.Median())
	}
	for _, want := range []string{"toy", "(b)", "(stopped)", "auto (b) / fastest"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	p.Run = func(ctx context.Context, engine string) (float64, error) {
		if engine == "b" {
			return 0, errors.New("broken")
		}
		return 1, nil
	}
	if _, err := Time(&out, p, 1); err == nil || !strings.Contains(err.Error(), "toy, b: broken") {
		t.Errorf("a failing engine: %v", err)
	}
}

func TestSummarize(t *testing.T) {
	runs := func(name string, walls ...float64) *Runs { return &Runs{Engine: name, Walls: walls} }
	results := []Result{
		{Name: "p1", Choice: "x", Auto: runs(Auto, 0.5, 0.6, 0.7), Fastest: runs("x", 0.5, 0.5, 0.6), Ratio: 1.2, CPURatio: 1.1},
		{Name: "p2", Choice: "y", Auto: runs(Auto, 0.1), Fastest: runs("z", 0.05), Ratio: 2, CPURatio: 1.5},
		{Name: "p3", Choice: "y", Auto: runs(Auto, 0.1)}, // nothing forced ran
	}
	var out bytes.Buffer
	if err := Summarize(&out, results, 0.25); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"p1", "600 (500-700)", "1.200", "p2", "0.25 s: 1 problems, geometric mean 1.200, max 1.200 (by CPU time: 1 problems, geometric mean 1.100, max 1.100)", "every problem: 2 problems, geometric mean 1.549, max 2.000"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "p3") {
		t.Errorf("a problem without a forced run is listed:\n%s", s)
	}
}

func TestChoose(t *testing.T) {
	validation, fit := []string{"a 1", "b", "c"}, []string{"fit x", "fit y"}
	id := func(s string) string { return s }
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"", validation},
		{"fit", fit},
		{"c,fit y,a 1", []string{"a 1", "c", "fit y"}},
		{"a", nil}, // whole names only
	} {
		if got := choose(tc.spec, validation, fit, id); !slices.Equal(got, tc.want) {
			t.Errorf("choose(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}
