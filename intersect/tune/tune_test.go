package tune

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/intersect"
)

// grid returns timings at size for ratios, each method's seconds given by
// its model at the ratio (a model returning 0 leaves the method out).
func grid(size int, ratios []int, models map[string]func(r int) float64) []Timing {
	var ts []Timing
	for _, r := range ratios {
		for m, f := range models {
			if s := f(r); s > 0 {
				ts = append(ts, Timing{size, size / r, m, s})
			}
		}
	}
	return ts
}

// winsAt returns a model that is 1 where r is in [lo, hi] and 2 elsewhere.
func winsAt(lo, hi int) func(int) float64 {
	return func(r int) float64 {
		if r >= lo && r <= hi {
			return 1
		}
		return 2
	}
}

func TestFitSteps(t *testing.T) {
	const size = 1 << 24
	ratios := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384}
	ts := grid(size, ratios, map[string]func(int) float64{
		"branchless":   winsAt(1, 8),
		"lanes-avx512": winsAt(16, 32),
		ladder:         winsAt(64, 1024),
		search:         winsAt(4096, 1<<30),
	})
	// The tiny smaller sets: galloping wins up to 8 values, not at 12,
	// and again at 16 (which does not count).
	for _, n := range tinySizes {
		g := 1.0
		if n == 12 || n > 16 {
			g = 3
		}
		ts = append(ts, Timing{size, n, gallop, g}, Timing{size, n, search, 2}, Timing{size, n, ladder, 2.5})
	}
	p := Fit(ts)
	want := intersect.ProfileTier{
		Values: size,
		Steps: []intersect.ProfileStep{
			{UpTo: 11, Method: "branchless"},   // between 8 and 16
			{UpTo: 45, Method: "lanes-avx512"}, // between 32 and 64
			{UpTo: 0, Method: ladder},
		},
		// search-simd from 1:4096 (4096 values), the ladder at 1:1024
		// (16384): 8192 values between, 128 passes.
		SearchPasses: 128,
		GallopUpTo:   8,
	}
	if len(p.Tiers) != 1 || !reflect.DeepEqual(p.Tiers[0], want) {
		t.Fatalf("Fit = %+v\nwant tier %+v", p.Tiers, want)
	}
	if p.Source != "measured" || p.CPU != intersect.CPU() {
		t.Errorf("Fit: source %q, CPU %q", p.Source, p.CPU)
	}
}

// TestFitNoise checks that a method a few percent faster at one ratio alone
// is not switched to, and one far faster is.
func TestFitNoise(t *testing.T) {
	const size = 1 << 20
	ratios := []int{1, 4, 16, 64, 256, 1024}
	ts := grid(size, ratios, map[string]func(int) float64{
		"branchless": winsAt(1, 4),
		// 2% faster than the ladder at 1:256 only: within the tie.
		"skip-avx512": func(r int) float64 {
			if r == 256 {
				return 0.98
			}
			return 3
		},
		// 4% faster at 1:64 alone: less than switching there and back
		// costs.
		"lanes-avx512": func(r int) float64 {
			if r == 64 {
				return 0.96
			}
			return 3
		},
		ladder: winsAt(16, 1<<30),
		search: func(int) float64 { return 5 },
	})
	p := Fit(ts)
	want := []intersect.ProfileStep{{UpTo: 8, Method: "branchless"}, {UpTo: 0, Method: ladder}}
	if len(p.Tiers) != 1 || !reflect.DeepEqual(p.Tiers[0].Steps, want) {
		t.Fatalf("Fit = %+v, want steps %+v", p.Tiers, want)
	}
	// The ladder last: its time over a pass of search-simd at the highest
	// ratio (1024 values, 16 passes): 1 / (5/16).
	if got := p.Tiers[0].SearchPasses; got != 3.2 {
		t.Errorf("SearchPasses = %g, want 3.2", got)
	}
	// 30% faster at 1:64: switched to and back.
	for i := range ts {
		if ts[i].Method == "lanes-avx512" && ts[i].Small == size/64 {
			ts[i].Seconds = 0.7
		}
	}
	p = Fit(ts)
	want = []intersect.ProfileStep{{UpTo: 8, Method: "branchless"}, {UpTo: 32, Method: ladder}, {UpTo: 128, Method: "lanes-avx512"}, {UpTo: 0, Method: ladder}}
	if len(p.Tiers) != 1 || !reflect.DeepEqual(p.Tiers[0].Steps, want) {
		t.Fatalf("Fit = %+v, want steps %+v", p.Tiers, want)
	}
}

