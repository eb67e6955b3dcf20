package gpusimjoin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

var techniques = []string{"allpairs", "ppjoin", "groupjoin", "pairjoin"}

// bitmaps are the filter configurations that the tests force: with the
// bitmap filter and without.
var bitmaps = []int{bitmapOn, bitmapOff}

// needGPU skips the test, saying why, where no GPU can be used.
func needGPU(t testing.TB) {
	t.Helper()
	gputest.Need(t, gpurt.Available())
}

// chunks returns tu with chunks of at most n candidates (n/3 probes; 0:
// the planner's): many chunks, cut probes and both device slots even on
// small inputs.
func chunks(tu tuning, n int) tuning {
	tu.chunkLimit = n
	return tu
}

// gpuPlan plans r × s on the GPU with technique and kernel forced, run
// by the GPU engine of technique made with tu.
func gpuPlan(t testing.TB, r, s *sets.Collection, opt simjoin.Options, technique, kernel string, tu tuning) *simjoin.Plan {
	t.Helper()
	opt.Technique, opt.Device, opt.GPUKernel = technique, "gpu", kernel
	pl, err := simjoin.NewPlan(r, s, opt)
	if err != nil {
		t.Fatalf("%s on the GPU, kernel %s: %v", technique, kernel, err)
	}
	if pl.Chosen.Engine.Kind() != engine.GPU {
		t.Fatalf("chose %s on %s", pl.Chosen.Engine.Name(), pl.Chosen.Engine.Kind())
	}
	if tu == (tuning{}) {
		return pl
	}
	// The registered engine's estimate does not count: tu's may differ.
	e := gpuEngine{technique, tu}
	c := pl.Chosen
	c.Engine, c.Bounded = e, false
	c.Device, c.Err = e.Device()
	if c.Err == nil {
		c.Estimate, c.Err = e.Estimate(pl.Problem)
	}
	c.CheckMemory(pl.Problem.Memory)
	if c.Err != nil {
		t.Fatalf("%s on the GPU, kernel %s, tuning %+v: %v", technique, kernel, tu, c.Err)
	}
	pl.Chosen = c
	return pl
}

// check joins r × s (s nil: a self-join) with every filter, with and
// without the bitmap filter, and every kernel on the GPU, with and without
// Distinct, collecting and counting, against the reference and the CPU
// engine, planned with tu.
func check(t *testing.T, name string, r, s *sets.Collection, th simjoin.Threshold, tu tuning) {
	t.Helper()
	for _, distinct := range []bool{false, true} {
		want := reference(r, s, th, distinct)
		for _, tech := range techniques {
			opt := simjoin.Options{Threshold: th, Distinct: distinct, Threads: 3}
			cpu := opt
			cpu.Technique, cpu.Device = tech, "cpu"
			pl, err := simjoin.NewPlan(r, s, cpu)
			if err != nil {
				t.Fatal(err)
			}
			fromCPU, err := pl.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tag := fmt.Sprintf("%s: %s %s, distinct %v, %s", name, th.Measure, th, distinct, tech)
			simjointest.ComparePairs(t, tag+" on the CPU", fromCPU, want)
			for _, bm := range bitmaps {
				tu.bitmap = bm
				for ki, kernel := range simjoin.GPUKernels {
					// The chunks left at the end on the device, split
					// as the planner does, or the CPU taking the newest
					// in a share of 60 candidates (with chunks of 50: a
					// part of them, the device the rest), two of the
					// three in turn, collecting and counting.
					tails := [3]int{-1, tu.cpuTail, 60}
					tail := [2]int{tails[ki%3], tails[(ki+1)%3]}
					tag := fmt.Sprintf("%s kernel %s, bitmap %d", tag, kernel, bm)
					tu := tu
					tu.cpuTail = tail[0]
					got, err := gpuPlan(t, r, s, opt, tech, kernel, tu).Collect(context.Background())
					if err != nil {
						t.Fatalf("%s: %v", tag, err)
					}
					simjointest.ComparePairs(t, tag, got, want)
					tu.cpuTail = tail[1]
					n, err := gpuPlan(t, r, s, opt, tech, kernel, tu).Count(context.Background())
					if err != nil || n != int64(len(want)) {
						t.Fatalf("%s: Count = %d, %v; want %d", tag, n, err, len(want))
					}
				}
			}
		}
	}
}

