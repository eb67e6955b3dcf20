package pairs_test

import (
	"context"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/sets"
)

var _ settest.Plan[pairs.Pair] = (*pairs.Plan)(nil)

// A plan over the memory budget comes back with its error, which the
// caller tests through this package's ErrOverBudget.
func TestPlanOverBudget(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3}, []uint32{1, 2, 3, 4})
	opt := pairs.Options{MinSupport: 2, Device: "cpu", Memory: 1000}
	pl, err := pairs.NewPlan(tx, opt)
	settest.CheckCannotRun(t, pl, err, pairs.ErrCannotRun, pairs.ErrOverBudget)
	n, pl, err := pairs.Count(context.Background(), tx, opt)
	if n != 0 || pl == nil || err == nil {
		t.Errorf("Count over budget: %d, plan %v, %v; want 0, a plan and an error", n, pl, err)
	}
}

// Device "gpu" without a GPU is an error matching ErrUnavailable.
func TestPlanUnavailable(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3})
	pl, err := pairs.NewPlan(tx, pairs.Options{MinSupport: 1, Device: "gpu"})
	if err == nil {
		t.Skip("this machine has a GPU")
	}
	settest.CheckCannotRun(t, pl, err, pairs.ErrCannotRun, pairs.ErrUnavailable)
}

// A plan that runs says what it chose and what it predicted.
func TestPlanRuns(t *testing.T) {
	tx := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3}, []uint32{1, 2, 3, 4})
	pl, err := pairs.NewPlan(tx, pairs.Options{MinSupport: 2, Device: "cpu", Technique: "apriori"})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Technique() != "apriori" || pl.Device() != "cpu" {
		t.Errorf("chose %s on %s, want apriori on cpu", pl.Technique(), pl.Device())
	}
	if d, m := pl.Estimate(); d <= 0 || m < 0 {
		t.Errorf("estimate %v, %d bytes", d, m)
	}
	if pl.Prepared() <= 0 {
		t.Errorf("prepared in %v", pl.Prepared())
	}
	n, err := pl.Count(context.Background())
	if err != nil || n != 3 {
		t.Errorf("Count: %d, %v; want 3 pairs", n, err)
	}
}
