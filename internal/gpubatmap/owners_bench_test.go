package gpubatmap

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/gpurt"
)

var (
	ownersN     = flag.String("owners.n", "16000,64000", "comma-separated item counts of the BATMAP paper's instance for BenchmarkOwners")
	ownersList  = flag.String("owners.list", "1,2,4", "comma-separated numbers of owners of GPU 0 for BenchmarkOwners")
	ownersModes = flag.String("owners.modes", "count,pairs", "comma-separated modes for BenchmarkOwners (pairs only up to n = 16000)")
	ownersReps  = flag.Int("owners.reps", 7, "timed runs per number of owners, interleaved")
)

// BenchmarkOwners measures what splitting a run costs: the BATMAP paper's
// instances (as BenchmarkKernel's) on 1, 2 and 4 owners of GPU 0, whose
// kernels share its multiprocessors, so that the only difference is the
// splitting, the scheduling and the merging (more batches on more
// owners, each owner's upload of the batmaps, their streams). Every
// owner count's answer is checked against one owner's first; then the
// runs are timed round-robin (the order rotating each round), wall time
// of Count or Pairs from the batmaps in host memory to the answer. It
// prints the median, min and max per owner count, the ratio of the
// medians to one owner's, and of the last run the longest upload of an
// owner and the device time of the longest owner's kernels.
func BenchmarkOwners(b *testing.B) {
	needGPU(b)
	counts, err := intList(*ownersList)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := intList(*ownersN)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("%-22s %6s %7s %9s %9s %9s %6s %9s %9s  %s\n", "instance", "owners", "batches", "median ms", "min ms", "max ms", "ratio", "upload ms", "kernel ms", "last run's owners")
	for _, n := range ns {
		c, m := tidlists(n, 1)
		bm, err := batmap.Build(c, batmap.Config{Universe: uint64(m)})
		if err != nil {
			b.Fatal(err)
		}
		support := uint32(math.Ceil(0.003 * float64(m)))
		for _, mode := range strings.Split(*ownersModes, ",") {
			if mode == "pairs" && n > 16000 {
				continue
			}
			name := fmt.Sprintf("n=%d/%dbit/%s", n, bm.Layout.EntryBits, mode)
			runOnce := func(set *gpurt.Set, st *Stats) (int64, error) {
				opt := Options{MinCount: support, Stats: st}
				if mode == "count" {
					return Count(context.Background(), set, bm, opt)
				}
				var cnt atomic.Int64
				err := Pairs(context.Background(), set, bm, opt, func(_ int, ps []Pair) error {
					cnt.Add(int64(len(ps)))
					return nil
				})
				return cnt.Load(), err
			}
			sets := make([]*gpurt.Set, len(counts))
			want := int64(-1)
			for i, k := range counts {
				if sets[i], err = gpurt.OpenSet(make([]int, k)); err != nil {
					b.Fatal(err)
				}
				got, err := runOnce(sets[i], nil)
				if err != nil {
					b.Fatalf("%s, %d owners: %v", name, k, err)
				}
				if want < 0 {
					want = got
				} else if got != want {
					b.Fatalf("%s, %d owners: %d pairs, one owner %d", name, k, got, want)
				}
			}
			times := make([][]time.Duration, len(counts))
			last := make([]Stats, len(counts))
			for rep := range *ownersReps {
				for j := range counts {
					i := (j + rep) % len(counts)
					start := time.Now()
					if _, err := runOnce(sets[i], &last[i]); err != nil {
						b.Fatal(err)
					}
					times[i] = append(times[i], time.Since(start))
				}
			}
			base := median(times[0])
			for i, k := range counts {
				med := median(times[i])
				fmt.Printf("%-22s %6d %7d %9.1f %9.1f %9.1f %6.3f %9.1f %9.1f  %s\n", name, k, last[i].Batches, msOf(med), msOf(slices.Min(times[i])), msOf(slices.Max(times[i])),
					float64(med)/float64(base), msOf(last[i].Upload), msOf(last[i].KernelDev), last[i].Owners.Describe("batches"))
			}
		}
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }
