// Command xsect-beam runs xsect's pair workloads on a cluster, as Apache
// Beam pipelines: the pair space is cut into tiles, each worker runs
// xsect's engine on its tiles (on its GPU or its CPU) and writes their
// lines, exactly as the xsect command prints them, to files named
// PREFIX-00003-of-00010. The in-process Prism runner is the default;
// --runner dataflow, flink or spark (with Beam's flags for them) runs on a
// cluster. See docs/BEAM.md.
//
// Usage:
//
//	xsect-beam allpairs|containment|pairs|simjoin --input FILE --output PREFIX [flags] [runner flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/beam/pipeline"
	"github.com/xsect/xsect/internal/flagalias"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/simjoin"
)

// Exit statuses, as the xsect command's.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one workload's subcommand.
type command struct {
	name, summary, help string
	// setup declares the workload's flags into job; the returned
	// function checks what the flags alone can tell, after parsing.
	setup func(fs *flag.FlagSet, job *pipeline.Job, support *string) func() error
}

var commands = []*command{
	{
		name:    "allpairs",
		summary: "the pairs of sets that share at least N elements (xsect allpairs)",
		help: `Computes |Si ∩ Sj| for every pair of sets of the collection --input (i < j),
or with --with for every pair of a set i of --input and a set j of FILE2, and
writes one line "i<TAB>j<TAB>overlap" for each pair with overlap >=
--min-overlap (default 1; 0 writes every pair), as xsect allpairs does.`,
		setup: func(fs *flag.FlagSet, job *pipeline.Job, _ *string) func() error {
			fs.IntVar(&job.MinOverlap, "min-overlap", 1, "report pairs sharing at least `N` elements")
			joinFlags(fs, job)
			return func() error {
				if job.MinOverlap < 0 {
					return fmt.Errorf("--min-overlap %d is negative", job.MinOverlap)
				}
				return nil
			}
		},
	},
	{
		name:    "containment",
		summary: "set containment join: pairs whose degree of containment reaches D (xsect containment)",
		help: `For every pair of nonempty sets of the collection --input (i < j), or with
--with of a set i of --input and a set j of FILE2, computes the degree of
containment |Si ∩ Sj| / min(|Si|, |Sj|) and writes one line
"i<TAB>j<TAB>degree" for each pair whose degree is at least --min-degree
(default 1: one set contains the other; a decimal or a fraction, compared
exactly), as xsect containment does.`,
		setup: func(fs *flag.FlagSet, job *pipeline.Job, _ *string) func() error {
			fs.StringVar(&job.MinDegree, "min-degree", "1", "report pairs with a degree of containment of at least `D`")
			joinFlags(fs, job)
			return func() error {
				if _, err := allpairs.ParseRatio(job.MinDegree); err != nil {
					return fmt.Errorf("--min-degree: %v", err)
				}
				return nil
			}
		},
	},
	{
		name:    "pairs",
		summary: "frequent pairs of items (xsect pairs)",
		help: `--input holds transactions, one a line (the FIMI format). Writes one line
"a<TAB>b<TAB>support" for every pair of items a < b that occur together in at
least --min-support transactions (a count, or a fraction of the transactions
when below 1: "0.001", "0.1%"), as xsect pairs does. The tiles are blocks of
item ids: a tile mines the transactions restricted to its items.`,
		setup: func(fs *flag.FlagSet, job *pipeline.Job, support *string) func() error {
			fs.StringVar(support, "min-support", "", "minimum support `S`: a count, or a fraction of the transactions below 1 (required)")
			fs.StringVar(&job.Technique, "technique", "auto", "technique `NAME`: auto, "+strings.Join(pairs.Techniques(), ", "))
			flagalias.Declare(fs, "technique", "engine")
			fs.BoolVar(&job.CountOnly, "count", false, "write only the number of frequent pairs")
			fs.BoolVar(&job.Sort, "sort", false, "sort the lines of each file by a, then b")
			commonFlags(fs, job, "print the tiling on standard error, and log each tile's plan on its worker")
			return func() error {
				if *support == "" {
					return errors.New("--min-support is required")
				}
				return nil
			}
		},
	},
	{
		name:    "simjoin",
		summary: "exact set similarity join: Jaccard, Cosine, Dice or overlap (xsect simjoin)",
		help: `Finds every pair of similar sets of the collection --input (i < j), or with
--with every similar pair of a set i of --input and a set j of FILE2, and
writes one line "i<TAB>j<TAB>similarity" for each, as xsect simjoin does
(--measure, an exact --threshold T, --distinct).`,
		setup: func(fs *flag.FlagSet, job *pipeline.Job, _ *string) func() error {
			fs.StringVar(&job.With, "with", "", "join --input with the collection `FILE2` (i indexes --input, j FILE2) instead of with itself")
			fs.StringVar(&job.Measure, "measure", "jaccard", "similarity `measure`: jaccard, cosine, dice or overlap")
			fs.StringVar(&job.Threshold, "threshold", "", "report pairs whose similarity is at least `T` (required)")
			fs.BoolVar(&job.Distinct, "distinct", false, "count equal sets once, as the smallest of their ids")
			fs.StringVar(&job.Technique, "technique", "auto", "technique `NAME` (an algorithm), or auto: "+strings.Join(simjoin.Techniques(), ", "))
			flagalias.Declare(fs, "technique", "algorithm")
			fs.BoolVar(&job.CountOnly, "count-only", false, "write only the number of pairs")
			fs.BoolVar(&job.Sort, "sort", false, "sort the lines of each file by i, then j")
			commonFlags(fs, job, "print the tiling on standard error, and log each tile's plan on its worker")
			return func() error { return nil }
		},
	},
}

