package gpusimjoin

import (
	"context"
	"errors"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/simjoin"
)

// handOn is an engine, for this benchmark only, that runs a filter and
// hands its candidates to emit, verifying nothing.
type handOn struct {
	name   string
	filter simjoin.Filter
	emit   func() (func(*simjoin.CandidateBatch) error, func())
}

func (e handOn) Name() string    { return e.name }
func (handOn) Kind() engine.Kind { return engine.GPU }
func (handOn) Device() (engine.Device, error) {
	return engine.Device{Kind: engine.GPU, Name: "none"}, nil
}
func (handOn) Estimate(*simjoin.Problem) (engine.Estimate, error) {
	return engine.Estimate{Seconds: 1e9}, nil // never chosen unless named
}
func (e handOn) Run(ctx context.Context, p *simjoin.Problem, out *simjoin.Output) error {
	emit, done := e.emit()
	err := simjoin.Candidates(ctx, p, e.filter, out, emit)
	done()
	return err
}

// filterOnly are BenchmarkFilterOnly's filters.
var filterOnly = []string{"ppjoin", "pairjoin"}

func init() {
	discard := func() (func(*simjoin.CandidateBatch) error, func()) {
		return func(*simjoin.CandidateBatch) error { return nil }, func() {}
	}
	chunks := func() (func(*simjoin.CandidateBatch) error, func()) {
		bd := newBuilder(numChunks, 1<<18, 1<<18, make(chan struct{}), func() error { return errors.New("stop") })
		drained := make(chan struct{})
		go func() {
			for ch := range bd.filled {
				ch.writers.Wait()
				bd.recycle(ch)
			}
			close(drained)
		}()
		return bd.emit, func() { bd.finishTail(0); <-drained; bd.release() }
	}
	for _, tech := range filterOnly {
		for _, noBitmap := range []bool{false, true} {
			name := tech
			if noBitmap {
				name += "-nobitmap"
			}
			f := simjoin.Filter{Technique: tech, NoBitmap: noBitmap}
			simjoin.Register(handOn{name + "-discard", f, discard})
			simjoin.Register(handOn{name + "-chunks", f, chunks})
		}
	}
}

// BenchmarkFilterOnly compares, on the CPU alone, a whole join of the CPU
// engine with its filter handing the candidates on (to nothing, and to
// the chunks, drained), with the bitmap filter and without: what the GPU
// path costs the filters.
func BenchmarkFilterOnly(b *testing.B) {
	for _, d := range mannData {
		for _, ts := range []string{"0.5", "0.7"} {
			c := loadData(b, d.File)
			th := mustThreshold(b, simjoin.Jaccard, ts)
			for _, tech := range filterOnly {
				for _, how := range []string{"cpu", "discard", "nobitmap-discard", "chunks", "nobitmap-chunks"} {
					b.Run(d.Name+"/"+ts+"/"+tech+"/"+how, func(b *testing.B) {
						pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Distinct: true, Device: "cpu", Technique: tech})
						if err != nil {
							b.Fatal(err)
						}
						if how != "cpu" {
							pl, err = simjoin.NewPlan(c, nil, simjoin.Options{Threshold: th, Distinct: true, Device: "gpu", Technique: tech + "-" + how})
							if err != nil {
								b.Fatal(err)
							}
							// The filter's index, as the CPU engine's estimate
							// builds it: not part of what is compared.
							if _, err := simjoin.CandidateWork(pl.Problem, simjoin.Filter{Technique: tech}); err != nil {
								b.Fatal(err)
							}
						}
						for b.Loop() {
							if err := pl.Join(context.Background(), func([]simjoin.Pair) error { return nil }); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}
