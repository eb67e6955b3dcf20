package pairs

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/par"
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

func triangle(f int) int64 { return int64(f) * int64(max(f-1, 0)) / 2 }

func (apriori) Estimate(d *Data) (Estimate, error) {
	f := d.Frequent()
	mem := d.HorizontalBytes() + 8*int64(f)*int64(d.Threads) + forItemsBytes(f) + writersBytes(d.Threads)
	if triangle(f) <= smallTriangle {
		mem += smallBytes(d)
	} else {
		mem += d.VerticalBytes() + rowSpansBytes(d)
	}
	// Rows denser than a quarter are scanned whole.
	scanned := min(float64(triangle(f)), 4*float64(d.PairSteps))
	c := d.unitCosts()
	sec := (float64(d.PairSteps)*c.aprioriIncrement + scanned*c.aprioriEntry + float64(d.Occurrences)*c.aprioriVisit) / float64(d.Threads)
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
	if len(d.Horizontal().Elements) < 1<<32 {
		return aprioriRows(ctx, d, out, rowSpans[uint32](d))
	}
	return aprioriRows(ctx, d, out, rowSpans[uint64](d))
}

// span is where, in the horizontal database's elements, the ranks after
// one occurrence of an item start and its transaction ends.
type span[T uint32 | uint64] struct{ lo, hi T }

// rowSpans returns the span of every element of the tidlists (rank a in
// transaction t, in the order of Vertical): what the counting of row a
// reads, without looking up where t starts and ends (two dependent cache
// misses per visit, where a span costs one).
func rowSpans[T uint32 | uint64](d *Data) []span[T] {
	h, v := d.Horizontal(), d.Vertical()
	m, f := d.Transactions, d.Frequent()
	spans := hugepage.Make[span[T]](len(v.Elements), len(v.Elements))
	workers := min(max(d.Threads, 1), max(1, m>>10))
	// Each worker's cursor into every tidlist: where its transactions
	// start, found by binary search.
	par.Do(workers, func(w int) {
		lo, hi := w*m/workers, (w+1)*m/workers
		cur := make([]uint64, f)
		for r := range f {
			i, _ := slices.BinarySearch(v.Set(r), uint32(lo))
			cur[r] = v.Offsets[r] + uint64(i)
		}
		for t := lo; t < hi; t++ {
			start, end := h.Offsets[t], h.Offsets[t+1]
			for k, r := range h.Elements[start:end] {
				spans[cur[r]] = span[T]{T(start) + T(k) + 1, T(end)}
				cur[r]++
			}
		}
	})
	return spans
}

// rowSpansBytes is the memory of rowSpans.
func rowSpansBytes(d *Data) int64 {
	// And each worker's cursors into the tidlists.
	cursors := 8 * int64(d.Frequent()) * int64(min(max(d.Threads, 1), max(1, d.Transactions>>10)))
	if d.Occurrences < 1<<32 {
		return hugepage.Bytes(8*d.Occurrences) + cursors
	}
	return hugepage.Bytes(16*d.Occurrences) + cursors
}

// prefetch is how many visits ahead aprioriRows loads a transaction.
const prefetch = 8

