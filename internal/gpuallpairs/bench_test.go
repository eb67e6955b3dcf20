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

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

var (
	benchData  = flag.String("misi.data", "", "`dir`ectory holding fimi/ and ir/gcide/ (default: $XSECT_DATA, else ../shared/data beside the repository)")
	benchOnly  = flag.String("misi.only", "", "comma-separated shapes to run, or table1, table1-10k, table1-50k, table1-100k (default: the six shapes measured with the paper's code)")
	benchTechs = flag.String("misi.techs", "auto,mm,scancount,bitmap,bitmap-dynamic,merge", "comma-separated GPU techniques")
	benchReps  = flag.Int("misi.reps", 5, "timed runs per technique (the median is reported)")
	benchMax   = flag.Float64("misi.max", 3, "skip techniques estimated slower than this many seconds")
	benchTable = flag.String("misi.table", "", "also write the table to this `file`")
)

// shape is one all-pairs problem of the benchmarks: a data file, or a
// generated collection.
type shape struct {
	name    string
	file    string // under the data directory, or "" for synthetic
	largest int
	k       int
	avg     int
	u       uint64
	dist    synth.Dist
	// ms is the reference time: the paper's code on the H100 host for the
	// first six; for Table 1's look-alikes, the paper's best GPU time on
	// its Titan XP on the real data (Table A.2), only a rough guide.
	ms    float64
	group string // "" for the default shapes, else the opt-in group
}

// misiShapes are the all-pairs (MISI) problems of Bellas & Gounaris,
// "Exploiting GPUs for fast intersection of large sets", with the times of
// their code on the H100 host (its fastest technique, OBS; counts
// delivered to host memory), then look-alikes of its Table 1 real data
// sets: generated collections
// of the same number of sets, average size and universe, with Zipf
// elements (s = 0.9) for the skewed ones (click streams, e-mail words,
// communities, followers) and uniform ones for the dense WORDS.
var misiShapes = []shape{
	{name: "retail-10k", file: "fimi/retail.dat", largest: 10000, ms: 119},
	{name: "kosarak-10k", file: "fimi/kosarak_head36682.dat", largest: 10000, ms: 120},
	{name: "BMS2-10k", file: "fimi/BMS2.dat", largest: 10000, ms: 113},
	{name: "gcide-10k", file: "ir/gcide/gcide.docs.sets.gz", largest: 10000, ms: 205},
	{name: "uniform-1000x10k-1e6", k: 1000, avg: 10_000, u: 1_000_000, dist: synth.Uniform, ms: 62},
	{name: "zipf-1000x100k-1e7", k: 1000, avg: 100_000, u: 10_000_000, dist: synth.Zipf, ms: 773},

	{name: "BMS-10K", k: 10_000, avg: 35, u: 1_600, dist: synth.Zipf, ms: 220, group: "table1-10k"},
	{name: "ENRON-10K", k: 10_000, avg: 794, u: 1_100_000, dist: synth.Zipf, ms: 860, group: "table1-10k"},
	{name: "ORKUT-10K", k: 10_000, avg: 1001, u: 8_700_000, dist: synth.Zipf, ms: 590, group: "table1-10k"},
	{name: "TWITTER-10K", k: 10_000, avg: 150, u: 37_000, dist: synth.Zipf, ms: 990, group: "table1-10k"},
	{name: "WORDS-10K", k: 10_000, avg: 3494, u: 11_000, dist: synth.Uniform, ms: 1380, group: "table1-10k"},
	{name: "BMS-50K", k: 50_000, avg: 22, u: 1_600, dist: synth.Zipf, ms: 1840, group: "table1-50k"},
	{name: "ENRON-50K", k: 50_000, avg: 374, u: 1_100_000, dist: synth.Zipf, ms: 7090, group: "table1-50k"},
	{name: "ORKUT-50K", k: 50_000, avg: 984, u: 8_700_000, dist: synth.Zipf, ms: 7070, group: "table1-50k"},
	{name: "TWITTER-50K", k: 50_000, avg: 142, u: 37_000, dist: synth.Zipf, ms: 5980, group: "table1-50k"},
	{name: "WORDS-50K", k: 50_000, avg: 2396, u: 11_000, dist: synth.Uniform, ms: 13220, group: "table1-50k"},
	{name: "BMS-100K", k: 100_000, avg: 17, u: 1_600, dist: synth.Zipf, ms: 6960, group: "table1-100k"},
	{name: "ENRON-100K", k: 100_000, avg: 258, u: 1_100_000, dist: synth.Zipf, ms: 20360, group: "table1-100k"},
	{name: "ORKUT-100K", k: 100_000, avg: 905, u: 8_700_000, dist: synth.Zipf, ms: 24060, group: "table1-100k"},
	{name: "TWITTER-100K", k: 100_000, avg: 140, u: 37_000, dist: synth.Zipf, ms: 22250, group: "table1-100k"},
	{name: "WORDS-100K", k: 100_000, avg: 2021, u: 11_000, dist: synth.Uniform, ms: 43360, group: "table1-100k"},
}