// joinFlags declares the flags that allpairs and containment share.
func joinFlags(fs *flag.FlagSet, job *pipeline.Job) {
	fs.StringVar(&job.With, "with", "", "join --input with the collection `FILE2` (i indexes --input, j FILE2) instead of with itself")
	fs.BoolVar(&job.CountOnly, "count-only", false, "write only the number of pairs")
	fs.BoolVar(&job.Sort, "sort", false, "sort the lines of each file by i, then j")
	fs.IntVar(&job.Largest, "largest", 0, "keep only the `K` largest sets of each collection (ids stay the original ones)")
	fs.StringVar(&job.Technique, "technique", "auto", "technique `NAME`, or auto: "+strings.Join(allpairs.Techniques(), ", "))
	commonFlags(fs, job, "print the tiling on standard error, and log each tile's plan on its worker")
}

// The tile flags, bound by commonFlags.
var tileFlags struct {
	blocks        int
	pairs, output float64
	input, out    string
}

// commonFlags declares the flags of every workload: input, output, device,
// threads, memory, tiles.
func commonFlags(fs *flag.FlagSet, job *pipeline.Job, explain string) {
	fs.StringVar(&tileFlags.input, "input", "", "the collection `FILE` (a local path, or gs://, s3:// for a cluster's workers; required)")
	fs.StringVar(&tileFlags.out, "output", "", "write the tiles' lines to files `PREFIX`-00000-of-00010, ... (required)")
	fs.StringVar(&job.Device, "device", "auto", "device of each worker: cpu, gpu or auto")
	fs.StringVar(&job.GPUs, "gpus", "all", "GPUs of each worker to use: all, the first N, or a comma-separated `LIST` of ordinals (\"2,\" is GPU 2 alone)")
	fs.IntVar(&job.Threads, "threads", 0, "CPU threads of each worker, up to 4096 (0: one per core)")
	fs.Int64Var(&job.MemoryMiB, "memory", 0, "memory budget of each worker in `MiB` (0: half of its memory, or of its GOMEMLIMIT, address-space or cgroup limit when lower)")
	fs.BoolVar(&job.Explain, "explain", false, explain)
	fs.IntVar(&tileFlags.blocks, "tiles", 0, "cut each side of the pair space into `G` blocks (0: from the tile limits)")
	fs.Float64Var(&tileFlags.pairs, "tile-pairs", pipeline.DefaultLimits.TilePairs, "the most pairs a tile covers (0: the default; Inf: no limit)")
	fs.Float64Var(&tileFlags.output, "tile-output", pipeline.DefaultLimits.TileOutput, "the most lines a tile is expected to write, from an upper bound of the output (0: the default; Inf: no limit)")
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		// The runner starts this program as a worker (--worker and
		// Beam's other flags, no command): Beam's harness takes over.
		return worker(args, stderr)
	}
	if len(args) == 0 {
		io.WriteString(stderr, topUsage())
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		io.WriteString(stdout, topUsage())
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return runCommand(c, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "xsect-beam: unknown command %q\n\n%s", args[0], topUsage())
	return exitUsage
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

func topUsage() string {
	var b strings.Builder
	b.WriteString("xsect-beam: xsect's pair workloads as Apache Beam pipelines\n\n")
	b.WriteString("Usage: xsect-beam COMMAND --input FILE --output PREFIX [flags] [runner flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString("\nThe runner is Prism, in this process, unless --runner names another (dataflow,\nflink, spark, universal); docs/BEAM.md gives their flags.\n")
	b.WriteString("Run 'xsect-beam COMMAND --help' for a command's flags.\n")
	return b.String()
}

// worker hands the process to Beam's worker harness.
func worker(args []string, stderr io.Writer) int {
	flag.CommandLine.SetOutput(stderr)
	if err := flag.CommandLine.Parse(args); err != nil {
		return exitUsage
	}
	if f := flag.Lookup("worker"); f == nil || f.Value.String() != "true" {
		fmt.Fprintf(stderr, "xsect-beam: want a command first\n\n%s", topUsage())
		return exitUsage
	}
	beam.Init() // runs the harness, and exits
	return exitOK
}

// forward is a flag of the command that sets Beam's flag of the same name
// on the program's flag set, where Beam reads it and from which it passes
// the flags given to the workers.
type forward struct{ f *flag.Flag }

func (v forward) String() string {
	if v.f == nil {
		return ""
	}
	return v.f.Value.String()
}
func (v forward) Set(s string) error { return flag.CommandLine.Set(v.f.Name, s) }
func (v forward) IsBoolFlag() bool {
	b, ok := v.f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xsect-beam "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var job pipeline.Job
	job.Workload = c.name
	var support string
	check := c.setup(fs, &job, &support)
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	var runner []*flag.Flag
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if own[f.Name] {
			panic("xsect-beam: flag --" + f.Name + " is both xsect's and Beam's")
		}
		fs.Var(forward{f}, f.Name, f.Usage)
		runner = append(runner, f)
	})
	usage := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage: xsect-beam %s --input FILE --output PREFIX [flags] [runner flags]\n\n%s\n\n", c.name, c.help)
		b.WriteString(`The pair space is cut into tiles (blocks of rows by blocks of columns, sized
from the collection's statistics, or --tiles); each tile runs on a worker,
which reads the collections from their paths, and writes its lines to its
own file PREFIX-00003-of-00010 (with --count-only, the count to
PREFIX-00000-of-00001). Lines are those of the xsect command, in no
particular order unless --sort, which sorts each file. xsect's -o is
--output here and its FILE --input.

Flags:
`)
		sub := flag.NewFlagSet("", flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if !contains(runner, f.Name) {
				sub.Var(f.Value, f.Name, f.Usage)
			}
		})
		sub.SetOutput(&b)
		sub.PrintDefaults()
		b.WriteString("\nRunner flags (Apache Beam's; --runner prism, the default, needs none):\n")
		names := make([]string, 0, len(runner))
		for _, f := range runner {
			names = append(names, f.Name)
		}
		sort.Strings(names)
		line := " "
		for _, n := range names {
			if len(line)+len(n)+3 > 80 {
				b.WriteString(line + "\n")
				line = " "
			}
			line += " --" + n
		}
		b.WriteString(line + "\n")
		b.WriteString("See docs/BEAM.md for those of Dataflow, Flink and Spark.\n")
		return b.String()
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "xsect-beam %s: %v\n\n%s", c.name, err, usage())
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if _, err := io.WriteString(stdout, usage()); err != nil {
				fmt.Fprintf(stderr, "xsect-beam: %v\n", err)
				return exitFailure
			}
			return exitOK
		}
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q: the collection is --input FILE", fs.Arg(0)))
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if s, ok := g.Get().(string); ok && s == "" {
				err = fmt.Errorf("--%s: empty value", f.Name)
			}
		}
	})
	if err == nil {
		err = flagalias.Resolve(fs)
	}
	if err == nil {
		err = check()
	}
	if err == nil {
		job.Input, job.Output = tileFlags.input, tileFlags.out
		err = paths(&job)
	}
	if err == nil {
		err = job.Check()
	}
	if err != nil {
		return fail(err)
	}
	if err := checkOutput(tileFlags.out, job.Output); err != nil {
		fmt.Fprintf(stderr, "xsect-beam %s: %v\n", c.name, err)
		return exitUsage
	}
	// Quiet Prism's and Beam's own logs, unless asked to explain.
	beamlog.LogLevel = "warn"
	if job.Explain {
		beamlog.LogLevel = "info"
	}
	beam.Init()
	ctx := context.Background()
	start := time.Now()
	lim := pipeline.Limits{Blocks: tileFlags.blocks, TilePairs: tileFlags.pairs, TileOutput: tileFlags.output}
	tiles, grid, err := pipeline.Plan(ctx, &job, support, lim)
	if err != nil {
		fmt.Fprintf(stderr, "xsect-beam %s: %v\n", c.name, err)
		if pipeline.IsBadJob(err) {
			return exitUsage
		}
		return exitFailure
	}
	if job.Explain {
		fmt.Fprintf(stderr, "%splanned in %v\n", grid, time.Since(start).Round(time.Millisecond))
	}
	p, s := beam.NewPipelineWithRoot()
	pipeline.Build(s, job, tiles)
	start = time.Now()
	stop := catchSignals()
	err = makeRunTemp()
	if err == nil {
		err = beamx.Run(ctx, p)
	}
	stop()
	removeRunTemp()
	if err != nil {
		fmt.Fprintf(stderr, "xsect-beam %s: %v\n", c.name, err)
		return exitFailure
	}
	if job.Explain {
		fmt.Fprintf(stderr, "ran          %d tiles in %v\n", len(tiles), time.Since(start).Round(time.Millisecond))
	}
	return exitOK
}