var randomThresholds = map[simjoin.Measure][]string{
	simjoin.Jaccard: {"0.5", "0.8", "1", "1/3"},
	simjoin.Cosine:  {"0.5", "0.9", "2/3"},
	simjoin.Dice:    {"0.6", "0.95"},
	simjoin.Overlap: {"1", "3"},
}

// TestGPURandom: self-joins and R × S of random collections, in many small
// chunks and in one.
func TestGPURandom(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 4 {
		u := 40 + rng.IntN(200)
		r := simjointest.Random(rng, 150+rng.IntN(150), 3+round*6, u)
		s := simjointest.Random(rng, 100+rng.IntN(150), 3+round*5, u+rng.IntN(20))
		limit := 0
		if round%2 == 0 {
			limit = 50
		}
		tu := chunks(tuning{}, limit)
		for m, ths := range randomThresholds {
			for _, ts := range ths {
				th := mustThreshold(t, m, ts)
				check(t, fmt.Sprintf("round %d", round), r, nil, th, tu)
				check(t, fmt.Sprintf("round %d R x S", round), r, s, th, tu)
			}
		}
	}
}

// atThreshold returns pairs of sets with sizes a in sizes and b from a to
// a+spread placed exactly at the threshold and one common element below
// it, as R and S (pair i is R's set i and S's set i).
func atThreshold(t *testing.T, th simjoin.Threshold, sizes []int, spread int) (r, s *sets.Collection) {
	r, s = sets.New(), sets.New()
	next := uint32(0)
	fresh := func(n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	found := 0
	for _, a := range sizes {
		for b := a; b <= a+spread; b++ {
			c := int(th.MinOverlap(uint32(a), uint32(b)))
			if c > a {
				continue
			}
			if !similarRat(th, c, a, b) || similarRat(th, c-1, a, b) {
				t.Fatalf("%s %s: MinOverlap(%d, %d) = %d is not the least overlap", th.Measure, th, a, b, c)
			}
			found++
			for _, k := range []int{c, c - 1} {
				if k < 0 {
					continue
				}
				common := fresh(k)
				r.AddUnsorted(append(slices.Clone(common), fresh(a-k)...))
				s.AddUnsorted(append(slices.Clone(common), fresh(b-k)...))
			}
		}
	}
	if found == 0 {
		t.Fatalf("%s %s: no size pair reaches the threshold", th.Measure, th)
	}
	return r, s
}

func interleave(r, s *sets.Collection) *sets.Collection {
	all := sets.New()
	for i := 0; i < r.Len(); i++ {
		all.Add(r.Set(i))
		all.Add(s.Set(i))
	}
	return all
}

// TestGPUAtThreshold: pairs exactly at each measure's threshold are found
// and those one element below are not, by every kernel.
func TestGPUAtThreshold(t *testing.T) {
	needGPU(t)
	sizes := make([]int, 32)
	for i := range sizes {
		sizes[i] = i + 1
	}
	for _, tc := range []struct {
		m  simjoin.Measure
		th string
	}{
		{simjoin.Jaccard, "0.9"}, {simjoin.Jaccard, "0.8"}, {simjoin.Cosine, "0.5"}, {simjoin.Dice, "0.8"},
		{simjoin.Overlap, "1"}, {simjoin.Overlap, "3"}, {simjoin.Overlap, "10"},
	} {
		th := mustThreshold(t, tc.m, tc.th)
		r, s := atThreshold(t, th, sizes, 20)
		tu := chunks(tuning{}, 64)
		check(t, "at threshold", interleave(r, s), nil, th, tu)
		check(t, "at threshold R x S", r, s, th, tu)
	}
}

// TestGPULong: long records at the threshold (the pair kernel's tiles
// then span warps and blocks), with every tile size.
func TestGPULong(t *testing.T) {
	needGPU(t)
	for _, tc := range []struct {
		m  simjoin.Measure
		th string
	}{{simjoin.Jaccard, "0.9"}, {simjoin.Cosine, "0.5"}, {simjoin.Dice, "0.8"}, {simjoin.Overlap, "300"}} {
		th := mustThreshold(t, tc.m, tc.th)
		r, s := atThreshold(t, th, []int{300, 777, 1500, 2600}, 3)
		all := interleave(r, s)
		want := reference(all, nil, th, false)
		wantRS := reference(r, s, th, false)
		for _, tile := range []int{4, 32, 64, 256} {
			tu := tuning{tile: tile}
			for _, tech := range techniques {
				tag := fmt.Sprintf("long %s %s, %s, tile %d", th.Measure, th, tech, tile)
				got, err := gpuPlan(t, all, nil, simjoin.Options{Threshold: th}, tech, "pair", tu).Collect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				simjointest.ComparePairs(t, tag, got, want)
				got, err = gpuPlan(t, r, s, simjoin.Options{Threshold: th}, tech, "pair", tu).Collect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				simjointest.ComparePairs(t, tag+" R x S", got, wantRS)
			}
		}
		// The other kernels, on the same long records.
		check(t, "long", all, nil, th, tuning{})
	}
}

// TestGPUAdversarial: empty collections and sets, single elements,
// identical sets, extreme values, a probe longer than shared memory.
func TestGPUAdversarial(t *testing.T) {
	needGPU(t)
	big := uint32(math.MaxUint32)
	seq := func(lo, hi uint32) []uint32 {
		var s []uint32
		for v := lo; v < hi; v++ {
			s = append(s, v)
		}
		return s
	}
	inputs := map[string][][]uint32{
		"no sets":        {},
		"one set":        {{1, 2, 3}},
		"only empty":     {{}, {}, {}},
		"empty and not":  {{}, {5}, {}, {5}, {}},
		"singletons":     {{0}, {0}, {1}, {big}, {big}, {0, big}},
		"identical":      {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}},
		"extremes":       {{0, big}, {0, big}, {0, 1, big}, {big - 1, big}, {0}, {big}},
		"nested":         {{1}, {1, 2}, {1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6}},
		"one large":      {seq(0, 500), seq(0, 499), seq(1, 500), seq(250, 750), {7}},
		"past shared":    {seq(0, 3000), seq(1, 3000), seq(0, 2999), seq(5, 3100)},
		"long and equal": {seq(0, 300), seq(0, 300), seq(100, 400)},
	}
	ths := []simjoin.Threshold{mustThreshold(t, simjoin.Jaccard, "0.5"), mustThreshold(t, simjoin.Jaccard, "1"),
		mustThreshold(t, simjoin.Cosine, "0.9"), mustThreshold(t, simjoin.Dice, "0.8"), mustThreshold(t, simjoin.Overlap, "1"),
		mustThreshold(t, simjoin.Overlap, "2")}
	for name, in := range inputs {
		c := sets.FromSets(in...)
		for _, th := range ths {
			check(t, name, c, nil, th, tuning{})
			check(t, name+" R x S", c, sets.FromSets(in[len(in)/2:]...), th, tuning{})
		}
	}
}

