package gpuallpairs

import (
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/synth"
)

// BenchmarkMMScanColumns times mmscan's choice of heavy elements, part of
// its estimate and so of planning, on ORKUT-100K's look-alike (Zipf over
// 8.7M elements, 6.5M of them shared): each iteration forces another
// number of heavy elements, so that none is memoised. What a process pays
// is the first (-benchtime 1x), on a heap the problem has just grown.
func BenchmarkMMScanColumns(b *testing.B) {
	c, err := synth.Generate(synth.Config{Sets: 100000, Universe: 8700000, AvgSize: 905, Dist: synth.Zipf, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	pl, err := allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu", Technique: "merge", CountOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	p := pl.Problem
	force := 0
	for b.Loop() {
		force++
		mmscanColumns(p, h100, force)
	}
	_, shared := p.SharedColumns()
	b.ReportMetric(float64(shared), "shared-elements")
}
