package plantmp

import (
	"os"
	"testing"
	"time"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/setio"
)

func TestPlanTime(t *testing.T) {
	c, close, err := setio.Map("/tmp/w/orkut.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer close()
	for range 2 {
		t0 := time.Now()
		pl, err := allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu", CountOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("plan %v (prepared %v)", time.Since(t0), pl.Prepared())
	}
	pl, _ := allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: 1}, allpairs.Options{Device: "cpu", CountOnly: true})
	pl.Explain(os.Stderr)
}