// selected reports whether -misi.only (or only, for other benchmarks)
// selects sh: by name, by group, "table1" for every Table 1 shape; the
// default shapes when empty.
func selected(only string, sh shape) bool {
	if only == "" {
		return sh.group == ""
	}
	for _, w := range strings.Split(only, ",") {
		if w == sh.name || w == sh.group && w != "" || w == "table1" && strings.HasPrefix(sh.group, "table1") {
			return true
		}
	}
	return false
}

// load reads or generates sh's collection.
func (sh shape) load(tb testing.TB) (*sets.Collection, error) {
	if sh.file == "" {
		return synth.Generate(synth.Config{Sets: sh.k, Universe: sh.u, AvgSize: sh.avg, Dist: sh.dist, Seed: 1})
	}
	if *benchData != "" {
		return setio.Load(filepath.Join(*benchData, sh.file))
	}
	return setio.Load(settest.SharedData(tb, sh.file))
}

// benchTile is the caller's tile: 2048² counts, 16 MiB.
const benchTile = 2048

// BenchmarkMISI times, for each of misiShapes' all-pairs problems and
// each GPU technique, the whole path from the collection in host memory to
// every count in host memory: planning (selection, renumbering,
// statistics) plus the run, tiles of 2048×2048 handed to a callback that
// does nothing else. Every technique's counts are checked against the
// others' (a checksum of all tiles) before timing. Reported: the median
// of -misi.reps runs after a warm-up run, and the speedup over the time
// of the paper's code.
func BenchmarkMISI(b *testing.B) {
	needGPU(b)
	var rows []string
	add := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		rows = append(rows, line)
		fmt.Println(line)
	}
	add("%-22s %6s %9s %-15s %9s %9s %9s %8s  %s", "problem", "sets", "elements", "technique", "plan ms", "run ms", "total ms", "speedup", "paper ms / detail")
	for _, sh := range misiShapes {
		if !selected(*benchOnly, sh) {
			continue
		}
		c, err := sh.load(b)
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
			// Warm-up run, checked: every count, or for more than 12,500
			// sets the rows of every stride-th set (5·10^9 counts would
			// take seconds of one core per technique).
			var sum uint64
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

var (
	mmjOnly        = flag.String("mmjoin.only", "zipf-1000x100k-1e7,kosarak-10k,gcide-10k,retail-10k", "comma-separated shapes of BenchmarkMMJoin (names or groups, as -misi.only)")
	mmjTechs       = flag.String("mmjoin.techs", "cpu:mmjoin,gpu:mmjoin,gpu:auto,cpu:auto", "comma-separated device:technique pairs")
	mmjContainment = flag.String("mmjoin.containment", "", "containment degree of the query (default: pairs sharing an element)")
)

// BenchmarkMMJoin times MMJoin across devices against MMJoin on the CPU's
// threads and the planners' choices, counting qualifying pairs (no
// output): planning plus the run, median of -misi.reps after a checked
// warm-up.
func BenchmarkMMJoin(b *testing.B) {
	needGPU(b)
	q := allpairs.Query{MinOverlap: 1}
	if *mmjContainment != "" {
		r, err := allpairs.ParseRatio(*mmjContainment)
		if err != nil {
			b.Fatal(err)
		}
		q = allpairs.Query{Containment: r}
	}
	fmt.Printf("%-22s %-15s %9s %9s %9s %12s  %s\n", "problem", "technique", "plan ms", "run ms", "total ms", "pairs", "detail")
	for _, sh := range misiShapes {
		if !selected(*mmjOnly, sh) {
			continue
		}
		c, err := sh.load(b)
		if err != nil {
			b.Logf("%s: %v (skipped)", sh.name, err)
			continue
		}
		want := int64(-1)
		for _, dt := range strings.Split(*mmjTechs, ",") {
			dev, tech, _ := strings.Cut(dt, ":")
			o := allpairs.Options{Largest: sh.largest, Device: dev, Technique: tech}
			pl, err := allpairs.NewPlan(c, nil, q, o)
			if err != nil {
				fmt.Printf("%-22s %-15s cannot run: %v\n", sh.name, dt, err)
				continue
			}
			n, err := pl.Count(context.Background())
			if err != nil {
				b.Fatalf("%s/%s: %v", sh.name, dt, err)
			}
			if want < 0 {
				want = n
			} else if n != want {
				b.Errorf("%s/%s: %d pairs, others %d", sh.name, dt, n, want)
			}
			var plans, runs, totals []time.Duration
			for range *benchReps {
				start := time.Now()
				pl, err := allpairs.NewPlan(c, nil, q, o)
				if err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := pl.Count(context.Background()); err != nil {
					b.Fatal(err)
				}
				end := time.Now()
				plans, runs, totals = append(plans, mid.Sub(start)), append(runs, end.Sub(mid)), append(totals, end.Sub(start))
			}
			fmt.Printf("%-22s %-15s %9.1f %9.1f %9.1f %12d  %s on %s: %s\n", sh.name, dt, ms(median(plans)), ms(median(runs)), ms(median(totals)), n,
				pl.Chosen.Engine.Name(), pl.Chosen.Device.Kind, pl.Chosen.Estimate.Detail)
		}
	}
}
