package allpairs

import (
	"cmp"
	"context"
	"slices"

	"github.com/xsect/xsect/internal/par"
)

// span is a half-open range of indices.
type span struct{ lo, hi int }

// splitWork cuts [0, n) into contiguous spans of about total/parts weight
// each (a single heavy item gets a span of its own) and returns them
// heaviest first, so that the last tasks to start are short ones: the
// workers then finish together even when the work is skewed.
func splitWork(n, parts int, weight func(i int) int64) []span {
	// Two calls of weight per item rather than an array of n weights:
	// items may be the million elements of a universe.
	var total int64
	for i := 0; i < n; i++ {
		total += weight(i) + 1
	}
	target := max(total/int64(max(parts, 1)), 1)
	var out []span
	var sums []int64
	lo := 0
	var acc int64
	for i := 0; i < n; i++ {
		acc += weight(i) + 1
		if acc >= target || i == n-1 {
			out = append(out, span{lo, i + 1})
			sums = append(sums, acc)
			lo, acc = i+1, 0
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(sums[b], sums[a]) })
	sorted := make([]span, len(out))
	for i, x := range idx {
		sorted[i] = out[x]
	}
	return sorted
}

// tasksPerThread is how many tasks per worker the schedulers aim at: enough
// for dynamic scheduling to even out skew, few enough that per-task costs
// stay invisible.
const tasksPerThread = 24

// filler computes dense tiles for one worker: fill sets t.Counts (zeroed by
// the caller) to the counts of t's rows and columns; in a self-join only the
// entries above the diagonal. A filler whose tiles can take long (a band of
// columns against every row) checks stopped between rows and leaves the
// tile unfinished once the run's context is done; runBlocks then drops it.
type filler func(t *Tile)

// stopped reports whether ctx is done: a filler's check between two rows,
// so that a cancelled run stops within a row rather than at the end of a
// tile of seconds.
func stopped(ctx context.Context) bool { return ctx.Err() != nil }

// runTiles computes tiles with fillers from newFiller (one per worker) and
// hands them to out. For a tiled problem it covers the caller's grid; for
// pairs, column bands of all the rows they need, bandCols columns wide (or
// an engine-chosen width if bandCols is 0). cost estimates a tile's work
// for scheduling.
func runTiles(ctx context.Context, p *Problem, out *Output, bandCols int, cost func(r0, r1, c0, c1 int) int64, newFiller func() filler) error {
	return runBlocks(ctx, p, out, bandCols, 0, cost, newFiller)
}

// maxListedTiles is the most tiles runBlocks lists and orders by cost;
// with more (a million tiny sets), it takes them band by band, the last
// bands (the longest, in a self-join) first: each is too small a part of
// the work for a finer order to matter, and a list of all of them would
// take gigabytes.
const maxListedTiles = 1 << 16

// runBlocks is runTiles whose pair plans cut the column bands into blocks
// of bandRows rows (all rows if 0).
func runBlocks(ctx context.Context, p *Problem, out *Output, bandCols, bandRows int, cost func(r0, r1, c0, c1 int) int64, newFiller func() filler) error {
	kr, ks := p.R.Len(), p.S.Len()
	var tiles []Tile
	var bands *bandOrder
	if rows, cols, ok := p.Tiled(); ok {
		for r0 := 0; r0 < kr; r0 += rows {
			for c0 := 0; c0 < ks; c0 += cols {
				t := Tile{Row0: r0, Col0: c0, Rows: min(rows, kr-r0), Cols: min(cols, ks-c0)}
				if p.Self && t.Row0 >= t.Col0+t.Cols-1 {
					continue // nothing above the diagonal
				}
				tiles = append(tiles, t)
			}
		}
	} else {
		if bandCols <= 0 {
			bandCols = bandWidth(p, kr)
		}
		bands = newBandOrder(p.Self, kr, ks, bandCols, bandRows)
		if bands.len() <= int64(p.maxListed) {
			tiles = make([]Tile, 0, bands.len())
			bands = nil
			for c0 := 0; c0 < ks; c0 += bandCols {
				cols := min(bandCols, ks-c0)
				rows := kr
				if p.Self {
					rows = min(kr, c0+cols-1)
				}
				step := rows
				if bandRows > 0 {
					step = bandRows
				}
				for r0 := 0; r0 < rows; r0 += step {
					tiles = append(tiles, Tile{Row0: r0, Rows: min(step, rows-r0), Col0: c0, Cols: cols})
				}
			}
		}
	}
	n := int64(len(tiles))
	at := func(i int64) Tile { return tiles[i] }
	if bands != nil {
		n, at = bands.len(), bands.at
	} else {
		work := make([]int64, len(tiles))
		for i, t := range tiles {
			work[i] = cost(t.Row0, t.Row0+t.Rows, t.Col0, t.Col0+t.Cols)
		}
		order := make([]int32, len(tiles))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(work[b], work[a]) })
		at = func(i int64) Tile { return tiles[order[i]] }
	}
	workers := int(max(1, min(int64(p.Threads), n)))
	fillers := make([]filler, workers)
	bufs := make([][]uint32, workers)
	return par.Tasks(ctx, int(n), workers, func(w, task int) error {
		if fillers[w] == nil {
			fillers[w] = newFiller()
		}
		t := at(int64(task))
		n := t.Rows * t.Cols
		if cap(bufs[w]) < n {
			bufs[w] = make([]uint32, n)
		}
		t.Counts = bufs[w][:n]
		clear(t.Counts)
		fillers[w](&t)
		if err := ctx.Err(); err != nil {
			return err // the tile may be unfinished
		}
		if err := out.Tile(&t); err != nil {
			return err
		}
		out.Progress(tilePairs(p, &t))
		return nil
	})
}

