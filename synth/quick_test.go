package synth

import (
	"testing"
	"time"

	"github.com/xsect/xsect/sets"
)

func TestQuick(t *testing.T) {
	for _, d := range []Dist{Uniform, Normal, Zipf} {
		t0 := time.Now()
		c, err := Generate(Config{Sets: 1000, Universe: 1e6, AvgSize: 10000, Dist: d, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		st := sets.Measure(c)
		t.Logf("%v: %v %+v", d, time.Since(t0), st)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}
