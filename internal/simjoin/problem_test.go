package simjoin

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// TestSortPrefix: the n smallest values come first, sorted, and the
// values are those of the input.
func TestSortPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for range 3000 {
		size := 1 + rng.IntN(300)
		if rng.IntN(4) == 0 {
			size = 1 + rng.IntN(20)
		}
		s := make([]uint32, size)
		span := uint32(1 + rng.IntN(1000))
		for i := range s {
			s[i] = rng.Uint32N(span) // repeats too: quickselect must cope
		}
		n := uint32(rng.IntN(size + 1))
		in := slices.Clone(s)
		sortPrefix(s, n, make([]uint32, size))
		sorted := slices.Clone(in)
		slices.Sort(sorted)
		if !slices.Equal(s[:n], sorted[:n]) {
			t.Fatalf("sortPrefix(%v, %d) = %v: prefix is not the %d smallest, sorted", in, n, s, n)
		}
		rest := slices.Clone(s)
		slices.Sort(rest)
		if !slices.Equal(rest, sorted) {
			t.Fatalf("sortPrefix(%v, %d) changed the values: %v", in, n, s)
		}
	}
}

// checkSortPrefix runs sortPrefix(s, n) and fails unless the first n
// values are the n smallest of s, sorted, and the values are still those
// of s.
func checkSortPrefix(t *testing.T, name string, s []uint32, n uint32) {
	t.Helper()
	want := slices.Clone(s)
	slices.Sort(want)
	sortPrefix(s, n, make([]uint32, len(s)))
	if !slices.Equal(s[:n], want[:n]) {
		t.Fatalf("%s, %d values, n = %d: the prefix is not the n smallest, sorted", name, len(s), n)
	}
	slices.Sort(s)
	if !slices.Equal(s, want) {
		t.Fatalf("%s, %d values, n = %d: the values changed", name, len(s), n)
	}
}

// orders are the inputs that defeat quickselects' pivots, and random ones.
var orders = []struct {
	name string
	fill func(s []uint32, rng *rand.Rand)
}{
	{"sorted", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(i)
		}
	}},
	{"reversed", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(len(s) - i)
		}
	}},
	{"sorted but the smallest, last", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(i + 1)
		}
		s[len(s)-1] = 0
	}},
	{"sorted but the 3 smallest, last, decreasing", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(i + 3)
		}
		copy(s[max(len(s)-3, 0):], []uint32{2, 1, 0})
	}},
	{"sorted but the largest, first", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(i)
		}
		s[0] = uint32(len(s))
	}},
	{"all equal", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = 7
		}
	}},
	{"organ pipe", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(min(i, len(s)-1-i))
		}
	}},
	{"sawtooth", func(s []uint32, _ *rand.Rand) {
		for i := range s {
			s[i] = uint32(i % 64)
		}
	}},
	{"random", func(s []uint32, rng *rand.Rand) {
		for i := range s {
			s[i] = rng.Uint32()
		}
	}},
}

// TestSortPrefixOrders: the orders that make a median-of-three
// quickselect quadratic, at every length of the three paths (sorting
// networks, quickselect, a whole sort) and prefixes from one value to all
// but one, give the reference's prefix.
func TestSortPrefixOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for _, o := range orders {
		for _, size := range []int{1, 2, 31, 64, 65, 66, 100, 1000, 4099} {
			for _, n := range []int{0, 1, 2, size / 8, size / 2, size - size/8 - 1, size - 1, size} {
				if n < 0 || n > size {
					continue
				}
				s := make([]uint32, size)
				o.fill(s, rng)
				checkSortPrefix(t, o.name, s, uint32(n))
			}
		}
	}
}

// TestSortPrefixLinear: on a record of 262,144 values, every order takes
// about as long as a random one. A quadratic order (sorted but for its
// smallest value made the median-of-three quickselect take 4.5 s for
// 200,000) would take seconds; the bound leaves a hundredfold margin for
// a loaded machine.
func TestSortPrefixLinear(t *testing.T) {
	const size = 1 << 18
	rng := rand.New(rand.NewPCG(14, 15))
	s, tmp := make([]uint32, size), make([]uint32, size)
	timed := func(fill func([]uint32, *rand.Rand)) time.Duration {
		fill(s, rng)
		start := time.Now()
		sortPrefix(s, size/2+1, tmp)
		return time.Since(start)
	}
	random := timed(orders[len(orders)-1].fill)
	for _, o := range orders {
		if d := timed(o.fill); d > 100*random+100*time.Millisecond {
			t.Errorf("%s: %v for %d values, against %v for random ones", o.name, d, size, random)
		}
	}
}

