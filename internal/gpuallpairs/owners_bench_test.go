package gpuallpairs

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/allpairs"
)

var (
	ownersOnly  = flag.String("owners.only", "ENRON-100K,WORDS-100K", "comma-separated shapes of BenchmarkOwners (names or groups, as -misi.only)")
	ownersList  = flag.String("owners.list", "1,2,4", "comma-separated numbers of owners of GPU 0 for BenchmarkOwners")
	ownersTechs = flag.String("owners.techs", "auto", "comma-separated GPU techniques for BenchmarkOwners")
	ownersReps  = flag.Int("owners.reps", 5, "timed runs per number of owners, interleaved")
	ownersPairs = flag.Int("owners.pairs", 0, "if positive, count the pairs sharing at least this many elements (a pair plan: mmjoin runs only on those) instead of delivering tiles")
)

// BenchmarkOwners measures what splitting a run costs: all-pairs counts
// of Table 1 look-alikes (misiShapes) delivered as 2048×2048 tiles, as
// BenchmarkMISI does, on 1, 2 and 4 owners of GPU 0, whose kernels share
// its multiprocessors, so that the only difference is the splitting, the
// scheduling and the merging (each owner's uploads and structures, its
// streams, the shared queue). Every owner count's counts are checked
// against one owner's (a checksum of every stride-th row) first; then the
// runs (planning included) are timed round-robin, the order rotating each
// round. With -owners.pairs the runs count pairs instead (checked against
// one owner's count), as MMJoin's must. It prints the median, min and max run time per owner count, the
// ratio of the medians to one owner's, and the median and quartiles of the
// per-round ratios (each run against one owner's run of the same round, a
// neighbour in time: steadier than the ratio of medians on runs of a few
// milliseconds).
func BenchmarkOwners(b *testing.B) {
	needGPU(b)
	var counts []int
	for _, f := range strings.Split(*ownersList, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			b.Fatalf("-owners.list %q: want positive integers", *ownersList)
		}
		counts = append(counts, k)
	}
	fmt.Printf("%-14s %-10s %6s %9s %9s %9s %9s %7s %19s  %s\n", "problem", "technique", "owners", "plan ms", "median ms", "min ms", "max ms", "ratio", "paired (q1-q3)", "plan / last run's owners")
	for _, sh := range misiShapes {
		if !selected(*ownersOnly, sh) {
			continue
		}
		c, err := sh.load(b)
		if err != nil {
			b.Logf("%s: %v (skipped)", sh.name, err)
			continue
		}
		for _, tech := range strings.Split(*ownersTechs, ",") {
			opts := make([]allpairs.Options, len(counts))
			var want uint64
			newPlan := func(o allpairs.Options) (*allpairs.Plan, error) {
				if *ownersPairs > 0 {
					return allpairs.NewPlan(c, nil, allpairs.Query{MinOverlap: *ownersPairs}, o)
				}
				return allpairs.NewTilePlan(c, nil, benchTile, benchTile, o)
			}
			for i, k := range counts {
				opts[i] = allpairs.Options{Largest: sh.largest, Device: "gpu", Technique: tech, GPUs: make([]int, k)}
				pl, err := newPlan(opts[i])
				if err != nil {
					b.Fatalf("%s/%s, %d owners: %v", sh.name, tech, k, err)
				}
				var sum uint64
				if *ownersPairs > 0 {
					n, err := pl.Count(context.Background())
					if err != nil {
						b.Fatalf("%s/%s, %d owners: %v", sh.name, tech, k, err)
					}
					if i == 0 {
						want = uint64(n)
					} else if uint64(n) != want {
						b.Fatalf("%s/%s, %d owners: %d pairs, one owner's %d", sh.name, tech, k, n, want)
					}
					continue
				}
				stride := uint32(max(1, pl.Problem.Stats.R.Sets/12500))
				err = pl.Tiles(context.Background(), func(t *allpairs.Tile) error {
					for x := 0; x < t.Rows; x++ {
						if t.RowIDs[x]%stride != 0 {
							continue
						}
						var row uint64
						for y, v := range t.Counts[x*t.Cols : (x+1)*t.Cols] {
							row += uint64(v) * (uint64(t.ColIDs[y])*0xC2B2AE3D27D4EB4F | 1)
						}
						sum += row * (uint64(t.RowIDs[x])*0x9E3779B97F4A7C15 | 1)
					}
					return nil
				})
				if err != nil {
					b.Fatalf("%s/%s, %d owners: %v", sh.name, tech, k, err)
				}
				if i == 0 {
					want = sum
				} else if sum != want {
					b.Fatalf("%s/%s, %d owners: checksum %x, one owner's %x", sh.name, tech, k, sum, want)
				}
			}
			runs := make([][]time.Duration, len(counts))
			plans := make([][]time.Duration, len(counts))
			lastNotes := make([]string, len(counts))
			var detail string
			for rep := range *ownersReps {
				for j := range counts {
					i := (j + rep) % len(counts)
					start := time.Now()
					pl, err := newPlan(opts[i])
					if err != nil {
						b.Fatal(err)
					}
					mid := time.Now()
					if *ownersPairs > 0 {
						_, err = pl.Count(context.Background())
					} else {
						err = pl.Tiles(context.Background(), func(*allpairs.Tile) error { return nil })
					}
					if err != nil {
						b.Fatal(err)
					}
					runs[i] = append(runs[i], time.Since(mid))
					plans[i] = append(plans[i], mid.Sub(start))
					lastNotes[i] = strings.TrimSpace(pl.Notes())
					if i == 0 {
						detail = pl.Chosen.Engine.Name() + ": " + pl.Chosen.Estimate.Detail
					}
				}
			}
			base := median(runs[0])
			for i, k := range counts {
				med := median(runs[i])
				paired := make([]float64, len(runs[i]))
				for r := range paired {
					paired[r] = float64(runs[i][r]) / float64(runs[0][r])
				}
				slices.Sort(paired)
				n := len(paired)
				fmt.Printf("%-14s %-10s %6d %9.1f %9.1f %9.1f %9.1f %7.3f %7.3f (%.3f-%.3f)  %s\n", sh.name, tech, k, ms(median(plans[i])), ms(med),
					ms(slices.Min(runs[i])), ms(slices.Max(runs[i])), float64(med)/float64(base), paired[n/2], paired[n/4], paired[3*n/4],
					strings.ReplaceAll(lastNotes[i], "\n", "; "))
			}
			fmt.Printf("%-14s %-10s plan: %s\n", sh.name, tech, detail)
		}
	}
}
