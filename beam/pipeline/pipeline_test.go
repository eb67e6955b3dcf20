package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// xsectBin is the single-machine command, built by TestMain: the
// reference every pipeline's output is compared with.
var xsectBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xsect-beam-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	xsectBin = filepath.Join(dir, "xsect")
	if out, err := exec.Command("go", "build", "-o", xsectBin, "github.com/xsect/xsect/cmd/xsect").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building xsect: %v\n%s", err, out)
		os.Exit(1)
	}
	// Prism's loopback mode leaves a file beamloopbackworker-N in $TMPDIR
	// for every pipeline (the command gives its run a folder of its own):
	// here they go with the test's folder.
	os.Setenv("TMPDIR", dir)
	beamlog.LogLevel = "warn" // Prism's account of every job
	beam.Init()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// reference runs the xsect command and returns its lines, sorted.
func reference(t *testing.T, args ...string) []string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(xsectBin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xsect %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return sortedLines(string(out))
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// outputLines reads every file PREFIX-*-of-N (checking that there are N
// of them, and no temporary file left) and returns their lines, sorted.
func outputLines(t *testing.T, prefix string, n int) []string {
	t.Helper()
	files, err := filepath.Glob(prefix + "-*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n {
		t.Fatalf("%d files %s-*, want %d: %v", len(files), prefix, n, files)
	}
	var all strings.Builder
	for i := range n {
		b, err := os.ReadFile(FileName(prefix, i, n))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	return sortedLines(all.String())
}

// runPipeline plans job on Prism and returns the number of tiles.
func runPipeline(t *testing.T, job Job, support string, lim Limits) int {
	t.Helper()
	tiles, _, err := Plan(context.Background(), &job, support, lim)
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, job, tiles)
	if _, err := prism.Execute(context.Background(), p); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	return len(tiles)
}

func writeCollection(t testing.TB, path string, c *sets.Collection) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := setio.WriteText(f, c); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func randomCollection(rng *rand.Rand, k, universe int) *sets.Collection {
	c := sets.New()
	for range k {
		n := rng.IntN(10)
		if rng.IntN(10) == 0 {
			n = 0
		}
		s := settest.RandomSet(rng, n, 0, uint64(universe))
		if rng.IntN(8) == 0 && c.Len() > 0 {
			s = slices.Clone(c.Set(rng.IntN(c.Len())))
		}
		c.AddUnsorted(s)
	}
	return c
}

// One case: a job, and the xsect command line that gives the same lines.
type pipelineCase struct {
	name    string
	job     Job
	support string
	args    []string
}

func cases(in, with string) []pipelineCase {
	return []pipelineCase{
		{"allpairs", Job{Workload: "allpairs", Input: in, MinOverlap: 1}, "", []string{"allpairs", in}},
		{"allpairs-0", Job{Workload: "allpairs", Input: in, MinOverlap: 0, Sort: true}, "", []string{"allpairs", "--min-overlap", "0", in}},
		{"allpairs-largest", Job{Workload: "allpairs", Input: in, MinOverlap: 2, Largest: 50}, "", []string{"allpairs", "--min-overlap", "2", "--largest", "50", in}},
		{"allpairs-with", Job{Workload: "allpairs", Input: in, With: with, MinOverlap: 1}, "", []string{"allpairs", in, "--with", with}},
		{"allpairs-count", Job{Workload: "allpairs", Input: in, MinOverlap: 2, CountOnly: true}, "", []string{"allpairs", "--min-overlap", "2", "--count-only", in}},
		{"containment", Job{Workload: "containment", Input: in, MinDegree: "2/3"}, "", []string{"containment", "--min-degree", "2/3", in}},
		{"containment-with", Job{Workload: "containment", Input: in, With: with, MinDegree: "1", Sort: true}, "", []string{"containment", in, "--with", with}},
		{"pairs", Job{Workload: "pairs", Input: in}, "3", []string{"pairs", "--min-support", "3", in}},
		{"pairs-fraction", Job{Workload: "pairs", Input: in, Sort: true, Technique: "eclat"}, "0.02", []string{"pairs", "--min-support", "0.02", in}},
		{"pairs-count", Job{Workload: "pairs", Input: in, CountOnly: true}, "2", []string{"pairs", "--min-support", "2", "--count", in}},
		{"simjoin", Job{Workload: "simjoin", Input: in, Measure: "jaccard", Threshold: "0.5"}, "", []string{"simjoin", "--threshold", "0.5", in}},
		{"simjoin-distinct", Job{Workload: "simjoin", Input: in, Measure: "cosine", Threshold: "0.7", Distinct: true}, "", []string{"simjoin", "--measure", "cosine", "--threshold", "0.7", "--distinct", in}},
		{"simjoin-with", Job{Workload: "simjoin", Input: in, With: with, Measure: "overlap", Threshold: "2"}, "", []string{"simjoin", "--measure", "overlap", "--threshold", "2", in, "--with", with}},
		{"simjoin-count", Job{Workload: "simjoin", Input: in, Measure: "dice", Threshold: "0.6", CountOnly: true}, "", []string{"simjoin", "--measure", "dice", "--threshold", "0.6", "--count-only", in}},
		{"simjoin-sort", Job{Workload: "simjoin", Input: in, With: with, Measure: "jaccard", Threshold: "0.4", Sort: true}, "", []string{"simjoin", "--threshold", "0.4", in, "--with", with}},
	}
}

// Every workload's pipeline on Prism writes the lines of the xsect
// command, over grids of several shapes.
func TestPipelineRandom(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 4))
	in, with := filepath.Join(dir, "r.sets"), filepath.Join(dir, "s.sets")
	writeCollection(t, in, randomCollection(rng, 300, 60))
	writeCollection(t, with, randomCollection(rng, 120, 60))
	for i, tc := range cases(in, with) {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job
			job.Output = filepath.Join(dir, tc.name, "out")
			os.MkdirAll(filepath.Dir(job.Output), 0o755)
			job.Threads = 1 + i%2
			n := runPipeline(t, job, tc.support, Limits{Blocks: 1 + i%4})
			if job.CountOnly {
				n = 1
			} else if i%4 > 0 && n < 2 {
				t.Fatalf("%d blocks made %d tiles", 1+i%4, n)
			}
			got := outputLines(t, job.Output, n)
			if job.Sort {
				for i := range n {
					checkSorted(t, FileName(job.Output, i, n))
				}
			}
			want := reference(t, tc.args...)
			if !slices.Equal(got, want) {
				t.Fatalf("%d tiles: %d lines, xsect %d", n, len(got), len(want))
			}
			t.Logf("%d tiles, %d lines", n, len(want))
			if len(want) == 0 || len(want) == 1 && want[0] == "0" {
				t.Fatalf("xsect %v found nothing: the case proves little", tc.args)
			}
		})
	}
}

