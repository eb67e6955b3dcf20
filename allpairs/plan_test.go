package allpairs_test

import (
	"context"
	"testing"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

var _ settest.Plan[allpairs.Pair] = (*allpairs.Plan)(nil)

// A plan over the memory budget comes back with its error, which the
// caller tests through this package's ErrOverBudget.
func TestPlanOverBudget(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3}, []uint32{3, 4})
	q := allpairs.Query{MinOverlap: 1}
	pl, err := allpairs.NewPlan(c, nil, q, allpairs.Options{Device: "cpu", Memory: 1})
	settest.CheckCannotRun(t, pl, err, allpairs.ErrCannotRun, allpairs.ErrOverBudget)
	n, pl, err := allpairs.Count(context.Background(), c, nil, q, allpairs.Options{Device: "cpu", Memory: 1})
	if n != 0 || pl == nil || err == nil {
		t.Errorf("Count over budget: %d, plan %v, %v; want 0, a plan and an error", n, pl, err)
	}
}

// Device "gpu" without a GPU is an error matching ErrUnavailable.
func TestPlanUnavailable(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, []uint32{2, 3})
	pl, err := allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "gpu"})
	if err == nil {
		t.Skip("this machine has a GPU")
	}
	settest.CheckCannotRun(t, pl, err, allpairs.ErrCannotRun, allpairs.ErrUnavailable)
}
