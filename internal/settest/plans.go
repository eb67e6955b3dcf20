package settest

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/engine"
)

// Plan is the method set that every workload's public Plan offers, with
// P its pair type: a test asserts it of each (var _ settest.Plan[...]), so
// that the workloads' plans cannot drift apart again.
type Plan[P any] interface {
	Technique() string
	Device() string
	Estimate() (time.Duration, int64)
	Memory() int64
	Prepared() time.Duration
	Explain(w io.Writer) error
	Notes() string
	Join(ctx context.Context, fn func([]P) error) error
	Count(ctx context.Context) (int64, error)
	Collect(ctx context.Context) ([]P, error)
}

// CheckCannotRun checks the convention for a plan that cannot run, as
// NewPlan returned it with err: the plan is there beside an error matching
// each of want, its Explain says why its candidates cannot run, it names no
// technique or device, and running it returns an error saying why.
func CheckCannotRun[P any](t testing.TB, plan Plan[P], err error, want ...error) {
	t.Helper()
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Fatalf("error %v does not match %v", err, w)
		}
	}
	if v := reflect.ValueOf(plan); !v.IsValid() || v.IsNil() {
		t.Fatal("no plan beside the error: it cannot Explain")
	}
	var b strings.Builder
	if err := plan.Explain(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "cannot run") {
		t.Errorf("Explain does not say why the candidates cannot run:\n%s", b.String())
	}
	if tech, dev := plan.Technique(), plan.Device(); tech != "" || dev != "" {
		t.Errorf("a plan that cannot run names technique %q on %q", tech, dev)
	}
	if d, m := plan.Estimate(); d != 0 || m != 0 {
		t.Errorf("a plan that cannot run estimates %v and %d bytes", d, m)
	}
	ctx := context.Background()
	if jerr := plan.Join(ctx, func([]P) error { return nil }); !errors.Is(jerr, engine.ErrCannotRun) {
		t.Errorf("Join: %v, want why the plan cannot run", jerr)
	}
	if n, cerr := plan.Count(ctx); n != 0 || !errors.Is(cerr, engine.ErrCannotRun) {
		t.Errorf("Count: %d, %v; want 0 and why the plan cannot run", n, cerr)
	}
	if ps, cerr := plan.Collect(ctx); ps != nil || !errors.Is(cerr, engine.ErrCannotRun) {
		t.Errorf("Collect: %d pairs, %v; want none and why the plan cannot run", len(ps), cerr)
	}
}
