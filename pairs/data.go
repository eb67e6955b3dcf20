package pairs

import (
	"fmt"
	"slices"
	"sync"

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

	tx      *sets.Collection
	ranksOf func(t int, buf []uint32) []uint32
	counts  [][]uint64 // per worker of the first pass, per rank

	vertOnce sync.Once
	vert     *sets.Collection

	horizOnce sync.Once
	horiz     *sets.Collection
	posOnce   sync.Once
	positions []uint32
}

// Frequent returns the number of frequent items, f.
func (d *Data) Frequent() int { return len(d.Items) }

// Horizontal returns the transactions with only their frequent items, as
// increasing ranks, built from the input on first use.
func (d *Data) Horizontal() *sets.Collection {
	d.horizOnce.Do(func() {
		m := d.Transactions
		h := &sets.Collection{Offsets: make([]uint64, m+1), Elements: make([]uint32, d.Occurrences)}
		for t, n := range d.Lengths {
			h.Offsets[t+1] = h.Offsets[t] + uint64(n)
		}
		workers := min(max(d.Threads, 1), max(1, m>>10))
		parallelDo(workers, func(w int) {
			for t := w * m / workers; t < (w+1)*m/workers; t++ {
				d.ranksOf(t, h.Elements[h.Offsets[t]:h.Offsets[t]])
			}
		})
		d.horiz = h
	})
	return d.horiz
}

// HorizontalBytes is the memory Horizontal allocates.
func (d *Data) HorizontalBytes() int64 { return 4*d.Occurrences + 8*int64(d.Transactions+1) }

// Positions returns, for the k-th element of Vertical.Elements (rank a in
// transaction t), the position of a in transaction t of Horizontal. It is
// built on first use.
func (d *Data) Positions() []uint32 {
	d.posOnce.Do(func() {
		h := d.Horizontal()
		v := d.Vertical()
		m, f := d.Transactions, d.Frequent()
		pos := make([]uint32, len(v.Elements))
		workers := min(max(d.Threads, 1), max(1, m>>10))
		// Each worker's cursor into every tidlist: where its transactions
		// start, found by binary search.
		parallelDo(workers, func(w int) {
			lo, hi := w*m/workers, (w+1)*m/workers
			cur := make([]uint64, f)
			for r := range f {
				i, _ := slices.BinarySearch(v.Set(r), uint32(lo))
				cur[r] = v.Offsets[r] + uint64(i)
			}
			for t := lo; t < hi; t++ {
				for k, r := range h.Set(t) {
					pos[cur[r]] = uint32(k)
					cur[r]++
				}
			}
		})
		d.positions = pos
	})
	return d.positions
}

// PositionsBytes is the memory Positions allocates.
func (d *Data) PositionsBytes() int64 { return 4 * d.Occurrences }

// Density is the average tidlist length over the number of transactions.
func (d *Data) Density() float64 {
	if d.Transactions == 0 || len(d.Items) == 0 {
		return 0
	}
	return float64(d.Occurrences) / float64(len(d.Items)) / float64(d.Transactions)
}

// prepare counts the supports, keeps the frequent items and builds their
// tidlists. budget bounds the bytes it may allocate.
func prepare(tx *sets.Collection, minSupport, threads int, budget int64) (*Data, error) {
	m := tx.Len()
	if uint64(m) > 1<<32-1 {
		return nil, fmt.Errorf("pairs: %d transactions, at most 2^32-1", m)
	}
	d := &Data{Transactions: m, MinSupport: minSupport, Threads: threads, AllOccurrences: int64(len(tx.Elements)), tx: tx}
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
	} else if dense := maxItem + 1; dense <= max(1<<24, 2*int64(len(tx.Elements))) {
		if need := 4 * dense * int64(min(threads, 8)+1); need > budget {
			return nil, fmt.Errorf("pairs: counting supports of item ids up to %d needs %d MiB, over the %d MiB budget: %w", maxItem, need>>20, budget>>20, ErrCannotRun)
		}
		ids, counts = countDense(tx, int(dense), threads)
	} else {
		if need := 8 * int64(len(tx.Elements)); need > budget {
			return nil, fmt.Errorf("pairs: counting supports needs %d MiB, over the %d MiB budget: %w", need>>20, budget>>20, ErrCannotRun)
		}
		ids, counts = countSorted(tx)
	}
	d.DistinctItems = len(ids)
	// Frequent items, by increasing id (ids are sorted).
	var freq []int
	for i, c := range counts {
		if int(c) >= minSupport {
			freq = append(freq, i)
			d.Occurrences += int64(c)
		}
	}
	f := len(freq)
	d.Items = make([]uint32, f)
	d.Support = make([]uint32, f)
	for r, i := range freq {
		d.Items[r], d.Support[r] = ids[i], counts[i]
	}
	if need := d.preparedBytes(); need > budget {
		return nil, fmt.Errorf("pairs: the transaction lengths and rank lookup of %d frequent items need %d MiB, over the %d MiB budget: %w", f, need>>20, budget>>20, ErrCannotRun)
	}
	d.lengths(maxItem, threads)
	for _, n := range d.Lengths {
		d.PairSteps += int64(n) * int64(n-1) / 2
	}
	return d, nil
}

