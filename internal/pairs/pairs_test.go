package pairs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// reference counts every pair of every transaction in a map.
func reference(tx *sets.Collection, minSupport int) []Pair {
	count := map[[2]uint32]uint32{}
	for t := range tx.Len() {
		s := tx.Set(t)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				count[[2]uint32{s[i], s[j]}]++
			}
		}
	}
	out := []Pair{}
	for k, c := range count {
		if int(c) >= minSupport {
			out = append(out, Pair{I: k[0], J: k[1], Count: c})
		}
	}
	sets.SortPairs(out)
	return out
}

type dataset struct {
	name    string
	tx      *sets.Collection
	support []int
}

func datasets(t *testing.T) []dataset {
	r := rand.New(rand.NewPCG(11, 12))
	var out []dataset
	add := func(name string, supports []int, ss ...[]uint32) {
		slices.Sort(supports)
		out = append(out, dataset{name, sets.FromSets(ss...), slices.Compact(supports)})
	}
	add("empty", []int{1})
	add("one-empty-transaction", []int{1}, nil)
	add("single-transaction", []int{1, 2}, []uint32{1, 5, 9, 200, math.MaxUint32})
	add("singletons", []int{1}, []uint32{1}, []uint32{2}, []uint32{1})
	all := []uint32{0, 3, 4, 7, 100}
	add("items-in-every-transaction", []int{1, 4, 5, 6}, all, all, all, all, all)
	add("huge-ids", []int{1, 2}, []uint32{math.MaxUint32 - 2, math.MaxUint32}, []uint32{0, math.MaxUint32 - 2, math.MaxUint32}, []uint32{1 << 31, math.MaxUint32})
	for _, tc := range []struct {
		m, n int
		p    float64
	}{{200, 30, 0.3}, {1000, 300, 0.02}, {50, 2000, 0.05}, {3000, 60, 0.6}} {
		var ss [][]uint32
		for range tc.m {
			var s []uint32
			for x := range tc.n {
				if r.Float64() < tc.p {
					s = append(s, uint32(x*7+3))
				}
			}
			ss = append(ss, s)
		}
		exp := tc.p * tc.p * float64(tc.m)
		add(fmt.Sprintf("bernoulli-m%d-n%d-p%v", tc.m, tc.n, tc.p), []int{1, 2, max(int(exp), 1), max(int(exp*1.5), 1), tc.m + 1}, ss...)
	}
	// Skewed: Zipf-distributed items, as in real baskets.
	z := rand.NewZipf(r, 1.3, 2, 5000)
	var ss [][]uint32
	for range 3000 {
		var s []uint32
		for range 1 + r.IntN(20) {
			s = append(s, uint32(z.Uint64()))
		}
		ss = append(ss, s)
	}
	add("zipf", []int{1, 3, 10, 50}, ss...)
	return out
}

// engineCases are every engine, plus BATMAP with forced insertion
// failures.
func engineCases() []struct {
	name, engine string
	cfg          batmap.Config
} {
	var cs []struct {
		name, engine string
		cfg          batmap.Config
	}
	for _, n := range EngineNames() {
		cs = append(cs, struct {
			name, engine string
			cfg          batmap.Config
		}{n, n, batmap.Config{}})
	}
	for _, cfg := range []batmap.Config{{MaxLoop: 1, Load: 0.7}, {MaxLoop: 1, Load: 1, EntryBits: 32}, {EntryBits: 16}} {
		cs = append(cs, struct {
			name, engine string
			cfg          batmap.Config
		}{fmt.Sprintf("batmap-bits%d-maxloop%d-load%v", cfg.EntryBits, cfg.MaxLoop, cfg.Load), "batmap", cfg})
	}
	return cs
}

func run(t *testing.T, tx *sets.Collection, engine string, cfg batmap.Config, support, threads int) []Pair {
	t.Helper()
	return runWith(t, tx, engine, cfg, support, threads, Options{})
}

