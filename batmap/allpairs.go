package batmap

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Tile is a block of the all-pairs counts, by batmap positions:
// Counts[x*Cols+y] is |S ∩ S'| for the sets at positions Row0+x and
// Col0+y when Row0+x < Col0+y, and 0 elsewhere (the lower triangle and the
// diagonal are never computed).
type Tile struct {
	// Row0 and Col0 are the positions of the tile's first row and first
	// column.
	Row0, Col0 int
	// Rows and Cols are the tile's numbers of rows and columns: the tile
	// size, or fewer in the last block of positions.
	Rows, Cols int
	// Counts holds the Rows·Cols counts, row by row.
	Counts []uint32
}

// At returns the count at row x, column y.
func (t *Tile) At(x, y int) uint32 { return t.Counts[x*t.Cols+y] }

// PairsOptions tune AllPairs.
type PairsOptions struct {
	// Threads is the number of worker goroutines; 0 means GOMAXPROCS.
	Threads int
	// TileSize is the number of batmaps per tile side; 0 picks one that
	// keeps a tile's rows in the L2 cache. It is rounded up to a multiple
	// of 4.
	TileSize int
	// Progress, if set, is called after each tile with the pairs done so
	// far and the total, from any goroutine.
	Progress func(done, total int64)
}

// TileSize returns the tile side AllPairs uses by default: the columns of
// a tile (batmaps of about the typical width) should fit in 256 KiB of L2
// cache, while 4 rows at a time are compared with them from L1.
func (b *Batmaps) TileSize() int {
	n := b.Len()
	if n < 2 {
		return 4
	}
	// The width that dominates the work: pairs are charged the wider batmap.
	var work, pairs float64
	for k := range n {
		w := float64(b.Offsets[k+1] - b.Offsets[k])
		work += float64(k) * w
		pairs += float64(k)
	}
	words := max(work/pairs, 2)
	// Wide batmaps are compared a segment at a time.
	t := int(256 << 10 / (4 * min(words, 2*segment)))
	return min(max(t&^3, 8), 256)
}