// TestWeighGPUs: where the problem leaves its GPUs to the planner, a join
// of milliseconds verifies on the first GPU alone on a host of several
// (gpurt.Weigh), and the plan says so; on a host of one nothing is
// weighed, and the run is on GPU 0. Either way the pairs are the reference's.
func TestWeighGPUs(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(13, 14))
	c := simjointest.Random(rng, 800, 20, 150)
	th := mustThreshold(t, simjoin.Jaccard, "0.4")
	all, err := gpurt.CheckGPUs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tech := range techniques {
		pl := gpuPlan(t, c, nil, simjoin.Options{Threshold: th}, tech, "", tuning{})
		est := pl.Chosen.Estimate
		gputest.CheckWeighed(t, tech, len(all), est.Detail, est.DeviceName)
		got, err := pl.Collect(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", tech, err)
		}
		simjointest.ComparePairs(t, tech+", weighed", got, reference(c, nil, th, false))
	}
}

// TestGPUJoinStops: an error from the caller's function stops the join
// and is returned.
func TestGPUJoinStops(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(9, 9))
	c := simjointest.Random(rng, 3000, 8, 100)
	th := mustThreshold(t, simjoin.Jaccard, "0.5")
	tu := chunks(tuning{}, 200)
	for _, gpus := range [][]int{nil, {0, 0}, {0, 0, 0}} {
		for _, kernel := range simjoin.GPUKernels {
			var mu sync.Mutex
			calls := 0
			err := gpuPlan(t, c, nil, simjoin.Options{Threshold: th, GPUs: gpus}, "ppjoin", kernel, tu).Join(context.Background(), func([]simjoin.Pair) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				return fmt.Errorf("enough")
			})
			if err == nil || err.Error() != "enough" {
				t.Fatalf("GPUs %v, kernel %s: Join returned %v, want the function's error", gpus, kernel, err)
			}
		}
	}
}