// A tile run again (a runner's retry) writes the same lines under the
// same name, replacing the file; no temporary file stays.
func TestTileRetry(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 5))
	in := filepath.Join(dir, "r.sets")
	writeCollection(t, in, randomCollection(rng, 200, 40))
	job := Job{Workload: "allpairs", Input: in, Output: filepath.Join(dir, "out"), MinOverlap: 1}
	tiles, _, err := Plan(context.Background(), &job, "", Limits{Blocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	tile := tiles[1] // off the diagonal
	name := FileName(job.Output, tile.Index, tile.Tiles)
	os.WriteFile(name, []byte("left by an attempt that failed\n"), 0o644)
	var first []string
	for attempt := range 3 {
		n, err := RunTile(context.Background(), &job, tile)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := sortedLines(string(b))
		if int64(len(lines)) != n || n == 0 {
			t.Fatalf("attempt %d: %d lines, %d pairs counted", attempt, len(lines), n)
		}
		if attempt == 0 {
			first = lines
		} else if !slices.Equal(lines, first) {
			t.Fatalf("attempt %d wrote other lines", attempt)
		}
	}
	if left, _ := filepath.Glob(name + partial + "*"); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A worker that reads another collection than the launcher planned with
// fails the tile instead of mixing the two.
func TestChangedInput(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 6))
	in := filepath.Join(dir, "r.sets")
	writeCollection(t, in, randomCollection(rng, 50, 40))
	job := Job{Workload: "allpairs", Input: in, Output: filepath.Join(dir, "out"), MinOverlap: 1}
	tiles, _, err := Plan(context.Background(), &job, "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	writeCollection(t, in, randomCollection(rng, 50, 40))
	forget(in) // as a worker process that reads it afresh
	_, err = RunTile(context.Background(), &job, tiles[0])
	if err == nil || !strings.Contains(err.Error(), "not the collection the pipeline was planned with") {
		t.Fatalf("got %v", err)
	}
	forget(in)
}

// Plans are deterministic, cover the pair space with tiles that respect
// the limits, and cut more where the limits are lower.
func TestPlanGrid(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 7))
	in, with := filepath.Join(dir, "r.sets"), filepath.Join(dir, "s.sets")
	writeCollection(t, in, randomCollection(rng, 1000, 500))
	writeCollection(t, with, randomCollection(rng, 100, 500))
	for _, tc := range []struct {
		job     Job
		support string
		lim     Limits
		tiles   int // the number wanted, or 0 for "more than one"
	}{
		{Job{Workload: "allpairs", MinOverlap: 1}, "", Limits{}, 1},
		{Job{Workload: "allpairs", MinOverlap: 1}, "", Limits{Blocks: 4}, 10},
		{Job{Workload: "allpairs", MinOverlap: 1, With: with}, "", Limits{Blocks: 3}, 9},
		{Job{Workload: "allpairs", MinOverlap: 0}, "", Limits{TilePairs: 1e4}, 0},
		{Job{Workload: "allpairs", MinOverlap: 1}, "", Limits{TileOutput: 1e3}, 0},
		{Job{Workload: "allpairs", MinOverlap: 1, With: with}, "", Limits{TilePairs: 1e4}, 0},
		{Job{Workload: "pairs"}, "2", Limits{TilePairs: 1e3}, 0},
		{Job{Workload: "simjoin", Measure: "jaccard", Threshold: "0.5"}, "", Limits{TilePairs: 1e4}, 0},
	} {
		job := tc.job
		job.Input, job.Output = in, filepath.Join(dir, "out")
		tiles, g, err := Plan(context.Background(), &job, tc.support, tc.lim)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := Plan(context.Background(), &job, tc.support, tc.lim)
		if !slices.Equal(tiles, again) {
			t.Errorf("%+v: two plans differ", tc)
		}
		if tc.tiles > 0 && len(tiles) != tc.tiles || tc.tiles == 0 && len(tiles) < 2 {
			t.Errorf("%s %+v: %d tiles:\n%s", job.Workload, tc.lim, len(tiles), g)
		}
		// Blocks follow one another from 0, the last unbounded or at
		// the end; in a self-join rows and columns are one cut.
		for _, blocks := range [][]sets.Range{g.Rows, g.Cols} {
			for i, b := range blocks {
				if i == 0 && b.Lo != 0 || i > 0 && b.Lo != blocks[i-1].Hi || b.Hi != 0 && b.Hi <= b.Lo {
					t.Errorf("%s %+v: blocks %v", job.Workload, tc.lim, blocks)
				}
			}
		}
		if tc.lim.TilePairs > 0 && job.Workload == "allpairs" && job.With == "" {
			// A block of kept sets holds about k/blocks of them.
			k := float64(g.Kept[0])
			per := k / float64(len(g.Rows))
			if per*per > 4*tc.lim.TilePairs {
				t.Errorf("%+v: blocks of about %.0f sets, tiles of %.0f pairs", tc.lim, per, per*per)
			}
		}
		for i, tile := range tiles {
			if tile.Index != i || tile.Tiles != len(tiles) {
				t.Errorf("tile %d: %+v", i, tile)
			}
		}
	}
}

