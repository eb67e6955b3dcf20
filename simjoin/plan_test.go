package simjoin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

var _ settest.Plan[simjoin.Pair] = (*simjoin.Plan)(nil)

func halfJaccard(t *testing.T) simjoin.Threshold {
	t.Helper()
	th, err := simjoin.ParseThreshold(simjoin.Jaccard, "0.5")
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// A plan over the memory budget comes back with its error, which the
// caller tests through this package's ErrOverBudget.
func TestPlanOverBudget(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3}, []uint32{3, 4})
	opt := simjoin.Options{Threshold: halfJaccard(t), Device: "cpu", Memory: 1}
	pl, err := simjoin.NewPlan(c, nil, opt)
	settest.CheckCannotRun(t, pl, err, simjoin.ErrCannotRun, simjoin.ErrOverBudget)
	yields := 0
	for _, perr := range pl.Pairs(context.Background()) {
		yields++
		if !errors.Is(perr, simjoin.ErrCannotRun) {
			t.Fatalf("Pairs yields %v, want why the plan cannot run", perr)
		}
	}
	if yields != 1 {
		t.Errorf("Pairs yields %d times, want once, the error", yields)
	}
	n, pl, err := simjoin.Count(context.Background(), c, nil, opt)
	if n != 0 || pl == nil || err == nil {
		t.Errorf("Count over budget: %d, plan %v, %v; want 0, a plan and an error", n, pl, err)
	}
}

// Device "gpu" without a GPU is an error matching ErrUnavailable.
// The budget holds the prepared records beside the technique's own
// structures: a budget that fits the technique alone is not enough.
func TestPlanBudgetHoldsPrepared(t *testing.T) {
	var ss [][]uint32
	for i := range 2000 {
		ss = append(ss, []uint32{uint32(i), uint32(i + 1), uint32(i + 2), uint32(i + 3)})
	}
	c := sets.FromSets(ss...)
	opt := simjoin.Options{Threshold: halfJaccard(t), Device: "cpu", Technique: "ppjoin"}
	pl, err := simjoin.NewPlan(c, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	_, own := pl.Estimate()
	prepared := pl.Memory() - own
	if own <= 0 || prepared <= 0 {
		t.Fatalf("ppjoin's memory %d, the prepared records' %d: want both positive", own, prepared)
	}
	opt.Memory = own + prepared/2
	pl, err = simjoin.NewPlan(c, nil, opt)
	if !errors.Is(err, simjoin.ErrOverBudget) || pl == nil {
		t.Fatalf("a budget of %d for %d of ppjoin and %d prepared: %v, want ErrOverBudget", opt.Memory, own, prepared, err)
	}
	opt.Memory = own + prepared
	if _, err := simjoin.NewPlan(c, nil, opt); err != nil {
		t.Errorf("a budget of exactly %d: %v", opt.Memory, err)
	}
}

func TestPlanUnavailable(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3})
	pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: halfJaccard(t), Device: "gpu"})
	if err == nil {
		t.Skip("this machine has a GPU")
	}
	settest.CheckCannotRun(t, pl, err, simjoin.ErrCannotRun, simjoin.ErrUnavailable)
}

// A plan that runs says what it prepared and predicts the memory of its
// records.
func TestPlanRuns(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3}, []uint32{1, 2, 3}, nil)
	pl, err := simjoin.NewPlan(c, nil, simjoin.Options{Threshold: halfJaccard(t), Device: "cpu", Technique: "ppjoin"})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Technique() != "ppjoin" || pl.Device() != "cpu" {
		t.Errorf("chose %s on %s, want ppjoin on cpu", pl.Technique(), pl.Device())
	}
	if st := pl.Stats(); st.R.Sets != 4 || st.R.Empty != 1 || st.R.Records != 2 {
		t.Errorf("stats %+v: want 4 sets, 1 empty, 2 distinct records", st.R)
	}
	// Two records of 3 and 2 elements: at least their offsets, elements
	// and ids.
	if m := pl.Memory(); m < 4*(3+5+2) {
		t.Errorf("Memory %d, below the records' own arrays", m)
	}
	n, err := pl.Count(context.Background())
	if err != nil || n != 3 {
		t.Errorf("Count: %d, %v; want 3 pairs", n, err)
	}
}