// AllPairs computes |S_i ∩ S_j| for every pair of batmaps, in tiles of the
// upper triangle: tile (P, Q), P ≤ Q, holds rows P·T.. and columns Q·T..
// of the position order, so that every batmap in a column is at least as
// wide as every batmap in a row left of the diagonal. fn receives each
// tile, from opt.Threads goroutines at once (worker in [0, Threads)), and
// may keep per-worker state; t is reused after fn returns. An error from
// fn, or ctx being done, stops the work and is returned.
func (b *Batmaps) AllPairs(ctx context.Context, opt PairsOptions, fn func(worker int, t *Tile) error) error {
	n := b.Len()
	if n < 2 {
		return nil
	}
	T := opt.TileSize
	if T <= 0 {
		T = b.TileSize()
	}
	T = (T + 3) &^ 3
	nt := (n + T - 1) / T
	tiles := b.tileOrder(nt, T)
	threads := opt.Threads
	if threads <= 0 {
		threads = Config{}.threads()
	}
	total := int64(n) * int64(n-1) / 2
	var next, done atomic.Int64
	var stop atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := range int(min(int64(threads), tiles.len())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := &Tile{Counts: make([]uint32, T*T)}
			for !stop.Load() {
				i := next.Add(1) - 1
				if i >= tiles.len() {
					return
				}
				err := ctx.Err()
				if err == nil {
					p, q := tiles.at(i)
					pairs := b.tile(t, p*T, q*T, T)
					err = fn(w, t)
					if d := done.Add(pairs); opt.Progress != nil {
						opt.Progress(d, total)
					}
				}
				if err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// tileOrder is the order in which AllPairs computes the tiles (p, q),
// p <= q < nt: heaviest first, so that the workers finish together. A
// tile costs the width of its last column's batmap; tiles of equal cost
// go by p, then q. It is kept as runs of tiles of one row p and
// consecutive columns, a few per row (one per width of batmaps), rather
// than tile by tile: nt² tiles of a million tiny batmaps would take
// gigabytes.
type tileOrder struct {
	runs []tileRun
	end  []int64 // end[r]: the tiles of runs[:r+1]
}

// tileRun is the tiles (p, q) for q in [q0, q1].
type tileRun struct{ p, q0, q1 int32 }

func (b *Batmaps) tileOrder(nt, T int) *tileOrder {
	n := b.Len()
	cost := func(q int) uint64 {
		last := min((q+1)*T, n) - 1
		return b.Offsets[last+1] - b.Offsets[last]
	}
	// Segments of consecutive columns of one cost, grouped by cost,
	// highest first.
	type segment struct {
		q0, q1 int
		cost   uint64
	}
	var segs []segment
	for q := 0; q < nt; q++ {
		if c := cost(q); len(segs) > 0 && segs[len(segs)-1].cost == c {
			segs[len(segs)-1].q1 = q
		} else {
			segs = append(segs, segment{q, q, c})
		}
	}
	slices.SortStableFunc(segs, func(x, y segment) int { return cmp.Compare(y.cost, x.cost) })
	o := &tileOrder{}
	var total int64
	for lo := 0; lo < len(segs); {
		hi := lo + 1
		for hi < len(segs) && segs[hi].cost == segs[lo].cost {
			hi++
		}
		last := 0
		for _, sg := range segs[lo:hi] {
			last = max(last, sg.q1)
		}
		for p := 0; p <= last; p++ {
			for _, sg := range segs[lo:hi] {
				if q0 := max(p, sg.q0); q0 <= sg.q1 {
					o.runs = append(o.runs, tileRun{int32(p), int32(q0), int32(sg.q1)})
					total += int64(sg.q1 - q0 + 1)
					o.end = append(o.end, total)
				}
			}
		}
		lo = hi
	}
	return o
}

// len returns the number of tiles.
func (o *tileOrder) len() int64 {
	if len(o.end) == 0 {
		return 0
	}
	return o.end[len(o.end)-1]
}

// at returns the i-th tile.
func (o *tileOrder) at(i int64) (p, q int) {
	r, _ := slices.BinarySearch(o.end, i+1)
	run := o.runs[r]
	start := int64(0)
	if r > 0 {
		start = o.end[r-1]
	}
	return int(run.p), int(run.q0) + int(i-start)
}

// tile computes the tile at (row0, col0), row0 <= col0, and returns the
// number of pairs in it.
func (b *Batmaps) tile(t *Tile, row0, col0, T int) int64 {
	n := b.Len()
	t.Row0, t.Col0 = row0, col0
	t.Rows, t.Cols = min(T, n-row0), min(T, n-col0)
	t.Counts = t.Counts[:t.Rows*t.Cols]
	clear(t.Counts)
	k := kernelFor(b.Layout.EntryBits)
	if w := b.batmap64(row0); len(w) > segment && len(w) == len(b.batmap64(col0+t.Cols-1)) {
		return b.tileSegmented(t, k)
	}
	var pairs int64
	// Groups of 4 rows against every column: the 4 rows stay in L1 while
	// the columns stream from L2.
	for x := 0; x < t.Rows; x += 4 {
		g := min(4, t.Rows-x)
		i := row0 + x
		r0 := b.batmap64(i)
		same := g == 4 && len(r0) == len(b.batmap64(i+3))
		var r1, r2, r3 []uint64
		if same {
			r1, r2, r3 = b.batmap64(i+1), b.batmap64(i+2), b.batmap64(i+3)
		}
		for y := range t.Cols {
			j := col0 + y
			if j <= i {
				continue
			}
			wide := b.batmap64(j)
			if same && j > i+3 {
				var c0, c1, c2, c3 int
				L := len(r0)
				for off := 0; off < len(wide); off += L {
					d0, d1, d2, d3 := k.four(wide[off:off+L], r0, r1, r2, r3)
					c0, c1, c2, c3 = c0+d0, c1+d1, c2+d2, c3+d3
				}
				t.Counts[x*t.Cols+y] = uint32(c0)
				t.Counts[(x+1)*t.Cols+y] = uint32(c1)
				t.Counts[(x+2)*t.Cols+y] = uint32(c2)
				t.Counts[(x+3)*t.Cols+y] = uint32(c3)
				pairs += 4
				continue
			}
			for d := range min(g, j-i) {
				t.Counts[(x+d)*t.Cols+y] = uint32(countWrap(wide, b.batmap64(i+d), k))
				pairs++
			}
		}
	}
	if len(b.Failed) > 0 {
		b.correctTile(t)
	}
	return pairs
}

// segment is the most 64-bit words of a batmap that tileSegmented compares
// at a time: 4 KiB, so that 4 rows and a column fit in L1.
const segment = 512

// tileSegmented computes a tile whose batmaps are all of one width, wider
// than a segment: segment by segment, as the paper's GPU kernel stages
// slices of the batmaps in shared memory, so that the slices of the tile's
// batmaps stay in cache while every pair of them is compared.
func (b *Batmaps) tileSegmented(t *Tile, k *kernel) int64 {
	row0, col0 := t.Row0, t.Col0
	width := len(b.batmap64(row0))
	// Widths are 3·Base·2^k words: halve down to a segment.
	seg := width
	for seg > segment && seg%2 == 0 {
		seg /= 2
	}
	var pairs int64
	for off := 0; off < width; off += seg {
		end := off + seg
		for x := 0; x < t.Rows; x += 4 {
			g := min(4, t.Rows-x)
			i := row0 + x
			var rs [4][]uint64
			for d := range g {
				rs[d] = b.batmap64(i + d)[off:end]
			}
			for y := range t.Cols {
				j := col0 + y
				if j <= i {
					continue
				}
				wide := b.batmap64(j)[off:end]
				if g == 4 && j > i+3 {
					c0, c1, c2, c3 := k.four(wide, rs[0], rs[1], rs[2], rs[3])
					t.Counts[x*t.Cols+y] += uint32(c0)
					t.Counts[(x+1)*t.Cols+y] += uint32(c1)
					t.Counts[(x+2)*t.Cols+y] += uint32(c2)
					t.Counts[(x+3)*t.Cols+y] += uint32(c3)
					if off == 0 {
						pairs += 4
					}
					continue
				}
				for d := range min(g, j-i) {
					t.Counts[(x+d)*t.Cols+y] += uint32(k.one(wide, rs[d]))
					if off == 0 {
						pairs++
					}
				}
			}
		}
	}
	if len(b.Failed) > 0 {
		b.correctTile(t)
	}
	return pairs
}

// correctTile adds the corrections for failed insertions to a tile.
func (b *Batmaps) correctTile(t *Tile) {
	failedAt := func(k int) bool { return b.FailOffsets[k] != b.FailOffsets[k+1] }
	for x := range t.Rows {
		i := t.Row0 + x
		if !failedAt(i) {
			continue
		}
		for y := range t.Cols {
			if j := t.Col0 + y; i < j {
				t.Counts[x*t.Cols+y] += uint32(b.correction(i, j))
			}
		}
	}
	for y := range t.Cols {
		j := t.Col0 + y
		if !failedAt(j) {
			continue
		}
		for x := range t.Rows {
			if i := t.Row0 + x; i < j && !failedAt(i) {
				t.Counts[x*t.Cols+y] += uint32(b.correction(i, j))
			}
		}
	}
}
