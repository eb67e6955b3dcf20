package pairs

import (
	"context"
	"fmt"
	"math"

	"github.com/xsect/xsect/batmap"
)

// batmapEngine stores the tidlist of every frequent item as a batmap
// (package batmap) and compares all pairs entry by entry, in tiles of the
// upper triangle, on all cores: the paper's method, on the CPU.
type batmapEngine struct {
	cpu
	cfg batmap.Config // the layout; tests force insertion failures through it
}

func (batmapEngine) Name() string { return "batmap" }

// BatmapLayout returns the layout of the batmaps of d's frequent items'
// tidlists (the universe is the transactions) under cfg, and the tidlists'
// sizes by rank.
func (d *Data) BatmapLayout(cfg batmap.Config) (*batmap.Layout, []int, error) {
	sizes := make([]int, d.Frequent())
	for r := range sizes {
		sizes[r] = int(d.Support[r])
	}
	l, err := batmap.NewLayout(uint64(d.Transactions), sizes, cfg)
	return l, sizes, err
}

// BuildBatmaps builds the batmaps of d's tidlists in layout l on d.Threads,
// reporting progress to out as stage "batmaps"; it returns ctx's error if
// ctx ends meanwhile.
func (d *Data) BuildBatmaps(ctx context.Context, l *batmap.Layout, out *Output) (*batmap.Batmaps, error) {
	b, err := l.Build(d.Vertical(), d.Threads, func(done, total int64) { out.Progress("batmaps", done, total) })
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

func (e batmapEngine) Estimate(d *Data) (Estimate, error) {
	l, sizes, err := d.BatmapLayout(e.cfg)
	if err != nil {
		return Estimate{}, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	words := l.PairWords(sizes)
	c := d.unitCosts()
	sec := (float64(d.Occurrences)*c.batmapInsert + words*c.batmapWord + float64(triangle(d.Frequent()))*c.batmapPair) / float64(d.Threads)
	// The tidlists, the batmaps and their build, the sizes of the layout,
	// AllPairs' tiles (at most 256x256 counts a thread) and their order
	// (a few runs for each 8 batmaps at least).
	mem := d.VerticalBytes() + l.Memory(sizes, d.Threads) + 8*int64(len(sizes)) + writersBytes(d.Threads) +
		int64(d.Threads)*4*256*256 + 160*int64(len(sizes)/8+1)
	return Estimate{Seconds: sec, Memory: mem,
		Detail: fmt.Sprintf("%s; %d words of batmaps, %.3g words compared, kernel %s", l, l.TotalWords(sizes), words, batmap.Kernel())}, nil
}

func (e batmapEngine) Run(ctx context.Context, d *Data, out *Output) error {
	l, _, err := d.BatmapLayout(e.cfg)
	if err != nil {
		return err
	}
	b, err := d.BuildBatmaps(ctx, l, out)
	if err != nil {
		return err
	}
	writers := make([]*Writer, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
	}
	need := uint32(d.MinSupport)
	err = b.AllPairs(ctx, batmap.PairsOptions{Threads: d.Threads, Progress: func(done, total int64) { out.Progress("pairs", done, total) }},
		func(w int, t *batmap.Tile) error {
			wr := writers[w]
			for x := range t.Rows {
				a := b.IDs[t.Row0+x]
				row := t.Counts[x*t.Cols : (x+1)*t.Cols]
				for y, c := range row {
					if c >= need && t.Row0+x < t.Col0+y {
						wr.Add(a, b.IDs[t.Col0+y], c)
					}
				}
			}
			return out.Err()
		})
	for _, wr := range writers {
		wr.Close()
	}
	return err
}

func log2(x float64) float64 { return math.Log2(max(x, 2)) }