// TestFitOneMethod checks a tier where one block method is fastest at
// every ratio: it serves every ratio timed, the next fastest beyond.
func TestFitOneMethod(t *testing.T) {
	ts := grid(1<<16, []int{1, 4, 16}, map[string]func(int) float64{
		"branchless": func(int) float64 { return 1 },
		gallop:       func(int) float64 { return 2 },
	})
	p := Fit(ts)
	want := []intersect.ProfileStep{{UpTo: 16, Method: "branchless"}, {UpTo: 0, Method: gallop}}
	if len(p.Tiers) != 1 || !reflect.DeepEqual(p.Tiers[0].Steps, want) {
		t.Fatalf("Fit = %+v, want steps %+v", p.Tiers, want)
	}
	if err := intersect.CheckProfile(p); err != nil {
		t.Errorf("CheckProfile: %v", err)
	}
	// No block method at the lowest ratio: no tier.
	if p := Fit(grid(1<<16, []int{4, 16}, map[string]func(int) float64{gallop: winsAt(1, 100)})); len(p.Tiers) != 0 {
		t.Errorf("Fit without a block method = %+v, want no tier", p)
	}
}

func TestJudge(t *testing.T) {
	ts := []Timing{
		{100, 10, "branchless", 1}, {100, 10, gallop, 2}, {100, 10, "auto a", 1.04}, {100, 10, "auto b", 2},
		{100, 1, "branchless", 4}, {100, 1, gallop, 1}, {100, 1, "auto a", 1.08}, {100, 1, "auto b", 1},
	}
	js := Judge(ts, []string{"a", "b"})
	if len(js) != 2 {
		t.Fatalf("Judge = %+v", js)
	}
	a, b := js[0], js[1]
	if a.Pairs != 2 || a.Within5 != 1 || a.Within10 != 2 || math.Abs(a.Max-1.08) > 1e-12 || a.Worst.Small != 1 {
		t.Errorf("judgement a = %+v", a)
	}
	if math.Abs(a.GeoMean-math.Sqrt(1.04*1.08)) > 1e-12 {
		t.Errorf("a's geometric mean %g, want %g", a.GeoMean, math.Sqrt(1.04*1.08))
	}
	if b.Pairs != 2 || b.Within5 != 1 || b.Max != 2 || math.Abs(b.GeoMean-math.Sqrt2) > 1e-12 {
		t.Errorf("judgement b = %+v", b)
	}
}