// Limits that mean nothing are bad usage, and so are grids of more than
// maxTiles tiles: one that --tiles asks for is refused before the
// collection is read (the input here does not exist), one from the limits
// before its tiles are listed (which took gigabytes on a real collection).
// A zero limit is the default, +Inf none.
func TestPlanLimits(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 8))
	in, missing := filepath.Join(dir, "r.sets"), filepath.Join(dir, "missing.sets")
	writeCollection(t, in, randomCollection(rng, 1000, 500))
	inf := math.Inf(1)
	for _, tc := range []struct {
		input, with string
		lim         Limits
		want        string // in the error, or "" for a plan of one tile
	}{
		{missing, "", Limits{Blocks: 447}, "--tiles 447: over 100000 tiles: at most 446 blocks a side"},
		{missing, "", Limits{Blocks: 1 << 62}, "--tiles 4611686018427387904: over 100000 tiles"},
		{missing, "", Limits{Blocks: 446}, "missing.sets"},
		{missing, missing, Limits{Blocks: 317}, "--tiles 317: over 100000 tiles: at most 316 blocks a side"},
		{missing, missing, Limits{Blocks: 316}, "missing.sets"},
		{missing, "", Limits{Blocks: -1}, "--tiles -1 is negative"},
		{missing, "", Limits{TilePairs: math.NaN()}, "--tile-pairs NaN: want a positive number (0: the default)"},
		{missing, "", Limits{TileOutput: -1}, "--tile-output -1: want a positive number (0: the default)"},
		{in, "", Limits{TileOutput: math.NaN()}, "--tile-output NaN"},
		{in, "", Limits{TilePairs: 1}, "tiles, over 100000: raise --tile-pairs or --tile-output"},
		{in, "", Limits{TilePairs: 1e-300}, "tiles, over 100000: raise --tile-pairs or --tile-output"},
		{in, in, Limits{TilePairs: 1e-300}, "tiles, over 100000: raise --tile-pairs or --tile-output"},
		{in, "", Limits{TilePairs: inf, TileOutput: inf}, ""},
		{in, "", Limits{TilePairs: 0, TileOutput: 0}, ""},
	} {
		job := Job{Workload: "allpairs", MinOverlap: 1, Input: tc.input, With: tc.with, Output: filepath.Join(dir, "out")}
		Plan(context.Background(), &Job{Workload: "allpairs", MinOverlap: 1, Input: in, Output: job.Output}, "", Limits{}) // loads in once
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tiles, _, err := Plan(context.Background(), &job, "", tc.lim)
		runtime.ReadMemStats(&after)
		switch {
		case tc.want == "" && (err != nil || len(tiles) != 1):
			t.Errorf("%+v: %d tiles, %v; want one", tc.lim, len(tiles), err)
		case tc.want != "" && (err == nil || !IsBadJob(err) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %d tiles, error %v; want a bad job with %q", tc.lim, len(tiles), err, tc.want)
		case tc.want != "" && after.TotalAlloc-before.TotalAlloc > 4<<20:
			t.Errorf("%+v: refused after allocating %d MiB", tc.lim, (after.TotalAlloc-before.TotalAlloc)>>20)
		}
	}
}