// ownerChunks matches the note of a run's owners: "verify on GPU 0 (3
// owners), ...: 3 owners, 40 chunks in 0.012 s: GPU 0#0 14 chunks busy
// ...".
var ownerChunks = regexp.MustCompile(`verify on GPU 0[^:]*: (\d+) owners?, (\d+) chunks in [^:]*:(.*)`)

// TestGPUOwners: two and three owners of GPU 0 (the splitting, the
// scheduling and the merging of a run over several GPUs) find the pairs
// and counts of one owner, with every filter and kernel, in many chunks;
// the note names the owners and the chunks each verified, which add up.
func TestGPUOwners(t *testing.T) {
	needGPU(t)
	rng := rand.New(rand.NewPCG(11, 12))
	r := simjointest.Random(rng, 600, 20, 150)
	s := simjointest.Random(rng, 400, 20, 160)
	th := mustThreshold(t, simjoin.Jaccard, "0.4")
	tu := chunks(tuning{}, 60)
	for _, ss := range []*sets.Collection{nil, s} {
		for _, tech := range techniques {
			for _, kernel := range simjoin.GPUKernels {
				opt := simjoin.Options{Threshold: th, Threads: 3, GPUs: []int{0}}
				tag := fmt.Sprintf("R x S %v, %s, kernel %s", ss != nil, tech, kernel)
				want, err := gpuPlan(t, r, ss, opt, tech, kernel, tu).Collect(context.Background())
				if err != nil {
					t.Fatalf("%s, one owner: %v", tag, err)
				}
				simjointest.ComparePairs(t, tag+", one owner", want, reference(r, ss, th, false))
				// Every GPU of a host of several, named: the planner would
				// give so small a problem the first alone.
				if all, err := gpurt.CheckGPUs(nil); err == nil && len(all) > 1 {
					opt.GPUs = all
					got, err := gpuPlan(t, r, ss, opt, tech, kernel, tu).Collect(context.Background())
					if err != nil {
						t.Fatalf("%s, GPUs %v: %v", tag, all, err)
					}
					simjointest.ComparePairs(t, fmt.Sprintf("%s, GPUs %v", tag, all), got, want)
				}
				for _, owners := range []int{2, 3} {
					opt.GPUs = slices.Repeat([]int{0}, owners)
					tag := fmt.Sprintf("%s, %d owners", tag, owners)
					pl := gpuPlan(t, r, ss, opt, tech, kernel, tu)
					got, err := pl.Collect(context.Background())
					if err != nil {
						t.Fatalf("%s: %v", tag, err)
					}
					simjointest.ComparePairs(t, tag, got, want)
					checkOwnersNote(t, tag, pl.Notes(), owners)
					n, err := gpuPlan(t, r, ss, opt, tech, kernel, tu).Count(context.Background())
					if err != nil || n != int64(len(want)) {
						t.Fatalf("%s: Count = %d, %v; want %d", tag, n, err, len(want))
					}
				}
			}
		}
	}
}

