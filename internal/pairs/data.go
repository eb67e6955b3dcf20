package pairs

import (
	"fmt"
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// Data is a transaction database prepared for pair mining: items below the
// minimum support removed, the frequent ones renumbered densely (their
// ranks, in increasing order of item id, so that a transaction's ranks are
// in order as its items are). Engines read it; it is not modified after
// NewPlan.
type Data struct {
	// Transactions is the number of transactions, m.
	Transactions int
	// MinSupport is the absolute support a pair needs.
	MinSupport int
	// Items[r] is the item id of rank r; Support[r] its support.
	Items   []uint32
	Support []uint32
	// Occurrences is the number of frequent-item occurrences: the total
	// length of the tidlists.
	Occurrences int64
	// AllOccurrences counts every item occurrence of the input.
	AllOccurrences int64
	// DistinctItems is the number of distinct items of the input.
	DistinctItems int
	// Lengths[t] is the number of frequent items of transaction t.
	Lengths []uint32
	// PairSteps is Σ_t C(Lengths[t], 2): the pair occurrences, which
	// counting engines increment one by one.
	PairSteps int64
	// Threads is the number of CPU goroutines engines use.
	Threads int
	// GPUs are the GPUs GPU engines may use (Options.GPUs; nil: all).
	GPUs []int

	tx *sets.Collection
	// rankOf[x] is 1 + the rank of item x, 0 for infrequent items, when
	// item ids are dense enough for an array; otherwise ranks are found by
	// binary search in Items.
	rankOf []uint32
	// counts[w][r] counts rank r in the transactions of worker w's range
	// (rangeOf) until Vertical turns it into write cursors.
	counts  [][]uint64
	workers int // the ranges of transactions of the preparation

	costs *costs // the CPU engines' per-unit costs; nil: defaultCosts
	tile  tile   // the tile mined (Options.Rows and Cols)

	vertOnce sync.Once
	vert     *sets.Collection

	horizOnce sync.Once
	horiz     *sets.Collection
	prepared  bool // horiz was built by the preparation

	memos engine.Memos
}

// Memo returns the value that build returns for key, calling build once per
// data set: an engine's Estimate and Run share what they decided this way
// (engines of other packages prefix their keys with their package).
func (d *Data) Memo(key string, build func() any) any {
	return d.memos.Get(key, build)
}

// unitCosts returns the per-unit costs the CPU engines' estimates use.
func (d *Data) unitCosts() costs {
	if d.costs == nil {
		c := defaultCosts()
		d.costs = &c
	}
	return *d.costs
}

// Frequent returns the number of frequent items, f.
func (d *Data) Frequent() int { return len(d.Items) }

// Horizontal returns the transactions with only their frequent items, as
// increasing ranks. NewPlan builds it with the lengths when it fits the
// memory budget; otherwise it is built from the input on first use.
func (d *Data) Horizontal() *sets.Collection {
	d.horizOnce.Do(func() {
		if d.prepared {
			return
		}
		m := d.Transactions
		h := &sets.Collection{Offsets: hugepage.Make[uint64](m+1, m+1), Elements: hugepage.Make[uint32](int(d.Occurrences), int(d.Occurrences))}
		for t, n := range d.Lengths {
			h.Offsets[t+1] = h.Offsets[t] + uint64(n)
		}
		par.Do(d.workers, func(w int) {
			lo, hi := d.rangeOf(w)
			var buf []uint32
			for t := lo; t < hi; t++ {
				s := d.tx.Set(t)
				buf = slices.Grow(buf[:0], len(s))
				n := d.ranks(s, buf[:len(s)])
				copy(h.Elements[h.Offsets[t]:h.Offsets[t+1]], buf[:n])
			}
		})
		d.horiz = h
	})
	return d.horiz
}

// HorizontalBytes is the memory Horizontal allocates: 0 when NewPlan built
// it.
func (d *Data) HorizontalBytes() int64 {
	if d.prepared {
		return 0
	}
	return hugepage.Bytes(4*d.Occurrences) + hugepage.Bytes(8*int64(d.Transactions+1))
}

// horizontalBytes is the memory of the horizontal database as the
// preparation builds it: room for every item occurrence of the input.
func horizontalBytes(tx *sets.Collection) int64 {
	return hugepage.Bytes(4*int64(len(tx.Elements))) + hugepage.Bytes(8*int64(tx.Len()+1))
}

// rangeOf is worker w's range of transactions in the preparation (and in
// Horizontal and Vertical, which use its counts).
func (d *Data) rangeOf(w int) (lo, hi int) {
	m := d.Transactions
	return w * m / d.workers, (w + 1) * m / d.workers
}

// ranks writes the ranks of the frequent items of s to dst, in order, and
// returns how many there are. dst must hold len(s) ranks.
func (d *Data) ranks(s, dst []uint32) int {
	n := 0
	if rankOf := d.rankOf; rankOf != nil {
		dst = dst[:len(s)]
		for _, x := range s {
			// Without a branch: an infrequent item's slot is reused.
			r := rankOf[x]
			dst[n] = r - 1
			n += int((r | -r) >> 31)
		}
		return n
	}
	for _, x := range s {
		if i, ok := slices.BinarySearch(d.Items, x); ok {
			dst[n] = uint32(i)
			n++
		}
	}
	return n
}

// Density is the average tidlist length over the number of transactions.
func (d *Data) Density() float64 {
	if d.Transactions == 0 || len(d.Items) == 0 {
		return 0
	}
	return float64(d.Occurrences) / float64(len(d.Items)) / float64(d.Transactions)
}

// prepare counts the supports, keeps the frequent items and builds their
// tidlists. budget bounds the bytes it may allocate.
func prepare(tx *sets.Collection, minSupport, threads int, budget int64, horizontal bool, t tile) (*Data, error) {
	m := tx.Len()
	if uint64(m) > 1<<32-1 {
		return nil, fmt.Errorf("pairs: %d transactions, at most 2^32-1", m)
	}
	d := &Data{Transactions: m, MinSupport: minSupport, Threads: threads, AllOccurrences: int64(len(tx.Elements)), tx: tx, tile: t}
	var maxItem int64 = -1
	for t := range m {
		if s := tx.Set(t); len(s) > 0 {
			maxItem = max(maxItem, int64(s[len(s)-1]))
		}
	}
	// Supports: by a dense counter array when item ids are dense enough,
	// otherwise by sorting a copy of the occurrences.
	var ids, counts []uint32
	if maxItem < 0 {
		// no items at all
	} else if dense(maxItem, tx) {
		// A count per item id for each worker, and the items with their
		// supports.
		if need := 4*(maxItem+1)*int64(min(threads, 8)) + 8*(maxItem+1); need > budget {
			return nil, fmt.Errorf("pairs: %w", engine.OverBudget("counting supports of item ids up to %d needs %s, over the budget of %s", maxItem, engine.Bytes(need), engine.Bytes(budget)))
		}
		ids, counts = countDense(tx, int(maxItem+1), threads)
	} else {
		// A sorted copy of the occurrences, and the items with their
		// supports.
		if need := 4*int64(len(tx.Elements)) + 8*int64(len(tx.Elements)); need > budget {
			return nil, fmt.Errorf("pairs: %w", engine.OverBudget("counting supports needs %s, over the budget of %s", engine.Bytes(need), engine.Bytes(budget)))
		}
		ids, counts = countSorted(tx)
	}
	d.DistinctItems = len(ids)
	// Frequent items, by increasing id (ids are sorted); of a tile, only
	// those of its rows and columns.
	f := 0
	for i, c := range counts {
		if int(c) >= minSupport && t.item(ids[i]) {
			f++
			d.Occurrences += int64(c)
		}
	}
	d.Items = make([]uint32, 0, f)
	d.Support = make([]uint32, 0, f)
	for i, c := range counts {
		if int(c) >= minSupport && t.item(ids[i]) {
			d.Items = append(d.Items, ids[i])
			d.Support = append(d.Support, c)
		}
	}
	ids, counts = nil, nil
	d.workers = min(max(threads, 1), 64, max(1, m>>10))
	lookup := int64(0) // the rank lookup: an array by item id when ids are dense
	if dense(maxItem, tx) {
		lookup = maxItem + 1
	}
	if need := d.fixedBytes(lookup); need > budget {
		return nil, fmt.Errorf("pairs: %w", engine.OverBudget("the transaction lengths and rank lookup of %d frequent items need %s, over the budget of %s", f, engine.Bytes(need), engine.Bytes(budget)))
	}
	if lookup > 0 {
		d.rankOf = make([]uint32, lookup) // rank + 1; 0 for infrequent items
		for r, x := range d.Items {
			d.rankOf[x] = uint32(r + 1)
		}
	}
	// With room for it, the horizontal database comes with the lengths.
	d.lengths(horizontal && d.preparedBytes()+horizontalBytes(tx) <= budget/2)
	for _, n := range d.Lengths {
		d.PairSteps += int64(n) * int64(n-1) / 2
	}
	return d, nil
}

// dense reports whether item ids up to maxItem are dense enough for arrays
// indexed by id (supports, ranks).
func dense(maxItem int64, tx *sets.Collection) bool {
	return maxItem >= 0 && maxItem+1 <= max(1<<24, 2*int64(len(tx.Elements)))
}

// preparedBytes is the memory of the transaction lengths, the rank lookup,
// the first pass's counts and, when NewPlan built it, the horizontal
// database.
func (d *Data) preparedBytes() int64 {
	n := d.fixedBytes(int64(len(d.rankOf)))
	if d.prepared {
		n += horizontalBytes(d.tx)
	}
	return n
}

// fixedBytes is the memory of the transaction lengths, a rank lookup of
// lookup entries, the frequent items and their supports, and the first
// pass's counts.
func (d *Data) fixedBytes(lookup int64) int64 {
	f := int64(len(d.Items))
	return 4*int64(d.Transactions) + 4*lookup + 8*f + 8*f*int64(max(d.workers, 1))
}

// VerticalBytes is the memory of the tidlists.
func (d *Data) VerticalBytes() int64 {
	return hugepage.Bytes(4*d.Occurrences) + 8*int64(len(d.Items)+1)
}

// Vertical returns the tidlist of each rank: the ids of the transactions
// that contain it, increasing. It is built on first use: workers take
// contiguous ranges of transactions and write each tidlist's part for
// their range at the offsets counted by the first pass, so tidlists come
// out sorted.
func (d *Data) Vertical() *sets.Collection {
	d.vertOnce.Do(func() {
		f := d.Frequent()
		v := &sets.Collection{Offsets: make([]uint64, f+1), Elements: hugepage.Make[uint32](int(d.Occurrences), int(d.Occurrences))}
		for r := range f {
			v.Offsets[r+1] = v.Offsets[r] + uint64(d.Support[r])
		}
		// Turn counts into each worker's write cursors.
		for r := range f {
			at := v.Offsets[r]
			for w := range d.workers {
				n := d.counts[w][r]
				d.counts[w][r] = at
				at += n
			}
		}
		var h *sets.Collection
		if d.prepared {
			h = d.horiz
		}
		par.Do(d.workers, func(w int) {
			cur := d.counts[w]
			lo, hi := d.rangeOf(w)
			var buf []uint32
			for t := lo; t < hi; t++ {
				var ranks []uint32
				if h != nil {
					ranks = h.Set(t)
				} else {
					s := d.tx.Set(t)
					buf = slices.Grow(buf[:0], len(s))
					ranks = buf[:d.ranks(s, buf[:len(s)])]
				}
				for _, r := range ranks {
					v.Elements[cur[r]] = uint32(t)
					cur[r]++
				}
			}
		})
		d.counts = nil
		d.vert = v
	})
	return d.vert
}

// countDense counts item supports in an array indexed by item id, on
// threads goroutines, and returns the items that occur with their counts.
func countDense(tx *sets.Collection, dense, threads int) (ids, counts []uint32) {
	m := tx.Len()
	workers := min(max(threads, 1), 8, max(1, len(tx.Elements)>>16))
	parts := make([][]uint32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]uint32, dense)
			for t := w * m / workers; t < (w+1)*m/workers; t++ {
				for _, x := range tx.Set(t) {
					c[x]++
				}
			}
			parts[w] = c
		}()
	}
	wg.Wait()
	total := parts[0]
	for _, p := range parts[1:] {
		for i, c := range p {
			total[i] += c
		}
	}
	clear(parts[1:])
	// Sized exactly: with millions of items, growing them would double
	// their memory.
	n := 0
	for _, c := range total {
		if c > 0 {
			n++
		}
	}
	ids, counts = make([]uint32, 0, n), make([]uint32, 0, n)
	for i, c := range total {
		if c > 0 {
			ids = append(ids, uint32(i))
			counts = append(counts, c)
		}
	}
	return ids, counts
}

