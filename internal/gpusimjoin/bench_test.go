package gpusimjoin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/sets"
)

var warm sync.Once

// warmGPU opens the device and loads the kernels once, so that no
// benchmark's first iteration pays for them.
func warmGPU(b *testing.B) {
	warm.Do(func() {
		c := sets.FromSets([]uint32{1, 2, 3}, []uint32{1, 2, 3, 4})
		for _, k := range simjoin.GPUKernels {
			gpuPlan(b, c, nil, simjoin.Options{Threshold: mustThreshold(b, simjoin.Jaccard, "0.5")}, "ppjoin", k).Count(context.Background())
		}
	})
}

// BenchmarkMann times whole joins as issue 12's targets count them (from
// the loaded collection, preparation included, to the number of pairs,
// equal sets once) on the five data sets of its anchor: on the CPU alone
// and with verification on the GPU, the planner's kernel and each one
// forced (the technique is the planner's among the GPU engines). Each
// benchmark logs the last run's account: where the time went.
func BenchmarkMann(b *testing.B) {
	needGPU(b)
	warmGPU(b)
	for i, ts := range []string{"0.5", "0.7"} {
		for _, d := range mannData {
			for _, how := range []string{"cpu", "gpu", "gpu-thread", "gpu-block", "gpu-pair"} {
				b.Run(fmt.Sprintf("t=%s/%s/%s", ts, d.name, how), func(b *testing.B) {
					c := loadData(b, d.file)
					opt := simjoin.Options{Threshold: mustThreshold(b, simjoin.Jaccard, ts), Distinct: true, Device: "gpu"}
					if how == "cpu" {
						opt.Device = "cpu"
					}
					opt.GPUKernel, _ = strings.CutPrefix(how, "gpu-")
					if opt.GPUKernel == "gpu" || opt.GPUKernel == "cpu" {
						opt.GPUKernel = ""
					}
					var pl *simjoin.Plan
					for b.Loop() {
						var err error
						if pl, err = simjoin.NewPlan(c, nil, opt); err != nil {
							b.Fatal(err)
						}
						n, err := pl.Count(context.Background())
						if err != nil || n != d.pairs[i] {
							b.Fatalf("%d pairs, %v; want %d", n, err, d.pairs[i])
						}
					}
					b.Logf("%s on %s, estimated %.1f ms (%s): %s", pl.Chosen.Engine.Name(), pl.Chosen.Engine.Kind(), 1e3*pl.Chosen.Estimate.Seconds, pl.Chosen.Estimate.Detail, strings.TrimSpace(pl.Notes()))
				})
			}
		}
	}
}