// checkSorted fails unless the lines of the file are sorted by their first
// two numbers.
func checkSorted(t *testing.T, name string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var last [2]int
	for k, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var i, j int
		if line == "" {
			continue
		}
		if _, err := fmt.Sscanf(line, "%d\t%d", &i, &j); err != nil {
			t.Fatalf("%s:%d: %v", name, k+1, err)
		}
		if k > 0 && (i < last[0] || i == last[0] && j <= last[1]) {
			t.Fatalf("%s:%d: %d %d after %d %d", name, k+1, i, j, last[0], last[1])
		}
		last = [2]int{i, j}
	}
}

// A worker's default budget is the process's, which GOMEMLIMIT (like a
// container's limit) lowers: a tile whose collection takes more than half
// of it cannot run, and --memory sets the budget instead.
func TestWorkerBudget(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.sets")
	c := sets.New()
	for i := range 64 {
		s := make([]uint32, 8192)
		for x := range s {
			s[x] = uint32(i*8192 + x)
		}
		c.Add(s)
	}
	writeCollection(t, in, c)
	job := Job{Workload: "allpairs", Input: in, Output: filepath.Join(dir, "out"), MinOverlap: 1, CountOnly: true}
	tiles, _, err := Plan(context.Background(), &job, "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(4 << 20))
	if _, err := RunTile(context.Background(), &job, tiles[0]); !errors.Is(err, allpairs.ErrOverBudget) {
		t.Errorf("GOMEMLIMIT 4 MiB: %v, want over budget", err)
	}
	job.MemoryMiB = 256
	if n, err := RunTile(context.Background(), &job, tiles[0]); err != nil || n != 0 {
		t.Errorf("--memory 256: %d pairs, %v", n, err)
	}
}

// A sorted tile whose pairs take more than the worker's budget spills
// them to temporary files under $TMPDIR (with none there, it fails saying
// so) rather than hold them, and writes exactly the sorted lines of the
// xsect command, leaving nothing in $TMPDIR.
func TestSortedTileSpills(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, 8))
	c := sets.New()
	for range 2500 {
		// Element 0 in most sets: millions of pairs.
		var s []uint32
		if rng.IntN(10) > 0 {
			s = append(s, 0)
		}
		for range rng.IntN(6) {
			s = append(s, 1+rng.Uint32N(300))
		}
		c.AddUnsorted(s)
	}
	in := filepath.Join(dir, "r.sets")
	writeCollection(t, in, c)
	for _, tc := range []struct {
		job  Job
		args []string
	}{
		{Job{Workload: "allpairs", MinOverlap: 1}, []string{"allpairs"}},
		{Job{Workload: "simjoin", Measure: "jaccard", Threshold: "0.05"}, []string{"simjoin", "--threshold", "0.05"}},
	} {
		job := tc.job
		job.Input, job.Output, job.Sort, job.MemoryMiB = in, filepath.Join(dir, job.Workload), true, 8
		tiles, _, err := Plan(context.Background(), &job, "", Limits{Blocks: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
		if _, err := RunTile(context.Background(), &job, tiles[0]); err == nil || !strings.Contains(err.Error(), "set TMPDIR") {
			t.Fatalf("%s without a TMPDIR: %v, want the sort's error", job.Workload, err)
		}
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		if _, err := RunTile(context.Background(), &job, tiles[0]); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(FileName(job.Output, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		want, err := exec.Command(xsectBin, append(tc.args, in, "--sort")...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || len(want) < 20<<20 {
			t.Errorf("%s: %d bytes, want the %d of xsect --sort", job.Workload, len(got), len(want))
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: left %d entries in TMPDIR", job.Workload, len(left))
		}
	}
}