// FuzzSortPrefix checks sortPrefix against the reference on values drawn
// from the fuzzer's bytes (two each, so that repeats are neither rare nor
// the rule); the first byte picks the prefix's length, the second an
// order to which the values are put first, so that the fuzzer starts
// from the adversarial ones, and repeats the values to reach lengths past
// the sorting networks.
func FuzzSortPrefix(f *testing.F) {
	f.Add([]byte{3, 0, 1, 0, 2, 0, 3, 0})
	f.Add([]byte{200, 2, 9, 0, 8, 0, 7, 0, 1, 0, 0, 0})
	f.Add([]byte{128, 0x31, 5, 5, 5, 5, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 2000 {
			return
		}
		pick, mode := data[0], data[1]
		var vals []uint32
		for i := 2; i+1 < len(data); i += 2 {
			vals = append(vals, uint32(data[i])|uint32(data[i+1])<<8)
		}
		for range mode >> 4 {
			vals = append(vals, vals...)
		}
		if len(vals) == 0 || len(vals) > 1<<16 {
			return
		}
		switch mode & 3 {
		case 1:
			slices.Sort(vals)
		case 2:
			slices.Sort(vals)
			slices.Reverse(vals)
		case 3:
			slices.Sort(vals)
			// The smallest last: the quadratic case.
			vals = append(vals[1:], vals[0])
		}
		checkSortPrefix(t, "fuzz", vals, uint32(int(pick)*len(vals)/255))
	})
}

// TestPrepare checks the prepared sides: records are the distinct
// nonempty sets in increasing size, each the renumbered set with its
// probing prefix sorted, and DupIDs lists every equal set.
func TestPrepare(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	c := simjointest.Random(rng, 400, 30, 60)
	th := mustThreshold(t, Jaccard, "0.6")
	p, err := newProblem(c, nil, Options{Threshold: th}, 3, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	s := p.R
	seen := map[uint32]bool{}
	var prevSize uint32
	for x := 0; x < s.Len(); x++ {
		rec := s.Record(x)
		if len(rec) == 0 || uint32(len(rec)) < prevSize {
			t.Fatalf("record %d: size %d after %d", x, len(rec), prevSize)
		}
		prevSize = uint32(len(rec))
		pre := th.ProbePrefix(uint32(len(rec)))
		if !slices.IsSorted(rec[:pre]) || pre > 0 && len(rec) > int(pre) && rec[pre-1] > slices.Min(rec[pre:]) {
			t.Fatalf("record %d: %v, prefix %d not the smallest, sorted", x, rec, pre)
		}
		ids := s.IDs(x)
		if ids[0] != s.ID[x] || !slices.IsSorted(ids) {
			t.Fatalf("record %d: ids %v, representative %d", x, ids, s.ID[x])
		}
		for _, id := range ids {
			if seen[id] || !slices.Equal(c.Set(int(id)), c.Set(int(ids[0]))) {
				t.Fatalf("record %d: set %d listed twice or not equal", x, id)
			}
			seen[id] = true
		}
		if n := len(rec); n != c.SetLen(int(s.ID[x])) {
			t.Fatalf("record %d: %d elements, set %d has %d", x, n, s.ID[x], c.SetLen(int(s.ID[x])))
		}
		bm := make([]uint64, s.words)
		setBitmap(bm, rec)
		if !slices.Equal(bm, s.bitmap(x)) {
			t.Fatalf("record %d: bitmap %x, want %x", x, s.bitmap(x), bm)
		}
		// Records of one size in lexicographic order (of their first
		// three elements at least, all sorted here).
		if x > 0 && len(s.Record(x-1)) == len(rec) && len(rec) >= 3 && min(pre, 3) == 3 &&
			slices.Compare(s.Record(x - 1)[:3], rec[:3]) > 0 {
			t.Fatalf("records %d and %d: %v before %v", x-1, x, s.Record(x-1), rec)
		}
	}
	for i := 0; i < c.Len(); i++ {
		if c.SetLen(i) > 0 && !seen[uint32(i)] {
			t.Fatalf("set %d is in no record", i)
		}
	}
	if s.Empty != c.Len()-len(seen) {
		t.Fatalf("%d empty sets, want %d", s.Empty, c.Len()-len(seen))
	}
}

// TestStops: an error from the callback stops the join and is returned;
// so does a canceled context.
func TestStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	c := simjointest.Random(rng, 3000, 8, 40)
	th := mustThreshold(t, Jaccard, "0.5")
	for _, alg := range algorithms {
		pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg})
		if err != nil {
			t.Fatal(err)
		}
		stop := errors.New("stop")
		var calls atomic.Int32
		err = pl.Join(context.Background(), func([]Pair) error {
			calls.Add(1)
			return stop
		})
		if !errors.Is(err, stop) || calls.Load() == 0 {
			t.Errorf("%s: Join with a failing callback: %v after %d calls", alg, err, calls.Load())
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		pl, _ = NewPlan(c, nil, Options{Threshold: th, Technique: alg})
		if _, err := pl.Count(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Count with a canceled context: %v", alg, err)
		}
	}
}

