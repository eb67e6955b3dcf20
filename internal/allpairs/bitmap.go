package allpairs

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// bitmaps holds one bitmap of words words per set, flat.
type bitmaps struct {
	words int
	bits  []uint64
}

func (b *bitmaps) row(i int) []uint64 { return b.bits[i*b.words : (i+1)*b.words : (i+1)*b.words] }

// buildBitmaps sets, for every set of c (a view of a collection: its
// offsets need not start at 0), the bits of its elements that col maps to a
// column; col gets the element's position in c.Elements and returns -1 for
// elements left out (nil maps e to e).
func buildBitmaps(threads int, c *sets.Collection, columns int, col func(q uint64, e uint32) int) *bitmaps {
	b := &bitmaps{words: (columns + 63) / 64}
	k := c.Len()
	// Fresh memory, filled at once: with huge pages, a page fault maps
	// 2 MiB rather than 4 KiB (the faults cost more than the bits).
	b.bits = hugepage.Make[uint64](k*b.words, k*b.words)
	workers := max(1, min(threads, k/64))
	bounds := splitEven(c.Offsets, workers)
	par.Do(workers, func(w int) {
		for i := bounds[w]; i < bounds[w+1]; i++ {
			r := b.row(i)
			lo := c.Offsets[i]
			for q, e := range c.Elements[lo:c.Offsets[i+1]] {
				x := int(e)
				if col != nil {
					if x = col(lo+uint64(q), e); x < 0 {
						continue
					}
				}
				r[x>>6] |= 1 << (x & 63)
			}
		}
	})
	return b
}

// bitmapSets is the number of sets that get a bitmap.
func bitmapSets(p *Problem) int {
	if p.Self {
		return p.R.Len()
	}
	return p.R.Len() + p.S.Len()
}

// bitmapMemory is the memory of resident bitmaps of every set of p.
func bitmapMemory(p *Problem, columns int) int64 {
	words := int64(columns+63) / 64
	n := int64(p.R.Len())
	if !p.Self {
		n += int64(p.S.Len())
	}
	return n * words * 8
}

// bitmapNaive keeps a bitmap of every set resident and counts each pair by
// AND and popcount over the whole universe, pair by pair: the BI-naive of
// Bellas & Gounaris, "Exploiting GPUs for fast intersection of large sets".
type bitmapNaive struct{ cpuEngine }

func init() { Register(bitmapNaive{cpuEngine{"bitmap"}}) }

func (bitmapNaive) Estimate(p *Problem) (Estimate, error) {
	mem := bitmapMemory(p, p.Universe) + tileMemory(p)
	if mem > p.memoryLeft() {
		return Estimate{}, overBudget("bitmaps of %d sets over %d elements need %s, over the budget of %s", bitmapSets(p), p.Universe, bytesString(mem), bytesString(p.memoryLeft()))
	}
	words := float64((p.Universe + 63) / 64)
	word := costs.word
	if bitmapMemory(p, p.Universe) <= tiers.l3 {
		word = costs.wordL3
	}
	ns := (word*words+costs.pairBitmap)*float64(p.Stats.Pairs) + costs.bitmapSet*float64(p.Stats.R.Elements+p.Stats.S.Elements)
	return Estimate{Seconds: cpuSeconds(p, ns), Memory: mem, Detail: fmt.Sprintf("%.0f words per pair", words)}, nil
}

func (bitmapNaive) Run(ctx context.Context, p *Problem, out *Output) error {
	a := buildBitmaps(p.Threads, p.R, p.Universe, nil)
	b := a
	if !p.Self {
		b = buildBitmaps(p.Threads, p.S, p.Universe, nil)
	}
	band := max(1, (256<<10)/(8*max(a.words, 1)))
	band = min(band, max(1, p.S.Len()/(tasksPerThread*p.Threads)))
	cost := func(r0, r1, c0, c1 int) int64 { return rectPairs(p.Self, r0, r1, c0, c1) * int64(a.words+4) }
	return runTiles(ctx, p, out, band, cost, func() filler {
		return func(t *Tile) {
			for x := 0; x < t.Rows && !stopped(ctx); x++ {
				i := t.Row0 + x
				ra := a.row(i)
				y0 := 0
				if p.Self {
					y0 = max(0, i+1-t.Col0)
				}
				row := t.Counts[x*t.Cols : (x+1)*t.Cols]
				for y := y0; y < t.Cols; y++ {
					row[y] = uint32(andCount(ra, b.row(t.Col0+y)))
				}
			}
		}
	})
}

