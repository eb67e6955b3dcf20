package allpairs

import (
	"context"
	"errors"
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
var calibrateOnly = flag.String("calibrate-shapes", "", "comma-separated shape names for TestCalibrate (default all)")
var calibrateThreads = flag.Int("calibrate-threads", 1, "threads for TestCalibrate (0: all): with more than one, it also checks the planner's choice against the best forced technique, by wall time")

// TestCalibrate runs every engine on one thread on the benchmark shapes and
// prints the cost model's estimate next to the measured CPU time (the best
// of three runs): the constants in cost.go were set so that the ratios stay
// near 1. It needs -calibrate.
func TestCalibrate(t *testing.T) {
	if !*calibrate {
		t.Skip("needs -calibrate")
	}
	shapes := []struct {
		name, data string
		q          Query
		largest    int
	}{
		{"uniform", "uniform-1000x10k-1e6", Query{MinOverlap: 1}, 0},
		{"zipf", "zipf-1000x10k-1e6", Query{MinOverlap: 1}, 0},
		{"zipf-big", "zipf-1000x100k-1e7", Query{MinOverlap: 1}, 0},
		{"small", "uniform-300x1k-1e4", Query{MinOverlap: 1}, 0},
		{"chess", "chess", Query{MinOverlap: 1}, 0},
		{"retail10k", "retail", Query{MinOverlap: 1}, 10000},
		{"bms2-10k", "BMS2", Query{MinOverlap: 1}, 10000},
		{"kosarak10k", "kosarak", Query{MinOverlap: 1}, 10000},
		{"retail-c1", "retail", Query{Containment: Ratio{1, 1}}, 0},
		{"bms2-c1", "BMS2", Query{Containment: Ratio{1, 1}}, 0},
		{"retail-c0.8", "retail", Query{Containment: Ratio{4, 5}}, 0},
	}
	threads := *calibrateThreads
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\ttechnique\testimate ms\tcpu ms\twall ms\tratio\tdetail\t")
	for _, sh := range shapes {
		if *calibrateOnly != "" && !strings.Contains(","+*calibrateOnly+",", ","+sh.name+",") {
			continue
		}
		c := benchCollection(t, sh.data)
		auto, err := NewPlan(c, nil, sh.q, Options{Device: "cpu", Threads: threads, Largest: sh.largest})
		if err != nil {
			t.Fatal(err)
		}
		choice := auto.Chosen.Engine.Name()
		bestWall, choiceWall := time.Duration(1<<62), time.Duration(0)
		bestTech := ""
		for _, tech := range Techniques() {
			plan, err := NewPlan(c, nil, sh.q, Options{Device: "cpu", Technique: tech, Threads: threads, Largest: sh.largest})
			if errors.Is(err, ErrCannotRun) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			est := plan.Chosen.Estimate
			if est.Seconds > 15 {
				fmt.Fprintf(tw, "%s\t%s\t%.0f\t-\t-\t%s (skipped)\t\n", sh.name, tech, est.Seconds*1e3, est.Detail)
				continue
			}
			best, wall := time.Duration(1<<62), time.Duration(1<<62)
			for rep := 0; rep < 3; rep++ {
				start, startWall := sysinfo.CPUTime(), time.Now()
				if _, err := plan.Count(context.Background()); err != nil {
					t.Fatal(err)
				}
				best = min(best, sysinfo.CPUTime()-start)
				wall = min(wall, time.Since(startWall))
			}
			if wall < bestWall {
				bestWall, bestTech = wall, tech
			}
			if tech == choice {
				choiceWall = wall
			}
			ms := float64(best) / 1e6
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t\n", sh.name, tech, est.Seconds*1e3, ms, float64(wall)/1e6, ms/(est.Seconds*1e3*float64(max(threads, 1))), est.Detail)
			tw.Flush()
		}
		fmt.Fprintf(tw, "%s\tplanner: %s\t\t\t%.1f\t%.2f\tbest forced: %s\t\n", sh.name, choice, float64(choiceWall)/1e6, float64(choiceWall)/float64(bestWall), bestTech)
		tw.Flush()
	}
	tw.Flush()
}
