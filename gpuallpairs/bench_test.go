package gpuallpairs

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

var (
	benchData  = flag.String("seed001.data", "", "`dir`ectory holding fimi/ and ir/gcide/ (default: $XSECT_DATA, else /work/shared/data)")
	benchOnly  = flag.String("seed001.only", "", "comma-separated shapes to run (default all)")
	benchTechs = flag.String("seed001.techs", "auto,mm,scancount,bitmap,bitmap-dynamic,merge", "comma-separated GPU techniques")
	benchReps  = flag.Int("seed001.reps", 5, "timed runs per technique (the median is reported)")
	benchMax   = flag.Float64("seed001.max", 3, "skip techniques estimated slower than this many seconds")
	benchTable = flag.String("seed001.table", "", "also write the table to this `file`")
)

// seed001 is seed 001's all-pairs setup with its published times on this
// H100 (its fastest technique, OBS; counts delivered to host memory).
var seed001 = []struct {
	name    string
	file    string // under the data directory, or "" for synthetic
	largest int
	k       int
	avg     int
	u       uint64
	dist    synth.Dist
	ms      float64
}{
	{"retail-10k", "fimi/retail.dat", 10000, 0, 0, 0, 0, 119},
	{"kosarak-10k", "fimi/kosarak_head36682.dat", 10000, 0, 0, 0, 0, 120},
	{"BMS2-10k", "fimi/BMS2.dat", 10000, 0, 0, 0, 0, 113},
	{"gcide-10k", "ir/gcide/gcide.docs.sets.gz", 10000, 0, 0, 0, 0, 205},
	{"uniform-1000x10k-1e6", "", 0, 1000, 10_000, 1_000_000, synth.Uniform, 62},
	{"zipf-1000x100k-1e7", "", 0, 1000, 100_000, 10_000_000, synth.Zipf, 773},
}

func dataDir() string {
	if *benchData != "" {
		return *benchData
	}
	if d := os.Getenv("XSECT_DATA"); d != "" {
		return d
	}
	return "/work/shared/data"
}

// benchTile is the caller's tile: 2048² counts, 16 MiB.
const benchTile = 2048

// BenchmarkSeed001 times, for each of seed 001's all-pairs problems and
// each GPU technique, the whole path from the collection in host memory to
// every count in host memory: planning (selection, renumbering,
// statistics) plus the run, tiles of 2048×2048 handed to a callback that
// does nothing else. Every technique's counts are checked against the
// others' (a checksum of all tiles) before timing. Reported: the median
// of -seed001.reps runs after a warm-up run, and the speedup over seed
// 001's published time.
func BenchmarkSeed001(b *testing.B) {
	needGPU(b)
	var rows []string
	add := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		rows = append(rows, line)
		fmt.Println(line)
	}
	add("%-22s %6s %9s %-15s %9s %9s %9s %8s  %s", "problem", "sets", "elements", "technique", "plan ms", "run ms", "total ms", "speedup", "seed001 ms / detail")
	for _, sh := range seed001 {
		if *benchOnly != "" && !slices.Contains(strings.Split(*benchOnly, ","), sh.name) {
			continue
		}
		var c *sets.Collection
		var err error
		if sh.file != "" {
			c, err = setio.Load(filepath.Join(dataDir(), sh.file))
		} else {
			c, err = synth.Generate(synth.Config{Sets: sh.k, Universe: sh.u, AvgSize: sh.avg, Dist: sh.dist, Seed: 1})
		}
		if err != nil {
			b.Logf("%s: %v (skipped)", sh.name, err)
			continue
		}
		opt := allpairs.Options{Largest: sh.largest}
		var sums []uint64
		for _, tech := range strings.Split(*benchTechs, ",") {
			o := opt
			o.Device, o.Technique = "gpu", tech
			pl, err := allpairs.NewTilePlan(c, nil, benchTile, benchTile, o)
			if err != nil {
				add("%-22s %6s %9s %-15s cannot run: %v", sh.name, "", "", tech, err)
				continue
			}
			if pl.Chosen.Estimate.Seconds > *benchMax {
				add("%-22s %6s %9s %-15s skipped: estimated %.2f s", sh.name, "", "", tech, pl.Chosen.Estimate.Seconds)
				continue
			}
			// Warm-up run, checked.
			var sum uint64
			err = pl.Tiles(context.Background(), func(t *allpairs.Tile) error {
				for x := 0; x < t.Rows; x++ {
					for y := 0; y < t.Cols; y++ {
						v := uint64(t.Counts[x*t.Cols+y])
						sum += v * (uint64(t.RowIDs[x])*0x9E3779B97F4A7C15 ^ uint64(t.ColIDs[y])*0xC2B2AE3D27D4EB4F)
					}
				}
				return nil
			})
			if err != nil {
				b.Fatalf("%s/%s: %v", sh.name, tech, err)
			}
			sums = append(sums, sum)
			if sums[0] != sum {
				b.Errorf("%s/%s: checksum %x, other techniques %x", sh.name, tech, sum, sums[0])
			}
			var plans, runs, totals []time.Duration
			for range *benchReps {
				start := time.Now()
				pl, err := allpairs.NewTilePlan(c, nil, benchTile, benchTile, o)
				if err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := pl.Tiles(context.Background(), func(*allpairs.Tile) error { return nil }); err != nil {
					b.Fatal(err)
				}
				end := time.Now()
				plans, runs, totals = append(plans, mid.Sub(start)), append(runs, end.Sub(mid)), append(totals, end.Sub(start))
			}
			st := pl.Problem.Stats
			total := median(totals)
			add("%-22s %6d %9d %-15s %9.1f %9.1f %9.1f %7.1fx  %.0f / %s: %s", sh.name, st.R.Sets, st.R.Elements, tech,
				ms(median(plans)), ms(median(runs)), ms(total), sh.ms/ms(total), sh.ms, pl.Chosen.Engine.Name(), pl.Chosen.Estimate.Detail)
		}
	}
	if *benchTable != "" {
		os.WriteFile(*benchTable, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
