package pipeline

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/internal/membudget"
	"github.com/xsect/xsect/internal/pairsort"
	sj "github.com/xsect/xsect/internal/simjoin"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// tileMu runs one tile at a time in a process: each tile's engine uses
// every core (or the GPU) and its own memory budget, and a runner that
// hands a worker several bundles at once would otherwise multiply both.
var tileMu sync.Mutex

// RunTile runs tile t of job on this machine and, unless the job only
// counts, writes its lines to the tile's file (written under a temporary
// name, then renamed: a tile run again replaces it whole). It returns the
// number of pairs.
func RunTile(ctx context.Context, job *Job, t Tile) (int64, error) {
	r, err := input(ctx, job.Input, job.InputSum)
	if err != nil {
		return 0, err
	}
	var s *sets.Collection
	if job.With != "" {
		if s, err = input(ctx, job.With, job.WithSum); err != nil {
			return 0, err
		}
	}
	tileMu.Lock()
	defer tileMu.Unlock()
	start := time.Now()
	var out *tileFile
	if !job.CountOnly {
		if out, err = createFile(ctx, FileName(job.Output, t.Index, t.Tiles)); err != nil {
			return 0, err
		}
		defer out.abort(ctx)
	}
	rows, cols := sets.Range{Lo: t.RowLo, Hi: t.RowHi}, sets.Range{Lo: t.ColLo, Hi: t.ColHi}
	// The worker's budget is --memory, or by default the process's, which
	// heeds a container's limit as the xsect command does; the tile gets
	// what the collections leave.
	budget := membudget.Process()
	if job.MemoryMiB > 0 {
		budget = membudget.Budget{Bytes: job.MemoryMiB << 20, Source: "--memory"}
	}
	memory := budget.Left(bytesOf(r) + bytesOf(s)).Bytes
	gpus, err := gpu.ParseGPUs(job.GPUs)
	if err != nil {
		return 0, badJob("--%v", err)
	}
	var n int64
	var how string
	switch job.Workload {
	case "allpairs", "containment":
		n, how, err = runJoin(ctx, job, r, s, rows, cols, memory, gpus, out)
	case "pairs":
		n, how, err = runPairs(ctx, job, r, rows, cols, memory, gpus, out)
	case "simjoin":
		n, how, err = runSim(ctx, job, r, s, rows, cols, memory, gpus, out)
	default:
		err = badJob("unknown workload %q", job.Workload)
	}
	if err == nil && out != nil {
		err = out.commit(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("tile %d of %d (rows %v, cols %v): %w", t.Index, t.Tiles, rows, cols, err)
	}
	if job.Explain {
		log.Infof(ctx, "xsect: tile %d of %d (rows %v, cols %v): %d pairs by %s in %v", t.Index, t.Tiles, rows, cols, n, how, time.Since(start).Round(time.Millisecond))
	}
	return n, nil
}

// input loads a collection and checks that it is the one the launcher
// planned with.
func input(ctx context.Context, path string, want uint64) (*sets.Collection, error) {
	c, sum, err := Load(ctx, path)
	if err != nil {
		return nil, err
	}
	if want != 0 && sum != want {
		return nil, fmt.Errorf("%s: not the collection the pipeline was planned with (checksum %016x, want %016x): was it changed?", path, sum, want)
	}
	return c, nil
}

func bytesOf(c *sets.Collection) int64 {
	if c == nil {
		return 0
	}
	return 8*int64(len(c.Offsets)) + 4*int64(len(c.Elements))
}

// explain logs a plan's explanation on the worker.
func explain(ctx context.Context, job *Job, write func(io.Writer) error) {
	if !job.Explain {
		return
	}
	var b strings.Builder
	if err := write(&b); err == nil {
		log.Info(ctx, b.String())
	}
}

// batches formats batches of pairs on the goroutines that find them and
// writes each whole to the tile's file.
type batches[P any] struct {
	out    *tileFile
	format func([]byte, []P) []byte
	n      atomic.Int64
	pool   sync.Pool
}

func (w *batches[P]) add(ps []P) error {
	w.n.Add(int64(len(ps)))
	bp, _ := w.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp = w.format((*bp)[:0], ps)
	err := w.out.write(*bp)
	w.pool.Put(bp)
	return err
}

// tileLines says how a workload's pairs become lines: format makes the
// lines of pairs as they come. A sorted tile goes through a
// pairsort.Sorter, which holds sets.Pair: sortable hands the pairs on to
// its Add, and sorted makes the lines of what it returns.
type tileLines[P any] struct {
	format   func([]byte, []P) []byte
	sortable func(add func([]sets.Pair) error) func([]P) error
	sorted   func([]byte, []sets.Pair) []byte
}

// setPairLines are the tileLines of the workloads whose pairs are
// sets.Pair, sorted as they are.
func setPairLines(format func([]byte, []sets.Pair) []byte) tileLines[sets.Pair] {
	return tileLines[sets.Pair]{
		format:   format,
		sortable: func(add func([]sets.Pair) error) func([]sets.Pair) error { return add },
		sorted:   format,
	}
}

// planMemory is what a tile's plan may use of the memory its budget
// leaves: all of it, less a sort's least buffers when the lines are
// sorted (the sort takes what the plan does not use).
func planMemory(job *Job, memory int64) int64 {
	if job.Sort && !job.CountOnly {
		return max(memory-pairsort.MinBudget, membudget.MinBytes)
	}
	return memory
}

func runJoin(ctx context.Context, job *Job, r, s *sets.Collection, rows, cols sets.Range, memory int64, gpus []int, out *tileFile) (int64, string, error) {
	q := allpairs.Query{MinOverlap: job.MinOverlap}
	degree := job.Workload == "containment"
	if degree {
		d, err := allpairs.ParseRatio(job.MinDegree)
		if err != nil {
			return 0, "", badJob("--min-degree: %v", err)
		}
		q = allpairs.Query{Containment: d}
	}
	plan, err := allpairs.NewPlan(r, s, q, allpairs.Options{Device: job.Device, Technique: job.Technique, Threads: job.Threads,
		Largest: job.Largest, Memory: planMemory(job, memory), GPUs: gpus, Rows: rows, Cols: cols, CountOnly: job.CountOnly})
	if plan != nil {
		explain(ctx, job, plan.Explain)
	}
	if err != nil {
		return 0, "", err
	}
	how := plan.Technique() + " on " + plan.Device()
	n, err := runPlan(ctx, job, plan, out, memory, setPairLines(func(b []byte, ps []allpairs.Pair) []byte {
		return allpairs.AppendLines(b, ps, r, s, degree)
	}))
	return n, how, err
}

// tilePlan is what the workloads' plans (allpairs, pairs, simjoin) offer
// to run a tile.
type tilePlan[P any] interface {
	Count(ctx context.Context) (int64, error)
	Join(ctx context.Context, fn func([]P) error) error
	Memory() int64
}

// runPlan runs a tile's plan as the job asks: counting only, writing its
// pairs sorted, or writing them in batches as they come, lines made as
// lines says. A sort uses what the plan leaves of memory bytes, spilling
// to temporary files past it, so that a tile's output need not fit in
// memory. It returns the number of pairs.
func runPlan[P any](ctx context.Context, job *Job, plan tilePlan[P], out *tileFile, memory int64, lines tileLines[P]) (int64, error) {
	switch {
	case job.CountOnly:
		return plan.Count(ctx)
	case job.Sort:
		s := pairsort.New(memory - plan.Memory())
		if err := plan.Join(ctx, lines.sortable(s.Add)); err != nil {
			s.Close()
			return s.Len(), err
		}
		return s.Len(), s.WriteLines(out, lines.sorted)
	}
	w := &batches[P]{out: out, format: lines.format}
	err := plan.Join(ctx, w.add)
	return w.n.Load(), err
}

func runPairs(ctx context.Context, job *Job, tx *sets.Collection, rows, cols sets.Range, memory int64, gpus []int, out *tileFile) (int64, string, error) {
	plan, err := pairs.NewPlan(tx, pairs.Options{MinSupport: job.MinSupport, Technique: job.Technique, Device: job.Device,
		Threads: job.Threads, Memory: planMemory(job, memory), CountOnly: job.CountOnly, GPUs: gpus, Rows: rows, Cols: cols})
	if plan != nil {
		explain(ctx, job, plan.Explain)
	}
	if err != nil {
		return 0, "", err
	}
	how := plan.Technique() + " on " + plan.Device()
	n, err := runPlan(ctx, job, plan, out, memory, setPairLines(pairs.AppendLines))
	return n, how, err
}

func runSim(ctx context.Context, job *Job, r, s *sets.Collection, rows, cols sets.Range, memory int64, gpus []int, out *tileFile) (int64, string, error) {
	th, err := job.simThreshold()
	if err != nil {
		return 0, "", err
	}
	plan, err := simjoin.NewPlan(r, s, simjoin.Options{Threshold: th, Technique: job.Technique, Device: job.Device, Threads: job.Threads,
		Distinct: job.Distinct, Memory: planMemory(job, memory), GPUs: gpus, Rows: rows, Cols: cols})
	if plan != nil {
		explain(ctx, job, plan.Explain)
	}
	if err != nil {
		return 0, "", err
	}
	how := plan.Technique() + " on " + plan.Device()
	n, err := runPlan(ctx, job, plan, out, memory, tileLines[simjoin.Pair]{
		format: func(b []byte, ps []simjoin.Pair) []byte { return simjoin.AppendLines(b, ps, th.Measure) },
		// Sorted with their overlap as the count: 12 bytes a pair.
		sortable: sj.Overlaps,
		sorted: func(b []byte, ps []sets.Pair) []byte {
			for _, p := range ps {
				one := [1]simjoin.Pair{sj.FromOverlap(p, r, s, th.Measure)}
				b = simjoin.AppendLines(b, one[:], th.Measure)
			}
			return b
		},
	})
	return n, how, err
}

// tileFile is an output file being written under a temporary name in the
// same folder, renamed to its name by commit. Its writes are safe for
// concurrent use.
type tileFile struct {
	fsys      filesystem.Interface
	name, tmp string
	wc        io.WriteCloser
	mu        sync.Mutex
	bw        *bufio.Writer
	done      bool
}

// partial marks the temporary names: NAME.partial-RANDOM.
const partial = ".partial-"

// writing are the files this process is writing, which Abandon removes.
// The lock is held while a file is created, so that none is created
// unseen by Abandon.
var writing struct {
	sync.Mutex
	files map[*tileFile]bool
}

// Abandon removes the files that this process's tiles are writing, and
// the runs their sorts spilled, for a signal that ends the process: a run
// stopped that way never reaches its finishing step, and would leave
// behind partial files of gigabytes. It
// keeps the lock that creating a file takes, so that the tiles still
// running create none after it: call it only on the way out.
func Abandon() {
	pairsort.Abandon()
	writing.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for f := range writing.files {
		f.remove(ctx)
	}
}

// createFile opens name for writing, through a temporary name where the
// filesystem can rename (or copy) files.
func createFile(ctx context.Context, name string) (*tileFile, error) {
	fsys, err := filesystem.New(ctx, name)
	if err != nil {
		return nil, err
	}
	f := &tileFile{fsys: fsys, name: name, tmp: name}
	if canMove(fsys) {
		var rnd [8]byte
		rand.Read(rnd[:])
		f.tmp = name + partial + hex.EncodeToString(rnd[:])
	}
	writing.Lock()
	defer writing.Unlock()
	if f.wc, err = fsys.OpenWrite(ctx, f.tmp); err != nil {
		fsys.Close()
		return nil, err
	}
	if writing.files == nil {
		writing.files = map[*tileFile]bool{}
	}
	writing.files[f] = true
	f.bw = bufio.NewWriterSize(f.wc, 1<<20)
	return f, nil
}

// written takes f off the files that Abandon removes.
func (f *tileFile) written() {
	writing.Lock()
	delete(writing.files, f)
	writing.Unlock()
}

func canMove(fsys filesystem.Interface) bool {
	if _, ok := fsys.(filesystem.Renamer); ok {
		return true
	}
	_, c := fsys.(filesystem.Copier)
	_, r := fsys.(filesystem.Remover)
	return c && r
}

// Write writes b, for pairsort's WriteLines.
func (f *tileFile) Write(b []byte) (int, error) {
	if err := f.write(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (f *tileFile) write(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.bw.Write(b)
	return err
}

// commit finishes the file and gives it its name.
func (f *tileFile) commit(ctx context.Context) error {
	err := f.bw.Flush()
	if cerr := f.wc.Close(); err == nil {
		err = cerr
	}
	f.done = true
	if err == nil && f.tmp != f.name {
		if rn, ok := f.fsys.(filesystem.Renamer); ok {
			err = rn.Rename(ctx, f.tmp, f.name)
		} else {
			err = f.fsys.(filesystem.Copier).Copy(ctx, f.tmp, f.name)
			if err == nil {
				err = f.fsys.(filesystem.Remover).Remove(ctx, f.tmp)
			}
		}
	}
	if err != nil {
		f.remove(ctx)
	}
	f.written()
	f.fsys.Close()
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	return nil
}

// abort removes the file unless it was committed.
func (f *tileFile) abort(ctx context.Context) {
	if f.done {
		return
	}
	f.done = true
	f.wc.Close()
	f.remove(ctx)
	f.written()
	f.fsys.Close()
}

func (f *tileFile) remove(ctx context.Context) {
	if rm, ok := f.fsys.(filesystem.Remover); ok {
		rm.Remove(ctx, f.tmp)
	}
}

// writeCount writes the file of a job that only counts: PREFIX-00000-of-00001
// holding the number, as xsect --count-only prints it.
func writeCount(ctx context.Context, prefix string, n int64) error {
	f, err := createFile(ctx, FileName(prefix, 0, 1))
	if err != nil {
		return err
	}
	defer f.abort(ctx)
	if err := f.write([]byte(strconv.FormatInt(n, 10) + "\n")); err != nil {
		return err
	}
	return f.commit(ctx)
}

// removePartials removes the temporary files that failed attempts at tiles
// left under prefix.
func removePartials(ctx context.Context, prefix string) error {
	fsys, err := filesystem.New(ctx, prefix)
	if err != nil {
		return err
	}
	defer fsys.Close()
	rm, ok := fsys.(filesystem.Remover)
	if !ok {
		return nil
	}
	names, err := fsys.List(ctx, prefix+"-*-of-*"+partial+"*")
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := rm.Remove(ctx, name); err != nil {
			return err
		}
	}
	return nil
}