// bandOrder is the tiles of a pair plan, band by band, without a list of
// them: bands of cols columns, each of the rows it needs (in a self-join,
// those above the diagonal) in blocks of step rows (all if 0). The i-th
// tile is found from the bands' tile counts.
type bandOrder struct {
	self             bool
	kr, ks           int
	cols, rows, step int
	end              []int64 // end[b]: the tiles of bands taken before b's end
}

func newBandOrder(self bool, kr, ks, cols, step int) *bandOrder {
	o := &bandOrder{self: self, kr: kr, ks: ks, cols: cols, step: step}
	var total int64
	// The last band first.
	for b := (ks+cols-1)/cols - 1; b >= 0; b-- {
		if rows, st := o.band(b); rows > 0 {
			total += int64((rows + st - 1) / st)
		}
		o.end = append(o.end, total)
	}
	return o
}

// band returns the rows of band b and its blocks' height.
func (o *bandOrder) band(b int) (rows, step int) {
	c0 := b * o.cols
	cols := min(o.cols, o.ks-c0)
	rows = o.kr
	if o.self {
		rows = min(o.kr, c0+cols-1)
	}
	step = rows
	if o.step > 0 {
		step = o.step
	}
	return rows, step
}

func (o *bandOrder) len() int64 {
	if len(o.end) == 0 {
		return 0
	}
	return o.end[len(o.end)-1]
}

// at returns the i-th tile, its Counts unset.
func (o *bandOrder) at(i int64) Tile {
	x, _ := slices.BinarySearch(o.end, i+1)
	b := len(o.end) - 1 - x
	start := int64(0)
	if x > 0 {
		start = o.end[x-1]
	}
	rows, step := o.band(b)
	r0 := int(i-start) * step
	c0 := b * o.cols
	return Tile{Row0: r0, Rows: min(step, rows-r0), Col0: c0, Cols: min(o.cols, o.ks-c0)}
}

// bandWidth picks the width of column bands for pair plans: a band of all
// rows stays under 1 MiB of counts, and there are enough bands to balance.
func bandWidth(p *Problem, rows int) int {
	ks := p.S.Len()
	b := max(1, (1<<18)/max(rows, 1))
	b = min(b, max(1, ks/(tasksPerThread*p.Threads)))
	return max(1, b)
}

// tilePairs returns the number of pairs a tile covers.
func tilePairs(p *Problem, t *Tile) int64 {
	if !p.Self {
		return int64(t.Rows) * int64(t.Cols)
	}
	var n int64
	for x := 0; x < t.Rows; x++ {
		i := t.Row0 + x
		n += int64(max(0, t.Col0+t.Cols-max(i+1, t.Col0)))
	}
	return n
}

// selfTilePairs is tilePairs from bounds, for cost functions.
func rectPairs(self bool, r0, r1, c0, c1 int) int64 {
	if !self {
		return int64(r1-r0) * int64(c1-c0)
	}
	var n int64
	for i := r0; i < r1; i++ {
		n += int64(max(0, c1-max(i+1, c0)))
	}
	return n
}
