package gpuallpairs

import (
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/synth"
)

// TestAnalyse runs the shared analysis beside the estimates that use it,
// as startAnalysis does while the GPUs open, and checks that they get
// what they compute alone on a problem of their own.
func TestAnalyse(t *testing.T) {
	c, err := synth.Generate(synth.Config{Sets: 3000, Universe: 60000, AvgSize: 120, Dist: synth.Zipf, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	plan := func() *allpairs.Problem {
		pl, err := allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu", Technique: "merge"})
		if err != nil {
			t.Fatal(err)
		}
		return pl.Problem
	}
	info, tu := gpurt.StandIn(), defaultTuning()
	alone := plan()
	wantCols, wantSplit := mmscanColumns(alone, info, 0), mmjoinSplit(alone, info, tu)

	p := plan()
	var wg sync.WaitGroup
	wg.Go(func() { analyse(p, info) })
	var gotCols *mmscanSplit
	var gotSplit *allpairs.MMJoinSplit
	wg.Go(func() { gotCols = mmscanColumns(p, info, 0) })
	wg.Go(func() { gotSplit = mmjoinSplit(p, info, tu) })
	wg.Wait()
	if gotCols.cols.k != wantCols.cols.k || gotCols.light != wantCols.light || !slices.Equal(gotCols.cols.colOf, wantCols.cols.colOf) {
		t.Errorf("mmscan's columns beside the analysis: %d heavy, light %v; alone %d, light %v",
			gotCols.cols.k, gotCols.light, wantCols.cols.k, wantCols.light)
	}
	if gotSplit.Delta1 != wantSplit.Delta1 || !slices.Equal(gotSplit.Columns, wantSplit.Columns) {
		t.Errorf("MMJoin's split beside the analysis: Δ1 %d, %d columns; alone Δ1 %d, %d columns",
			gotSplit.Delta1, len(gotSplit.Columns), wantSplit.Delta1, len(wantSplit.Columns))
	}
	if wantCols.cols.k == 0 || len(wantSplit.Columns) == 0 {
		t.Errorf("the problem gives mmscan %d heavy elements and MMJoin %d columns: pick one with both", wantCols.cols.k, len(wantSplit.Columns))
	}
}