func TestDefaultSizes(t *testing.T) {
	s := DefaultSizes()
	if len(s) != 7 || !slices.IsSorted(s) {
		t.Fatalf("DefaultSizes = %v", s)
	}
	for _, c := range [][2]int{{524288, 524000}, {1048576, 1050000}, {999, 999}, {1500, 1500}, {12345, 12300}, {262144, 262000}} {
		if got := roundTo3(c[0]); got != c[1] {
			t.Errorf("roundTo3(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

func TestCheckSizes(t *testing.T) {
	if got, want := CheckSizes([]int{100, 400, 1600}), []int{200, 800, 2400}; !slices.Equal(got, want) {
		t.Errorf("CheckSizes = %v, want %v", got, want)
	}
}

// TestMeasureFitCheck runs the whole tuning on small sizes: every method's
// answer checked, a profile this CPU can follow, and a judgement of it and
// of the built-in one on other pairs.
func TestMeasureFitCheck(t *testing.T) {
	before := intersect.ActiveProfile()
	o := Options{Sizes: []int{4096, 16384}, Ratios: []int{1, 4, 16, 64}, Rounds: 1, MinTime: time.Millisecond}
	calls := 0
	o.Progress = func(done, total int) {
		calls++
		if done != calls || done > total {
			t.Fatalf("progress %d of %d at call %d", done, total, calls)
		}
	}
	ts, err := Measure(o)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || len(ts) == 0 {
		t.Fatalf("Measure: %d timings, %d progress calls", len(ts), calls)
	}
	p := Fit(ts)
	if err := intersect.CheckProfile(p); err != nil {
		t.Fatalf("Fit gave a profile this CPU cannot follow: %v\n%+v", err, p)
	}
	if got := Sizes(p); !slices.Equal(got, o.Sizes) {
		t.Errorf("tiers at %v, want %v", got, o.Sizes)
	}
	o.Sizes, o.Progress = CheckSizes(o.Sizes), nil
	_, js, err := Check(o, []string{"measured", "built-in"}, []intersect.Profile{p, before})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.Pairs == 0 || j.GeoMean <= 0 {
			t.Errorf("judgement %+v: nothing judged", j)
		}
	}
	if after := intersect.ActiveProfile(); !reflect.DeepEqual(after, before) {
		t.Errorf("the dispatch after Check is %+v, want the one before, %+v", after, before)
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "profile.json")
	p := intersect.ActiveProfile()
	p.Source = "measured"
	if err := Save(path, p); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("Load = %+v, %v; want %+v", got, err, p)
	}
	other := p
	other.CPU = "a CPU of another kind"
	if err := Save(path, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrOtherCPU) {
		t.Errorf("Load of another CPU's profile: %v, want ErrOtherCPU", err)
	}
	bad := p
	bad.Tiers = nil
	if err := Save(path, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, intersect.ErrProfile) {
		t.Errorf("Load of a profile without tiers: %v, want ErrProfile", err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, intersect.ErrProfile) {
		t.Errorf("Load of a broken file: %v, want ErrProfile", err)
	}
	if _, err := Load(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of no file: %v, want ErrNotExist", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("Save left %d files beside the profile", len(entries)-1)
	}
}

// TestSmallSet checks the generated pairs: sizes, the overlap, order.
func TestSmallSet(t *testing.T) {
	r := newRand(1)
	b := largeSet(r, 10000, 0.01)
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Fatalf("largeSet not increasing at %d", i)
		}
	}
	if mean := float64(b[len(b)-1]) / float64(len(b)); mean < 80 || mean > 120 {
		t.Errorf("largeSet's mean gap %g, want about 100", mean)
	}
	a := smallSet(r, b, 1000, 0.3)
	if len(a) != 1000 || mergeCount(a, b) != 300 {
		t.Errorf("smallSet: %d values, %d shared; want 1000 and 300", len(a), mergeCount(a, b))
	}
	for i := 1; i < len(a); i++ {
		if a[i] <= a[i-1] {
			t.Fatalf("smallSet not increasing at %d", i)
		}
	}
}

// TestUseSaved checks which profile UseSaved installs, and what it says:
// none saved, one saved, Env off, Env naming no file, a broken file and
// another CPU's at the default path.
func TestUseSaved(t *testing.T) {
	t.Cleanup(func() { intersect.UseProfile(BuiltIn()) })
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv(Env, "")
	def, err := DefaultPath()
	if err != nil {
		t.Skipf("no cache folder: %v", err)
	}
	check := func(name, wantSource string, wantErr, measured bool) {
		t.Helper()
		source, err := UseSaved()
		if !strings.Contains(source, wantSource) || (err != nil) != wantErr {
			t.Errorf("%s: UseSaved = %q, %v; want %q and an error %v", name, source, err, wantSource, wantErr)
		}
		if got := intersect.ActiveProfile().Source == "measured"; got != measured {
			t.Errorf("%s: a measured profile in use: %v, want %v", name, got, measured)
		}
	}
	check("nothing saved", "no profile at "+def, false, false)
	p := BuiltIn()
	p.Source = "measured"
	if err := Save(def, p); err != nil {
		t.Fatal(err)
	}
	check("saved", "measured on this CPU ("+def+")", false, true)
	t.Setenv(Env, "off")
	check("off", "built-in ("+Env+"=off)", false, false)
	t.Setenv(Env, filepath.Join(cache, "none.json"))
	check("a named file missing", "built-in", true, false)
	t.Setenv(Env, "")
	other := p
	other.CPU = "another CPU"
	if err := Save(def, other); err != nil {
		t.Fatal(err)
	}
	check("another CPU's", "was measured on another CPU", false, false)
	if err := os.WriteFile(def, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("broken", "is broken", true, false)
}
