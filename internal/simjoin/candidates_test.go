package simjoin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

// batchVerifier is an engine of another device as Candidates serves one:
// it verifies the batches (here on the CPU, by a plain merge of the sets)
// and reports the similar pairs.
type batchVerifier struct {
	name     string
	noBitmap bool
	batches  *atomic.Int64
	pairs    *atomic.Int64 // pairs handed on
	// byVerifyBatch verifies the batches with VerifyBatch, on 3
	// goroutines, instead of the plain merge.
	byVerifyBatch bool
}

func (e batchVerifier) Name() string    { return e.name }
func (batchVerifier) Kind() engine.Kind { return engine.GPU }
func (batchVerifier) Device() (engine.Device, error) {
	return engine.Device{Kind: engine.GPU, Name: "test verifier"}, nil
}
func (batchVerifier) Estimate(*Problem) (engine.Estimate, error) {
	return engine.Estimate{Seconds: 1, Detail: "verifies Candidates' batches"}, nil
}

func (e batchVerifier) Run(ctx context.Context, p *Problem, out *Output) error {
	return Candidates(ctx, p, Filter{e.name, e.noBitmap}, out, func(b *CandidateBatch) error {
		e.batches.Add(1)
		e.pairs.Add(int64(len(b.Cands)))
		if b.Left < 0 || b.Left > 1 {
			return fmt.Errorf("a batch with %v of the work left", b.Left)
		}
		if e.byVerifyBatch {
			VerifyBatch(p, b, out, 3)
			return nil
		}
		w := out.Writer()
		defer w.Close()
		for i, x := range b.Probes {
			for k := b.Starts[i]; k < b.Starts[i+1]; k++ {
				y := b.Cands[k]
				if v := uint32(countMerge(p.S.Set(int(x)), p.R.Set(int(y)))); v >= b.Need[k] {
					w.Add(int(y), int(x), v)
				}
			}
		}
		return nil
	})
}

// TestCandidates: an engine registered for another device, verifying the
// batches of Candidates, finds the reference's pairs for every filter,
// with and without the bitmap filter, self-join and R × S, with and
// without Distinct; without the bitmap filter it is handed more pairs.
// VerifyBatch, verifying them instead, finds the same pairs.
func TestCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	r := simjointest.Random(rng, 700, 12, 80)
	s := simjointest.Random(rng, 400, 12, 80)
	for _, alg := range algorithms {
		var handed [2]int64
		for i, noBitmap := range []bool{false, true} {
			handed[i] = candidatesWith(t, r, s, alg, noBitmap, false)
		}
		candidatesWith(t, r, s, alg, true, true)
		if handed[1] <= handed[0] {
			t.Errorf("%s: %d pairs handed on without the bitmap filter, %d with it", alg, handed[1], handed[0])
		}
	}
	p, err := newProblem(r, nil, Options{Threshold: mustThreshold(t, Jaccard, "0.5")}, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if err := Candidates(context.Background(), p, Filter{Technique: "magic"}, &Output{p: p}, nil); err == nil {
		t.Error("Candidates accepted an unknown filter")
	}
	for _, alg := range algorithms {
		with, err1 := CandidateWork(p, Filter{alg, false})
		without, err2 := CandidateWork(p, Filter{alg, true})
		if err1 != nil || err2 != nil || with.Pairs <= 0 || with.Elements < 2*with.Pairs ||
			without.Pairs < with.Pairs || without.Unchecked != without.Pairs || with.Unchecked != 0 {
			t.Errorf("%s: work %+v, %v with the bitmap filter, %+v, %v without", alg, with, err1, without, err2)
		}
	}
}

// candidatesWith runs TestCandidates' joins of r and s with filter alg,
// noBitmap, verified by VerifyBatch or not, and returns the pairs handed
// on.
func candidatesWith(t *testing.T, r, s *sets.Collection, alg string, noBitmap, byVerifyBatch bool) int64 {
	t.Helper()
	var batches, pairs atomic.Int64
	restore := registered.With(batchVerifier{alg, noBitmap, &batches, &pairs, byVerifyBatch})
	for _, th := range []Threshold{mustThreshold(t, Jaccard, "0.6"), mustThreshold(t, Cosine, "0.7"), mustThreshold(t, Overlap, "3")} {
		for _, other := range []bool{false, true} {
			for _, distinct := range []bool{false, true} {
				ss := s
				if !other {
					ss = nil
				}
				want := reference(r, ss, th, distinct)
				opt := Options{Threshold: th, Technique: alg, Device: "gpu", Distinct: distinct, Threads: 3}
				pl, err := NewPlan(r, ss, opt)
				if err != nil {
					t.Fatal(err)
				}
				if pl.Chosen.Engine.Kind() != engine.GPU {
					t.Fatalf("chose %s on %s", pl.Chosen.Engine.Name(), pl.Chosen.Engine.Kind())
				}
				got, err := pl.Collect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				tag := fmt.Sprintf("%s verified in batches (no bitmap %v, VerifyBatch %v), %s %s, R x S %v, distinct %v", alg, noBitmap, byVerifyBatch, th.Measure, th, other, distinct)
				simjointest.ComparePairs(t, tag, got, want)
				pl, _ = NewPlan(r, ss, opt)
				if n, err := pl.Count(context.Background()); err != nil || n != int64(len(want)) {
					t.Fatalf("%s: Count = %d, %v; want %d", tag, n, err, len(want))
				}
			}
		}
	}
	restore()
	if batches.Load() == 0 {
		t.Errorf("%s: no batch reached the verifier", alg)
	}
	return pairs.Load()
}