// countSorted counts item supports by sorting a copy of all occurrences.
func countSorted(tx *sets.Collection) (ids, counts []uint32) {
	all := slices.Clone(tx.Elements)
	slices.Sort(all)
	n := 0
	for i := range all {
		if i == 0 || all[i] != all[i-1] {
			n++
		}
	}
	ids, counts = make([]uint32, 0, n), make([]uint32, 0, n)
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j] == all[i] {
			j++
		}
		ids = append(ids, all[i])
		counts = append(counts, uint32(j-i))
		i = j
	}
	return ids, counts
}

// lengths counts, per worker's range of transactions, the frequent items
// of each transaction and of each rank. With horiz, it also builds the
// horizontal database: each worker writes the ranks of its transactions
// where the input has its items (there is room, as items are only
// dropped), then the ranges are moved together.
func (d *Data) lengths(horiz bool) {
	tx := d.tx
	m, f := tx.Len(), len(d.Items)
	d.Lengths = make([]uint32, m)
	d.counts = make([][]uint64, d.workers)
	var h *sets.Collection
	if horiz {
		h = &sets.Collection{Offsets: hugepage.Make[uint64](m+1, m+1), Elements: hugepage.Make[uint32](len(tx.Elements), len(tx.Elements))}
	}
	kept := make([]uint64, d.workers) // the ranks each worker wrote
	par.Do(d.workers, func(w int) {
		c := make([]uint64, f)
		lo, hi := d.rangeOf(w)
		var buf []uint32
		if h != nil {
			at := tx.Offsets[lo]
			for t := lo; t < hi; t++ {
				s := tx.Set(t)
				n := d.ranks(s, h.Elements[at:at+uint64(len(s))])
				for _, r := range h.Elements[at : at+uint64(n)] {
					c[r]++
				}
				d.Lengths[t] = uint32(n)
				at += uint64(n)
			}
			kept[w] = at - tx.Offsets[lo]
		} else {
			for t := lo; t < hi; t++ {
				s := tx.Set(t)
				buf = slices.Grow(buf[:0], len(s))
				n := d.ranks(s, buf[:len(s)])
				for _, r := range buf[:n] {
					c[r]++
				}
				d.Lengths[t] = uint32(n)
			}
		}
		d.counts[w] = c
	})
	if h == nil {
		return
	}
	// Move the ranges together, in order (each moves down, or stays).
	at := uint64(0)
	for w := range d.workers {
		lo, _ := d.rangeOf(w)
		from := tx.Offsets[lo]
		copy(h.Elements[at:at+kept[w]], h.Elements[from:from+kept[w]])
		at += kept[w]
	}
	h.Elements = h.Elements[:at]
	for t, n := range d.Lengths {
		h.Offsets[t+1] = h.Offsets[t] + uint64(n)
	}
	d.horiz, d.prepared = h, true
}