// bitmapDynamic builds the bitmap of one set at a time and probes the
// elements of the others against it: the BI-dynamic of Bellas & Gounaris. It needs
// only one bitmap per worker. For pairs, sets are taken largest first, so
// that the larger set of a pair is the one in the bitmap.
type bitmapDynamic struct{ cpuEngine }

func init() { Register(bitmapDynamic{cpuEngine{"bitmap-dynamic"}}) }

func (bitmapDynamic) Estimate(p *Problem) (Estimate, error) {
	st := &p.Stats
	words := int64((p.Universe + 63) / 64)
	mem := int64(p.Threads)*words*8 + tileMemory(p) + 4*int64(st.R.Sets+st.S.Sets)
	probes := st.ProbeWork
	_, _, tiled := p.Tiled()
	if tiled || !p.Self {
		probes = float64(st.R.Sets) * float64(st.S.Elements)
		if p.Self {
			probes /= 2
		}
	}
	// Per pair: a call and the threshold test, about as much as a
	// product's pair.
	ns := costs.probe*probes + 2*costs.bitmapSet*float64(st.R.Elements) + costs.pairMM*float64(st.Pairs)
	if tiled {
		_, cols, _ := p.Tiled()
		ns += 2 * costs.bitmapSet * float64(st.R.Elements) * math.Ceil(float64(st.S.Sets)/float64(cols))
	}
	return Estimate{Seconds: cpuSeconds(p, ns), Memory: mem, Detail: fmt.Sprintf("%.3g probes", probes)}, nil
}

func (bitmapDynamic) Run(ctx context.Context, p *Problem, out *Output) error {
	words := (p.Universe + 63) / 64
	if _, _, ok := p.Tiled(); ok {
		cost := func(r0, r1, c0, c1 int) int64 { return rectPairs(p.Self, r0, r1, c0, c1) }
		return runTiles(ctx, p, out, 0, cost, func() filler {
			bm := make([]uint64, words)
			return func(t *Tile) {
				for x := 0; x < t.Rows && !stopped(ctx); x++ {
					i := t.Row0 + x
					y0 := 0
					if p.Self {
						y0 = max(0, i+1-t.Col0)
					}
					if y0 >= t.Cols {
						continue
					}
					a := p.R.Set(i)
					setBits(bm, a)
					row := t.Counts[x*t.Cols : (x+1)*t.Cols]
					for y := y0; y < t.Cols; y++ {
						row[y] = probeBits(bm, p.S.Set(t.Col0+y))
					}
					clearBits(bm, a)
				}
			}
		})
	}
	// Pairs: row i probes all its partners, inline.
	kr, ks := p.R.Len(), p.S.Len()
	order := make([]int, kr) // the position of row x in the bitmap order
	for i := range order {
		order[i] = i
	}
	if p.Self {
		slices.SortStableFunc(order, func(a, b int) int { return p.R.SetLen(b) - p.R.SetLen(a) })
	}
	spans := splitWork(kr, p.Threads*tasksPerThread, func(x int) int64 {
		if p.Self {
			return int64(kr-x) * int64(p.Stats.R.AvgSize)
		}
		return int64(p.Stats.S.Elements)
	})
	bms := make([][]uint64, p.Threads)
	return par.Tasks(ctx, len(spans), p.Threads, func(w, t int) error {
		if bms[w] == nil {
			bms[w] = make([]uint64, words)
		}
		bm := bms[w]
		wr := out.Writer()
		defer wr.Close()
		var pairs int64
		for x := spans[t].lo; x < spans[t].hi; x++ {
			if stopped(ctx) {
				return ctx.Err()
			}
			i := order[x]
			a := p.R.Set(i)
			setBits(bm, a)
			if p.Self {
				for _, j := range order[x+1:] {
					c := probeBits(bm, p.R.Set(j))
					lo, hi := min(i, j), max(i, j)
					if c >= p.Need(lo, hi) {
						wr.Add(lo, hi, c)
					}
				}
				pairs += int64(kr - x - 1)
			} else {
				for j := 0; j < ks; j++ {
					c := probeBits(bm, p.S.Set(j))
					if c >= p.Need(i, j) {
						wr.Add(i, j, c)
					}
				}
				pairs += int64(ks)
			}
			clearBits(bm, a)
		}
		out.Progress(pairs)
		return out.Err()
	})
}

func setBits(bm []uint64, s []uint32) {
	for _, e := range s {
		bm[e>>6] |= 1 << (e & 63)
	}
}

func clearBits(bm []uint64, s []uint32) {
	for _, e := range s {
		bm[e>>6] = 0
	}
}

func probeBits(bm []uint64, s []uint32) uint32 {
	var n uint64
	for _, e := range s {
		n += bm[e>>6] >> (e & 63) & 1
	}
	return uint32(n)
}
