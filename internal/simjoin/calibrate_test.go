package simjoin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/sysinfo"
)

var calibrate = flag.Bool("calibrate", false, "run TestCalibrate: compare the cost model with measured CPU times")

// TestCalibrate runs every algorithm on one thread on the real data sets
// and prints the sampled work, the cost model's estimate and the measured
// CPU time of the run (the best of three): the constants in cost.go were
// fitted to these. It needs -calibrate and the shared data.
func TestCalibrate(t *testing.T) {
	if !*calibrate {
		t.Skip("needs -calibrate")
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "data\tt\talgorithm\tunits\trecords\tuniverse\tentries\theads\tlookups\tcands\tpairEntries\tpairCands\tpairs\tmerged\tsteps\tindexed\telements\testimate ms\tcpu ms\tratio\t")
	for _, d := range mannData {
		c := loadData(t, d.File)
		for _, ts := range []string{"0.5", "0.7", "0.9"} {
			th := mustThreshold(t, Jaccard, ts)
			for _, alg := range algorithms {
				if only := os.Getenv("CALIBRATE_ONLY"); only != "" && !strings.Contains(","+only+",", ","+alg+",") {
					continue
				}
				best := time.Duration(1 << 62)
				var est float64
				var w *workStats
				var universe int
				for range 3 {
					pl, err := NewPlan(c, nil, Options{Threshold: th, Technique: alg, Distinct: true, Threads: 1})
					if err != nil {
						t.Fatal(err)
					}
					est = pl.Chosen.Estimate.Seconds
					w = work(pl.Problem, []algorithm{allPairs, ppJoin, groupJoin, pairJoin}[indexOf(alg)])
					universe = pl.Problem.Universe
					start := sysinfo.CPUTime()
					if _, err := pl.Count(context.Background()); err != nil {
						t.Fatal(err)
					}
					best = min(best, sysinfo.CPUTime()-start)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%d\t%d\t%.1f\t%.1f\t%.2f\t\n", d.Name, ts, alg,
					w.units, w.records, universe, w.entries, w.heads, w.lookups, w.cands, w.pairEntries, w.pairCands, w.pairs, w.merged, w.steps, w.indexed, w.elements, est*1e3, best.Seconds()*1e3, est/best.Seconds())
			}
		}
	}
	tw.Flush()
}

func indexOf(alg string) int {
	for i, a := range algorithms {
		if a == alg {
			return i
		}
	}
	panic(alg)
}