// runWith is run with the test-only options of extra.
func runWith(t *testing.T, tx *sets.Collection, engine string, cfg batmap.Config, support, threads int, extra Options) []Pair {
	t.Helper()
	opt := extra
	opt.MinSupport, opt.Technique, opt.Device, opt.Threads = support, engine, "cpu", threads
	p, err := NewPlan(tx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if engine == "batmap" {
		p.Engine = batmapEngine{cfg: cfg}
	}
	got, err := p.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func comparePairs(t *testing.T, got, want []Pair) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d pairs, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("pair %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestEnginesExact runs every engine on every data set at every support,
// on 1 and 3 threads (3 only with -short), and once more with the
// horizontal database built on first use.
func TestEnginesExact(t *testing.T) {
	threadCounts := []int{1, 3}
	if testing.Short() {
		threadCounts = threadCounts[1:]
	}
	for _, ds := range datasets(t) {
		for _, s := range ds.support {
			want := reference(ds.tx, s)
			for _, ec := range engineCases() {
				t.Run(fmt.Sprintf("%s/s=%d/%s", ds.name, s, ec.name), func(t *testing.T) {
					for _, threads := range threadCounts {
						comparePairs(t, run(t, ds.tx, ec.engine, ec.cfg, s, threads), want)
					}
					// The horizontal database built on first use.
					comparePairs(t, runWith(t, ds.tx, ec.engine, ec.cfg, s, 3, Options{lateHorizontal: true}), want)
				})
			}
		}
	}
}

func TestAuto(t *testing.T) {
	for _, ds := range datasets(t) {
		s := ds.support[0]
		p, err := NewPlan(ds.tx, Options{MinSupport: s})
		if err != nil {
			t.Fatal(err)
		}
		if p.Explain() == "" || p.Engine == nil {
			t.Fatal("empty plan")
		}
		got, err := Collect(context.Background(), ds.tx, Options{MinSupport: s})
		if err != nil {
			t.Fatal(err)
		}
		comparePairs(t, got, reference(ds.tx, s))
	}
}

func TestParseSupport(t *testing.T) {
	for _, tc := range []struct {
		s    string
		m    int
		want int
	}{
		{"9", 100, 9}, {"1", 5, 1}, {"0.0001", 88162, 9}, {"0.01%", 88162, 9}, {"0.0001", 100000, 10},
		{"0.01%", 100000, 10}, {"1e-4", 100000, 10}, {"0.001", 100000, 100}, {"0.1%", 100000, 100},
		{"0.003", 12500, 38}, {"0.5", 3, 2}, {"0.5", 0, 1}, {"100%", 7, 7}, {"2147483647", 1, 2147483647},
	} {
		got, err := ParseSupport(tc.s, tc.m)
		if err != nil || got != tc.want {
			t.Errorf("ParseSupport(%q, %d) = %d, %v; want %d", tc.s, tc.m, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x", "0", "-1", "1.5", "4294967296", "101%", "0%", "1/0"} {
		if _, err := ParseSupport(bad, 100); err == nil {
			t.Errorf("ParseSupport(%q) accepted", bad)
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2})
	for _, opt := range []Options{{MinSupport: 0}, {MinSupport: 1, Technique: "nope"}, {MinSupport: 1, Device: "tpu"}} {
		if _, err := NewPlan(tx, opt); err == nil {
			t.Errorf("NewPlan accepted %+v", opt)
		}
	}
	// No GPU engine is registered: asking for the GPU says why.
	if _, err := NewPlan(tx, Options{MinSupport: 1, Device: "gpu"}); !errors.Is(err, ErrCannotRun) {
		t.Errorf("device gpu: %v, want ErrCannotRun", err)
	}
	// A budget too small for the triangle rules apriori out.
	var ss [][]uint32
	for i := range 100 {
		ss = append(ss, []uint32{uint32(i), uint32(i + 1), uint32(i + 2)})
	}
	_, err := NewPlan(sets.FromSets(ss...), Options{MinSupport: 1, Technique: "apriori", Memory: 100})
	if !errors.Is(err, ErrCannotRun) {
		t.Errorf("tiny memory budget: %v, want ErrCannotRun", err)
	}
}

func TestCallbackError(t *testing.T) {
	var ss [][]uint32
	for range 100 {
		ss = append(ss, []uint32{1, 2, 3, 4})
	}
	stop := errors.New("stop")
	for _, e := range EngineNames() {
		p, err := NewPlan(sets.FromSets(ss...), Options{MinSupport: 1, Technique: e})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), func([]Pair) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("%s: Run returned %v, want the callback's error", e, err)
		}
	}
}

// fimi returns a FIMI file of the shared data (skipping t without them),
// failing if it is missing.
func fimi(t *testing.T, name string) *sets.Collection {
	t.Helper()
	c, err := setio.Load(settest.SharedData(t, "fimi", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFIMIOracle checks the pair counts that Borgelt's apriori reports on
// this machine (docs/BATMAP.md), for every engine (with -short, on retail
// only and without eclat, the slowest there).
func TestFIMIOracle(t *testing.T) {
	cases := []struct {
		file    string
		support string
		pairs   int
	}{
		{"retail.dat", "0.01%", 67992},
		{"T10I4D100K.dat", "0.01%", 110793},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, tc := range cases {
		tx := fimi(t, tc.file)
		s, err := ParseSupport(tc.support, tx.Len())
		if err != nil {
			t.Fatal(err)
		}
		var first []Pair
		for _, e := range EngineNames() {
			if testing.Short() && e == "eclat" {
				continue
			}
			got := run(t, tx, e, batmap.Config{}, s, 0)
			if len(got) != tc.pairs {
				t.Errorf("%s at %s with %s: %d pairs, Borgelt's apriori finds %d", tc.file, tc.support, e, len(got), tc.pairs)
			}
			if first == nil {
				first = got
			} else {
				comparePairs(t, got, first)
			}
		}
	}
}

// TestFIMIAgree runs every engine on the smaller FIMI files against the
// reference.
func TestFIMIAgree(t *testing.T) {
	for _, tc := range []struct {
		file    string
		support string
	}{
		{"chess.dat", "0.5"}, {"mushroom.dat", "0.05"}, {"BMS1.dat", "0.001"}, {"accidents_head10k.dat", "0.3"},
		{"kosarak_head36682.dat", "0.001"}, {"BMS2.dat", "0.001"},
	} {
		tx := fimi(t, tc.file)
		s, err := ParseSupport(tc.support, tx.Len())
		if err != nil {
			t.Fatal(err)
		}
		want := reference(tx, s)
		for _, e := range EngineNames() {
			t.Run(tc.file+"/"+e, func(t *testing.T) {
				comparePairs(t, run(t, tx, e, batmap.Config{}, s, 0), want)
			})
		}
	}
}

// TestProbe checks the probe's figures, that the reference machine's
// figures give the reference costs, that a probe is run once per number
// of threads, and that plans with measured costs mine the same pairs.
func TestProbe(t *testing.T) {
	p := measure(3)
	for name, v := range map[string]float64{"increment": p.increment, "word": p.word, "element": p.element} {
		if !(v > 0 && v < 1e-6) {
			t.Errorf("probe: %s costs %v s, implausible", name, v)
		}
	}
	if p.threads != min(3, runtime.GOMAXPROCS(0)) || p.elapsed <= 0 || measure(3) != p {
		t.Errorf("probe for 3 threads: %+v, not cached", p)
	}
	ref := probeReference
	c := ref.costs()
	r := referenceCosts
	if math.Abs(c.aprioriIncrement/r.aprioriIncrement-1) > 1e-9 || math.Abs(c.batmapWord/r.batmapWord-1) > 1e-9 ||
		math.Abs(c.eclatElement/r.eclatElement-1) > 1e-9 || math.Abs(c.fpStep/r.fpStep-1) > 1e-9 {
		t.Errorf("the reference probe gives %+v, want the reference costs %+v", c, r)
	}
	slow := ref
	slow.word *= 3
	if c := slow.costs(); math.Abs(c.batmapWord/r.batmapWord-3) > 1e-9 || c.aprioriIncrement != r.aprioriIncrement {
		t.Errorf("a kernel 3 times slower gives %+v", c)
	}
	for _, ds := range datasets(t) {
		s := ds.support[len(ds.support)/2]
		p, err := NewPlan(ds.tx, Options{MinSupport: s, Threads: 2, probe: true})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Explain(), "measured by a") {
			t.Fatalf("%s: the plan does not say it probed:\n%s", ds.name, p.Explain())
		}
		got, err := Collect(context.Background(), ds.tx, Options{MinSupport: s, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		comparePairs(t, got, reference(ds.tx, s))
	}
}

// TestProbeWhen checks that small or clear-cut auto plans do not probe.
func TestProbeWhen(t *testing.T) {
	tx, err := synth.GenerateBernoulli(100, 0.05, 1e4, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(tx, Options{MinSupport: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e := p.Explain(); !strings.Contains(e, "no probe") || !strings.Contains(e, "Zen 5 reference") {
		t.Errorf("a small plan probed:\n%s", e)
	}
}

// TestAprioriWide checks aprioriSmall with shares of more than 65535
// transactions, whose 16-bit counters are added into 32-bit ones.
func TestAprioriWide(t *testing.T) {
	// About 139,000 transactions; pairs in 81% of them, past 2^16.
	tx, err := synth.GenerateBernoulli(8, 0.9, 1000000, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{1, 1 << 16, 112000} {
		want := reference(tx, s)
		for _, threads := range []int{1, 2} {
			comparePairs(t, run(t, tx, "apriori", batmap.Config{}, s, threads), want)
		}
	}
}

// TestAddRanked checks that a writer given a batch of ranked pairs, larger
// than its buffer, reports what Add reports pair by pair.
func TestAddRanked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := &Data{Items: make([]uint32, 300)}
	for i := range d.Items {
		d.Items[i] = uint32(3*i + r.IntN(3)) // increasing
	}
	ps := make([]allpairs.Pair, 10000)
	for i := range ps {
		ps[i] = allpairs.Pair{I: uint32(r.IntN(300)), J: uint32(r.IntN(300)), Count: r.Uint32()}
	}
	collect := func(add func(w *Writer)) ([]Pair, int64) {
		var got []Pair
		o := &Output{d: d, fn: func(b []Pair) error { got = append(got, b...); return nil }}
		w := o.Writer()
		add(w)
		w.Close()
		return got, o.count.Load()
	}
	want, wantN := collect(func(w *Writer) {
		for _, p := range ps {
			w.Add(p.I, p.J, p.Count)
		}
	})
	got, n := collect(func(w *Writer) {
		w.addRanked(ps[:5])
		w.addRanked(ps[5:])
	})
	if !slices.Equal(got, want) || n != wantN || n != int64(len(ps)) {
		t.Fatalf("addRanked: %d pairs (count %d), Add: %d (count %d), or they differ", len(got), n, len(want), wantN)
	}
}
