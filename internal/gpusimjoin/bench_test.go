package gpusimjoin

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
			gpuPlan(b, c, nil, simjoin.Options{Threshold: mustThreshold(b, simjoin.Jaccard, "0.5")}, "ppjoin", k, tuning{}).Count(context.Background())
		}
	})
}

// mannVariants are BenchmarkMann's variants, comma-separated: cpu (the
// planner's technique on the CPU), gpu (the planner's engine among the GPU
// engines), or DEVICE/TECHNIQUE[/bitmap|/nobitmap] forcing the technique
// and, on the GPU, the filter configuration (the planner's kernel).
var mannVariants = flag.String("mann.variants", "cpu,gpu,gpu/ppjoin/bitmap,gpu/ppjoin/nobitmap,gpu/pairjoin/bitmap,gpu/pairjoin/nobitmap,gpu/allpairs/nobitmap",
	"BenchmarkMann's variants")

// BenchmarkMann times whole joins as issue 12's targets count them (from
// the loaded collection, preparation included, to the number of pairs,
// equal sets once; mode join hands every pair with its overlap to a
// function that drops it) on the five data sets of its anchor: on the CPU
// alone and with verification on the GPU, the planner's choices and
// forced ones (-mann.variants). Each iteration runs every variant once, in
// turn, so that they share the machine's state; each variant reports its
// median, least and largest time in ms, and the log has the medians of
// preparation (and of its planning) and the last run's account.
func BenchmarkMann(b *testing.B) {
	needGPU(b)
	warmGPU(b)
	variants := strings.Split(*mannVariants, ",")
	for _, mode := range []string{"count", "join"} {
		for i, ts := range []string{"0.5", "0.7"} {
			for _, d := range mannData {
				b.Run(fmt.Sprintf("%s/t=%s/%s", mode, ts, d.Name), func(b *testing.B) {
					c := loadData(b, d.File)
					total := make([][]time.Duration, len(variants))
					prep := make([][]time.Duration, len(variants))
					planning := make([][]time.Duration, len(variants))
					notes := make([]string, len(variants))
					hidden := make([][]string, len(variants)) // each GPU run's share of its work hidden
					for b.Loop() {
						for v, how := range variants {
							opt := simjoin.Options{Threshold: mustThreshold(b, simjoin.Jaccard, ts), Distinct: true}
							f := strings.Split(how, "/")
							opt.Device = f[0]
							start := time.Now()
							var pl *simjoin.Plan
							var err error
							switch {
							case len(f) == 1:
								pl, err = simjoin.NewPlan(c, nil, opt)
							case f[0] == "cpu":
								opt.Technique = f[1]
								pl, err = simjoin.NewPlan(c, nil, opt)
							default:
								tu := tuning{}
								if len(f) > 2 {
									tu.bitmap = map[string]int{"bitmap": bitmapOn, "nobitmap": bitmapOff}[f[2]]
								}
								pl = gpuPlan(b, c, nil, opt, f[1], "", tu)
							}
							if err != nil {
								b.Fatal(err)
							}
							prep[v] = append(prep[v], time.Since(start))
							planning[v] = append(planning[v], pl.Phases.Plan)
							var n int64
							if mode == "count" {
								n, err = pl.Count(context.Background())
							} else {
								var cnt atomic.Int64
								err = pl.Join(context.Background(), func(ps []simjoin.Pair) error { cnt.Add(int64(len(ps))); return nil })
								n = cnt.Load()
							}
							if err != nil || n != d.Pairs[i] {
								b.Fatalf("%s: %d pairs, %v; want %d", how, n, err, d.Pairs[i])
							}
							total[v] = append(total[v], time.Since(start))
							if m := hiddenRE.FindStringSubmatch(pl.Notes()); m != nil {
								h := m[1]
								if e := endRE.FindStringSubmatch(pl.Notes()); e != nil {
									h += ", end on the CPU: " + e[1]
								}
								hidden[v] = append(hidden[v], h)
							}
							notes[v] = fmt.Sprintf("%s on %s, estimated %.1f ms (%s): %s", pl.Chosen.Engine.Name(), pl.Chosen.Engine.Kind(),
								1e3*pl.Chosen.Estimate.Seconds, pl.Chosen.Estimate.Detail, strings.TrimSpace(pl.Notes()))
						}
					}
					for v, how := range variants {
						med, lo, hi := spread(total[v])
						p, _, _ := spread(prep[v])
						pp, _, _ := spread(planning[v])
						b.ReportMetric(ms(med), how+"-ms")
						b.Logf("%-22s median %6.1f ms (min %6.1f, max %6.1f), preparation %5.1f ms (planning %4.1f); %s", how, ms(med), ms(lo), ms(hi), ms(p), ms(pp), notes[v])
						if len(hidden[v]) > 0 {
							b.Logf("%-22s device after filtering, every run: %s", how, strings.Join(hidden[v], "; "))
						}
					}
				})
			}
		}
	}
}

// hiddenRE finds a GPU run's device time after filtering and the share
// of its work hidden in its note, and endRE how the chunks left at the
// end were split.
var (
	hiddenRE = regexp.MustCompile(`after filtering: device ([0-9.]+ ms at most \([0-9]+% of its work hidden\))`)
	endRE    = regexp.MustCompile(`the end on the CPU: ([^)]*)\)`)
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// spread returns the median, least and largest of ds.
func spread(ds []time.Duration) (med, lo, hi time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}