// TestProgress: the progress callback ends at the number of probing
// records.
func TestProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	r := simjointest.Random(rng, 500, 10, 50)
	s := simjointest.Random(rng, 300, 10, 50)
	th := mustThreshold(t, Dice, "0.6")
	for _, pair := range [][2]*sets.Collection{{r, nil}, {r, s}} {
		for _, alg := range algorithms {
			var last, total atomic.Int64
			pl, err := NewPlan(pair[0], pair[1], Options{Threshold: th, Technique: alg, Threads: 2, Progress: func(done, tot int64) {
				for {
					old := last.Load()
					if done <= old || last.CompareAndSwap(old, done) {
						break
					}
				}
				total.Store(tot)
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pl.Count(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := int64(pl.Problem.S.Len())
			if last.Load() != want || total.Load() != want {
				t.Errorf("%s: progress ended at %d of %d, want %d", alg, last.Load(), total.Load(), want)
			}
		}
	}
}

// TestChoice: the planner considers every algorithm, a forced one runs,
// and the GPU, which has no engine, cannot.
func TestChoice(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{1, 2, 3, 4}, []uint32{5})
	th := mustThreshold(t, Jaccard, "0.7")
	pl, err := NewPlan(c, nil, Options{Threshold: th})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Candidates) != len(algorithms) {
		t.Errorf("%d candidates, want %d", len(pl.Candidates), len(algorithms))
	}
	for _, alg := range algorithms {
		pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg, Device: "cpu"})
		if err != nil || pl.Chosen.Engine.Name() != alg {
			t.Errorf("forced %s: %v, %v", alg, pl, err)
		}
	}
	_, err = NewPlan(c, nil, Options{Threshold: th, Device: "gpu"})
	if !errors.Is(err, ErrCannotRun) {
		t.Errorf("device gpu: %v, want a cannot-run error", err)
	}
	if _, err := NewPlan(c, nil, Options{Threshold: th, Technique: "magic"}); err == nil {
		t.Error("an unknown technique was accepted")
	}
	if _, err := NewPlan(c, nil, Options{}); err == nil {
		t.Error("a zero threshold was accepted")
	}
}

// BenchmarkSortPrefix times the prefix of a 200,000-element record at
// Jaccard 0.5 (half of it and one more) in each order of the tests.
func BenchmarkSortPrefix(b *testing.B) {
	const size = 200000
	for _, o := range orders {
		b.Run(strings.ReplaceAll(o.name, " ", "-"), func(b *testing.B) {
			in, s, tmp := make([]uint32, size), make([]uint32, size), make([]uint32, size)
			o.fill(in, rand.New(rand.NewPCG(16, 17)))
			for b.Loop() {
				copy(s, in)
				sortPrefix(s, size/2+1, tmp)
			}
		})
	}
}