// aprioriRows counts row by row: for item a, the ranks after a in each
// transaction of its tidlist, through spans.
func aprioriRows[T uint32 | uint64](ctx context.Context, d *Data, out *Output, spans []span[T]) error {
	f := d.Frequent()
	h, v := d.Horizontal(), d.Vertical()
	writers := make([]*Writer, d.Threads)
	rows := make([][]uint32, d.Threads)
	touched := make([][]uint32, d.Threads)
	sinks := make([]uint32, d.Threads) // keeps the loads ahead from being dropped
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
		sp := spans[v.Offsets[a]:v.Offsets[a+1]]
		wr := writers[w]
		if float64(d.Support[a])*avgLen < float64(len(row))/4 {
			if touched[w] == nil {
				touched[w] = make([]uint32, f)
			}
			// The counters touched, listed without a branch (first
			// touches are too frequent to predict): each is written at
			// n, which moves on when the counter was 0.
			tl := touched[w][:len(row)]
			n := 0
			var sink uint32
			for k, s := range sp {
				// Load a transaction a few visits ahead, so that its
				// cache miss overlaps the work of this one.
				if k+prefetch < len(sp) {
					sink += h.Elements[sp[k+prefetch].lo-1]
				}
				for _, b := range h.Elements[s.lo:s.hi] {
					x := b - uint32(a) - 1
					c := row[x]
					tl[n] = x
					n += 1 - int((c|-c)>>31)
					row[x] = c + 1
				}
			}
			for _, x := range tl[:n] {
				if c := row[x]; c >= need {
					wr.Add(uint32(a), uint32(a+1)+x, c)
				}
				row[x] = 0
			}
			sinks[w] += sink
			return
		}
		var sink uint32
		for k, s := range sp {
			if k+prefetch < len(sp) {
				sink += h.Elements[sp[k+prefetch].lo-1]
			}
			addRow(row, h.Elements[s.lo:s.hi], uint32(a+1))
		}
		sinks[w] += sink
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
// counter in the worker's own triangle. The counters are 16-bit, half the
// cache footprint; a worker whose share exceeds 65535 transactions adds
// them into 32-bit ones after each 65535.
func aprioriSmall(ctx context.Context, d *Data, out *Output) error {
	f := d.Frequent()
	h := d.Horizontal()
	m := h.Len()
	n := int(triangle(f))
	workers := smallWorkers(d)
	narrow := make([][]uint16, workers)
	wide := make([][]uint32, workers)
	// rowBase[a] + b - 1 indexes pair (a, b), b > a.
	rowBase := make([]int, f)
	for a := range f {
		rowBase[a] = a*(2*f-a-1)/2 - a
	}
	par.Do(workers, func(w int) {
		lo, hi := w*m/workers, (w+1)*m/workers
		tri := hugepage.Make[uint16](n, n)
		for t0 := lo; t0 < hi; t0 += math.MaxUint16 {
			for t := t0; t < min(t0+math.MaxUint16, hi); t++ {
				if t%4096 == 0 && (ctx.Err() != nil || out.Err() != nil) {
					return
				}
				items := h.Set(t)
				for i, a := range items {
					addRow(tri[rowBase[a]:], items[i+1:], 1)
				}
			}
			if hi-lo > math.MaxUint16 {
				if wide[w] == nil {
					wide[w] = hugepage.Make[uint32](n, n)
				}
				for i, c := range tri {
					wide[w][i] += uint32(c)
				}
				clear(tri)
			}
		}
		narrow[w] = tri
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	// Sum the triangles and report, rows split among the workers.
	writers := make([]*Writer, d.Threads)
	sums := make([][]uint32, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
		sums[i] = make([]uint32, f)
	}
	need := uint32(d.MinSupport)
	err := forItems(ctx, d.Threads, f, func(a int) int64 { return int64(f - a) }, out, "pairs", func(w, a int) {
		lo, hi := rowBase[a]+a, rowBase[a]+f-1
		row := sums[w][:hi-lo]
		clear(row)
		for k := range workers {
			if wide[k] != nil {
				for i, c := range wide[k][lo:hi] {
					row[i] += c
				}
			} else {
				for i, c := range narrow[k][lo:hi] {
					row[i] += uint32(c)
				}
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

// smallWorkers is the number of workers of aprioriSmall: no more than
// there are transactions, and each with a share of at least 4 increments
// per counter of its triangle (which it allocates and sums).
func smallWorkers(d *Data) int {
	n := max(triangle(d.Frequent()), 1)
	return min(d.Threads, max(1, int(d.PairSteps/(4*n))), max(d.Transactions, 1))
}

// smallBytes is the memory of aprioriSmall's triangles.
func smallBytes(d *Data) int64 {
	w := int64(smallWorkers(d))
	b := hugepage.Bytes(2*triangle(d.Frequent())) * w
	if d.Transactions/int(w) >= math.MaxUint16 {
		b += hugepage.Bytes(4*triangle(d.Frequent())) * w
	}
	// The rows' bases, and each thread's sums.
	return b + 8*int64(d.Frequent()) + 4*int64(d.Frequent())*int64(d.Threads)
}
