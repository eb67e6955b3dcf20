package pairs

import (
	"context"
	"fmt"
)

// apriori counts pairs the way Apriori's second pass does: one counter per
// pair of frequent items, in a triangular array (row a holds the pairs
// (a, b), b > a), incremented for every pair of items of every
// transaction.
//
// The increments are made row by row rather than transaction by
// transaction: for item a, the transactions of its tidlist, and in each
// the items after a. A row is then complete as soon as its item's tidlist
// is done, so each worker materialises one row of the triangle at a time,
// in a buffer that stays in cache, and reports it before moving on: the
// same counts, without Apriori's quadratic memory (the paper's Figure 5)
// and without its cache misses. Sparse rows are reported from the list of
// counters they touched instead of a scan of the row.
type apriori struct{ cpu }

func (apriori) Name() string { return "apriori" }

// Calibrated on the development machine (docs/BATMAP.md, "Choosing an
// engine"): seconds per increment, per counter scanned, per transaction
// visited.
const (
	aprioriIncrement = 2.2e-9
	aprioriEntry     = 0.7e-9
	aprioriVisit     = 22e-9
)

func triangle(f int) int64 { return int64(f) * int64(max(f-1, 0)) / 2 }

func (apriori) Estimate(d *Data) (Estimate, error) {
	f := d.Frequent()
	mem := d.HorizontalBytes() + 8*int64(f)*int64(d.Threads)
	if triangle(f) <= smallTriangle {
		mem += 4 * triangle(f) * int64(d.Threads)
	} else {
		mem += d.VerticalBytes() + d.PositionsBytes()
	}
	// Rows denser than a quarter are scanned whole.
	scanned := min(float64(triangle(f)), 4*float64(d.PairSteps))
	sec := (float64(d.PairSteps)*aprioriIncrement + scanned*aprioriEntry + float64(d.Occurrences)*aprioriVisit) / float64(d.Threads)
	return Estimate{Seconds: sec, Memory: mem, Detail: fmt.Sprintf("%d counters in rows of up to %d", triangle(f), max(f-1, 0))}, nil
}

// smallTriangle is the most counters for which each worker counts
// transaction by transaction into a whole triangle of its own (the
// triangles are summed at the end): small enough to stay in cache, where
// reading transactions in order beats visiting them item by item.
const smallTriangle = 1 << 20

func (apriori) Run(ctx context.Context, d *Data, out *Output) error {
	if triangle(d.Frequent()) <= smallTriangle {
		return aprioriSmall(ctx, d, out)
	}
	f := d.Frequent()
	h, v, positions := d.Horizontal(), d.Vertical(), d.Positions()
	writers := make([]*Writer, d.Threads)
	rows := make([][]uint32, d.Threads)
	touched := make([][]uint32, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
	}
	need := uint32(d.MinSupport)
	avgLen := float64(d.Occurrences) / float64(max(d.Transactions, 1))
	// A row's work is about its support times the items after it.
	weight := func(a int) int64 { return int64(float64(d.Support[a]) * avgLen * float64(f-a) / float64(f)) }
	err := forItems(ctx, d.Threads, f, weight, out, "pairs", func(w, a int) {
		if rows[w] == nil {
			rows[w] = make([]uint32, f)
		}
		row := rows[w][:f-a-1] // row[b-a-1] counts the pair (a, b)
		// pos[k]: where a is in the k-th transaction of its tidlist.
		pos := positions[v.Offsets[a]:v.Offsets[a+1]]
		wr := writers[w]
		if float64(d.Support[a])*avgLen < float64(len(row))/4 {
			tl := touched[w][:0]
			for k, t := range v.Set(a) {
				items := h.Set(int(t))
				for _, b := range items[pos[k]+1:] {
					x := int(b) - a - 1
					if row[x] == 0 {
						tl = append(tl, uint32(x))
					}
					row[x]++
				}
			}
			for _, x := range tl {
				if c := row[x]; c >= need {
					wr.Add(uint32(a), uint32(a+1)+x, c)
				}
				row[x] = 0
			}
			touched[w] = tl
			return
		}
		for k, t := range v.Set(a) {
			items := h.Set(int(t))
			for _, b := range items[pos[k]+1:] {
				row[int(b)-a-1]++
			}
		}
		for i, c := range row {
			if c >= need {
				wr.Add(uint32(a), uint32(a+1+i), c)
			}
		}
		clear(row)
	})
	for _, wr := range writers {
		wr.Close()
	}
	return err
}

// aprioriSmall is the classic order: each worker takes a share of the
// transactions and increments, for every pair of items of each, its
// counter in the worker's own triangle.
func aprioriSmall(ctx context.Context, d *Data, out *Output) error {
	f := d.Frequent()
	h := d.Horizontal()
	m := h.Len()
	n := triangle(f)
	workers := min(d.Threads, max(1, int(d.PairSteps/(4*max(n, 1)))), max(m, 1))
	tris := make([][]uint32, workers)
	// rowBase[a] + b - 1 indexes pair (a, b), b > a.
	rowBase := make([]int64, f)
	for a := range f {
		rowBase[a] = int64(a)*int64(2*f-a-1)/2 - int64(a)
	}
	parallelDo(workers, func(w int) {
		tri := make([]uint32, n)
		for t := w * m / workers; t < (w+1)*m/workers; t++ {
			if t%4096 == 0 && (ctx.Err() != nil || out.Err() != nil) {
				return
			}
			items := h.Set(t)
			for i, a := range items {
				row := tri[rowBase[a]:]
				for _, b := range items[i+1:] {
					row[b-1]++
				}
			}
		}
		tris[w] = tri
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	// Sum the triangles and report, rows split among the workers.
	writers := make([]*Writer, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
	}
	need := uint32(d.MinSupport)
	err := forItems(ctx, d.Threads, f, func(a int) int64 { return int64(f - a) }, out, "pairs", func(w, a int) {
		lo, hi := rowBase[a]+int64(a), rowBase[a]+int64(f)-1
		row := tris[0][lo:hi]
		for _, t := range tris[1:] {
			for i, c := range t[lo:hi] {
				row[i] += c
			}
		}
		for i, c := range row {
			if c >= need {
				writers[w].Add(uint32(a), uint32(a+1+i), c)
			}
		}
	})
	for _, wr := range writers {
		wr.Close()
	}
	return err
}
