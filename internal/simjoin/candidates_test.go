package simjoin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/engine"
)

// batchVerifier is an engine of another device as Candidates serves one:
// it verifies the batches (here on the CPU, by a plain merge of the sets)
// and reports the similar pairs.
type batchVerifier struct {
	name    string
	batches *atomic.Int64
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
	return Candidates(ctx, p, e.name, out, func(b *CandidateBatch) error {
		e.batches.Add(1)
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
// self-join and R × S, with and without Distinct.
func TestCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	r := randomCollection(rng, 700, 12, 80)
	s := randomCollection(rng, 400, 12, 80)
	for _, alg := range algorithms {
		var batches atomic.Int64
		restore := registered.With(batchVerifier{alg, &batches})
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
					tag := fmt.Sprintf("%s verified in batches, %s %s, R x S %v, distinct %v", alg, th.Measure, th, other, distinct)
					comparePairs(t, tag, got, want)
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
	}
	p, err := newProblem(r, nil, Options{Threshold: mustThreshold(t, Jaccard, "0.5")}, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if err := Candidates(context.Background(), p, "magic", &Output{p: p}, nil); err == nil {
		t.Error("Candidates accepted an unknown filter")
	}
}
