// Package gpubatmap computes BATMAP all-pairs counts (package batmap) on an
// NVIDIA GPU, through internal/gpurt, and registers the "batmap" engines of
// packages pairs and allpairs for the GPU.
//
// The kernel is the paper's (Amossen & Pagh, "A New Data Layout For Set
// Intersection on GPUs", section III-B) made into a GEMM with a custom
// operator: batmaps sorted by width are cut into groups of at
// most 128 of one width; a thread block owns a tile of 128 × 128 pairs of
// the upper triangle (row group g, column group h >= g), stages 16-word
// slices of its batmaps in shared memory (cp.async, two stages), and each
// thread accumulates an 8 × 8 micro-tile of pairs in registers. Two words
// compare in four integer instructions (the ternary form of the match: an
// entry of ~t & (x|y) & H is set exactly when the entries match) and one
// DP4A (8-bit entries), POPC (16-bit) or shift (32-bit) counts the
// matches. Narrow batmaps wrap (a row of width w faces column word k at
// k mod w).
//
// Three outputs: every count of the upper triangle as dense tiles (Tiles),
// the pairs whose count reaches a threshold, filtered and compacted on the
// device (Pairs), or only their number (Count). Insertions that failed
// (Batmaps.Failed) are corrected on the device, exactly, in the kernel's
// epilogue (as Batmaps.Correction does on the CPU), before any threshold
// is applied.
//
// Work goes in batches of row groups, each one kernel launch whose output
// (at most a planned number of entries) is copied back through pinned
// buffers and decoded on all cores while the next batch runs on another
// stream. Device memory is predicted before anything is allocated; a run
// that cannot fit says so.
package gpubatmap

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

//go:embed kernels
var kernelFiles embed.FS

var source = gpurt.EmbeddedSource(kernelFiles, "kernels/batmap.cu")

// kernelNames are the kernels of batmap.cu, one per entry width (and one
// for 8-bit entries of sets too large to count four matches a byte).
var kernelNames = []string{"batmap8", "batmap8popc", "batmap16", "batmap32"}

// sourceOf returns the source that compiles to the kernel called name
// alone: a cold disk cache then costs the compilation of one kernel (about
// 3 s on the H100 host) instead of all four (10 to 13 s).
func sourceOf(name string) gpurt.Source {
	return source.With("-DONE_KERNEL", "-DKERNEL_"+name)
}

// KernelSources returns the sources of every kernel's module, for
// internal/kernelgen to prebuild.
func KernelSources() []gpurt.Source {
	out := make([]gpurt.Source, len(kernelNames))
	for i, name := range kernelNames {
		out[i] = sourceOf(name)
	}
	return out
}

// errTooLarge is wrapped by errors that say a run does not fit the
// device; the engines wrap them in their packages' ErrCannotRun, which
// says "cannot run" once.
var errTooLarge = errors.New("does not fit the device")

// Pair is a pair of batmaps by position, I < J, with |S_I ∩ S_J|, exact.
type Pair = sets.Pair

// Options configure a run. The zero value counts every pair.
type Options struct {
	// MinCount is every pair's threshold when Need is nil.
	MinCount uint32
	// Need, if not nil, holds a threshold per batmap position: pair
	// (p, q) qualifies when its count reaches min(Need[p], Need[q]).
	Need []uint32
	// Threads is the number of host goroutines that decode and deliver
	// the pairs; 0 means GOMAXPROCS.
	Threads int
	// Memory caps the device bytes of the run; 0 means the device's free
	// memory less a reserve.
	Memory int64
	// Progress, if set, is called after each batch with the pairs done and
	// the total.
	Progress func(done, total int64)
	// Stats, if not nil, receives the run's figures.
	Stats *Stats

	// For tests: maxEntries, when positive, lowers the entries a batch
	// may write (many batches on small inputs); kernel, when set, names
	// the kernel (batmap8popc on sets too small to need it).
	maxEntries int64
	kernel     string
}

// Stats describes a run.
type Stats struct {
	Kernel    string        // the kernel launched
	Batches   int           // kernel launches
	Tiles     int           // tiles of 128 × 128 pairs
	WordPairs float64       // 32-bit word pairs compared, padding included
	Entries   int64         // compacted pairs (or dense counts) copied back
	Upload    time.Duration // wall time to put the batmaps and the plan on the device
	KernelDev time.Duration // device time from the first launch to the last kernel's end
	Total     time.Duration // wall time of the whole run
	Memory    int64         // device bytes planned (of each owner)
	// GPUs describes the set the run spread over, and Owners what each
	// owner did (batches taken, time busy).
	GPUs   string
	Owners gpurt.Report
}

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.GOMAXPROCS(0)
}

func (o Options) check(n int) error {
	if o.Need != nil && len(o.Need) != n {
		return fmt.Errorf("gpubatmap: %d thresholds for %d batmaps", len(o.Need), n)
	}
	return nil
}

// Pairs calls fn with batches of the pairs whose count reaches their
// threshold, each pair once, computed on the owners of set, which take
// batches from one queue (see gpurt.Set.Run). fn is called from
// Workers(opt, set) goroutines at once (worker in [0, Workers)); ps is
// valid only during the call. An error from fn, or ctx being done, stops
// the run and is returned.
func Pairs(ctx context.Context, set *gpurt.Set, b *batmap.Batmaps, opt Options, fn func(worker int, ps []Pair) error) error {
	if err := opt.check(b.Len()); err != nil {
		return err
	}
	_, err := run(ctx, set, b, opt, modePairs, fn, nil)
	return err
}

// Count returns the number of pairs whose count reaches their threshold,
// computed on the owners of set.
func Count(ctx context.Context, set *gpurt.Set, b *batmap.Batmaps, opt Options) (int64, error) {
	if err := opt.check(b.Len()); err != nil {
		return 0, err
	}
	return run(ctx, set, b, opt, modeCount, nil, nil)
}

// Tiles computes every count of the upper triangle on dev and calls fn,
// from one goroutine, with tiles that cover it in order of rows: each
// holds rows Row0.. and columns Col0 = Row0 of its batch to the last
// batmap, counts on and below the diagonal 0 (as batmap.AllPairs's
// tiles). t is valid only during the call. Options' thresholds are
// ignored.
func Tiles(ctx context.Context, dev *gpurt.Device, b *batmap.Batmaps, opt Options, fn func(t *batmap.Tile) error) error {
	_, err := run(ctx, gpurt.NewSet(dev), b, opt, modeDense, nil, fn)
	return err
}