// TestGPUOwnersRealData: one to three owners of GPU 0 count Mann et al.'s
// pairs on a real data set, in the planner's own chunks.
func TestGPUOwnersRealData(t *testing.T) {
	needGPU(t)
	d := mannData[0]
	c := loadData(t, d.File)
	for _, owners := range []int{1, 2, 3} {
		opt := simjoin.Options{Threshold: mustThreshold(t, simjoin.Jaccard, "0.5"), Distinct: true, GPUs: slices.Repeat([]int{0}, owners)}
		pl := gpuPlan(t, c, nil, opt, "ppjoin", "auto", tuning{})
		n, err := pl.Count(context.Background())
		if err != nil || n != d.Pairs[0] {
			t.Errorf("%s, %d owners: %d pairs, %v; want %d", d.Name, owners, n, err, d.Pairs[0])
		}
		checkOwnersNote(t, d.Name, pl.Notes(), owners)
		t.Logf("%s, %d owners: %s", d.Name, owners, strings.TrimSpace(pl.Notes()))
	}
}

// checkOwnersNote checks a run's note of its owners: owners of them (or
// fewer, where there were fewer chunks), chunk counts that add up.
func checkOwnersNote(t *testing.T, tag, notes string, owners int) {
	t.Helper()
	m := ownerChunks.FindStringSubmatch(notes)
	if m == nil {
		t.Fatalf("%s: no note of the owners in %q", tag, notes)
	}
	n, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	if n != owners {
		t.Errorf("%s: the note names %d owners, want %d: %s", tag, n, owners, m[0])
	}
	sum := 0
	for _, f := range regexp.MustCompile(`GPU 0(?:#\d+)? (\d+) chunks`).FindAllStringSubmatch(m[3], -1) {
		k, _ := strconv.Atoi(f[1])
		sum += k
	}
	if sum != total {
		t.Errorf("%s: the owners' chunks add up to %d, the run had %d: %s", tag, sum, total, m[0])
	}
}

// mannData are the data sets of issue 12's speed target with their exact
// counts at Jaccard 0.5 and 0.7 (first two), equal sets once.
var mannData = simjointest.IssueData()

func loadData(tb testing.TB, file string) *sets.Collection { return simjointest.Load(tb, file) }

// TestGPURealData: on the real data sets, every filter and kernel, with
// and without the bitmap filter, counts Mann et al.'s pairs, and finds the
// CPU's pairs.
func TestGPURealData(t *testing.T) {
	needGPU(t)
	for _, d := range mannData {
		c := loadData(t, d.File)
		for i, ts := range []string{"0.5", "0.7"} {
			th := mustThreshold(t, simjoin.Jaccard, ts)
			opt := simjoin.Options{Threshold: th, Distinct: true}
			cpu := opt
			cpu.Device = "cpu"
			pl, err := simjoin.NewPlan(c, nil, cpu)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pl.Collect(context.Background())
			if err != nil || int64(len(want)) != d.Pairs[i] {
				t.Fatalf("%s at %s on the CPU: %d pairs, %v; want %d", d.Name, ts, len(want), err, d.Pairs[i])
			}
			// Every kernel with the bitmap filter, and the planner's
			// kernel without it.
			type config struct {
				kernel string
				tu     tuning
			}
			var configs []config
			for _, kernel := range simjoin.GPUKernels {
				configs = append(configs, config{kernel, tuning{bitmap: bitmapOn}})
			}
			configs = append(configs, config{"auto", tuning{bitmap: bitmapOff}})
			for _, tech := range techniques {
				for _, cf := range configs {
					kernel := cf.kernel
					tag := fmt.Sprintf("%s at %s, %s, kernel %s, bitmap %d", d.Name, ts, tech, kernel, cf.tu.bitmap)
					pl := gpuPlan(t, c, nil, opt, tech, kernel, cf.tu)
					n, err := pl.Count(context.Background())
					if err != nil || n != d.Pairs[i] {
						t.Errorf("%s: %d pairs, %v; want %d", tag, n, err, d.Pairs[i])
					}
					if tech != "ppjoin" && testing.Short() {
						continue
					}
					pl = gpuPlan(t, c, nil, opt, tech, kernel, cf.tu)
					got, err := pl.Collect(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					simjointest.ComparePairs(t, tag, got, want)
					t.Logf("%s: %s", tag, strings.TrimSpace(pl.Notes()))
				}
			}
		}
	}
}
