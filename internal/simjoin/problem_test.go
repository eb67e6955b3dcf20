package simjoin

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

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

// TestPrepare checks the prepared sides: records are the distinct
// nonempty sets in increasing size, each the renumbered set with its
// probing prefix sorted, and DupIDs lists every equal set.
func TestPrepare(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	c := randomCollection(rng, 400, 30, 60)
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
	c := randomCollection(rng, 3000, 8, 40)
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
	r := randomCollection(rng, 500, 10, 50)
	s := randomCollection(rng, 300, 10, 50)
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