func contains(fs []*flag.Flag, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// paths makes local paths absolute: workers may start elsewhere.
func paths(job *pipeline.Job) error {
	var err error
	for _, p := range []*string{&job.Input, &job.With, &job.Output} {
		if *p != "" && err == nil {
			*p, err = pipeline.LocalPath(*p)
		}
	}
	return err
}

// checkOutput refuses, before anything is read or run, an output prefix
// given as prefix (abs made absolute) whose files would not be where they
// are meant to be, or could not be written: otherwise this is found only
// when the tiles run, after the work, or never. A folder (DIR/, DIR/.,
// or an existing DIR) would get its files beside it (DIR-00000-of-00001),
// not in it: the name of the files is needed. A local folder must exist
// and take a new file, as xsect -o checks; a URL's bucket is the workers'
// to write, with their credentials, and is not tried here.
func checkOutput(prefix, abs string) error {
	base := filepath.Base(prefix)
	folder := strings.HasSuffix(prefix, "/") || strings.HasSuffix(prefix, string(filepath.Separator)) || base == "." || base == ".."
	if !folder && !pipeline.IsURL(abs) {
		st, err := os.Stat(abs)
		folder = err == nil && st.IsDir()
	}
	if folder {
		return fmt.Errorf("--output %s is a folder: name the files in it, as in --output DIR/NAME for DIR/NAME-00000-of-00010, ...", prefix)
	}
	if pipeline.IsURL(abs) {
		return nil
	}
	dir := filepath.Dir(abs)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--output %s: no folder %s", prefix, dir)
	}
	f, err := os.CreateTemp(dir, ".xsect-beam-probe-")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("--output %s: cannot create a file in %s: %w", prefix, dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