// preparedBytes is the memory of the transaction lengths, the rank lookup
// and the first pass's counts.
func (d *Data) preparedBytes() int64 {
	return 4*int64(d.Transactions) + 4*int64(d.DistinctItems) + 8*int64(len(d.Items))*int64(min(d.Threads, 64))
}

// VerticalBytes is the memory of the tidlists.
func (d *Data) VerticalBytes() int64 { return 4*d.Occurrences + 8*int64(len(d.Items)+1) }

// Vertical returns the tidlist of each rank: the ids of the transactions
// that contain it, increasing. It is built on first use: workers take
// contiguous ranges of transactions and write each tidlist's part for
// their range at the offsets counted by the first pass, so tidlists come
// out sorted.
func (d *Data) Vertical() *sets.Collection {
	d.vertOnce.Do(func() {
		f, m := d.Frequent(), d.Transactions
		v := &sets.Collection{Offsets: make([]uint64, f+1), Elements: make([]uint32, d.Occurrences)}
		for r := range f {
			v.Offsets[r+1] = v.Offsets[r] + uint64(d.Support[r])
		}
		workers := len(d.counts)
		// Turn counts into each worker's write cursors.
		for r := range f {
			at := v.Offsets[r]
			for w := range workers {
				n := d.counts[w][r]
				d.counts[w][r] = at
				at += n
			}
		}
		parallelDo(workers, func(w int) {
			cur := d.counts[w]
			var buf []uint32
			for t := w * m / workers; t < (w+1)*m/workers; t++ {
				buf = d.ranksOf(t, buf[:0])
				for _, r := range buf {
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

// lengths sets up the rank lookup and counts, per worker's range of
// transactions, the frequent items of each transaction and of each rank.
func (d *Data) lengths(maxItem int64, threads int) {
	tx := d.tx
	m, f := tx.Len(), len(d.Items)
	// ranksOf appends the ranks of transaction t's frequent items to buf:
	// through an array indexed by item id when ids are dense, by binary
	// search among the frequent ids otherwise.
	if maxItem >= 0 && maxItem+1 <= max(1<<24, 2*int64(len(tx.Elements))) {
		rankOf := make([]uint32, maxItem+1) // rank + 1; 0 for infrequent items
		for r, x := range d.Items {
			rankOf[x] = uint32(r + 1)
		}
		d.ranksOf = func(t int, buf []uint32) []uint32 {
			for _, x := range tx.Set(t) {
				if r := rankOf[x]; r != 0 {
					buf = append(buf, r-1)
				}
			}
			return buf
		}
	} else {
		keys := d.Items // ranks are in increasing order of item id
		d.ranksOf = func(t int, buf []uint32) []uint32 {
			for _, x := range tx.Set(t) {
				if i, ok := slices.BinarySearch(keys, x); ok {
					buf = append(buf, uint32(i))
				}
			}
			return buf
		}
	}
	workers := min(max(threads, 1), 64, max(1, m>>10))
	d.Lengths = make([]uint32, m)
	d.counts = make([][]uint64, workers)
	parallelDo(workers, func(w int) {
		c := make([]uint64, f)
		var buf []uint32
		for t := w * m / workers; t < (w+1)*m/workers; t++ {
			buf = d.ranksOf(t, buf[:0])
			for _, r := range buf {
				c[r]++
			}
			d.Lengths[t] = uint32(len(buf))
		}
		d.counts[w] = c
	})
}

// parallelDo runs fn(0..n-1) on n goroutines and waits.
func parallelDo(n int, fn func(w int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}
