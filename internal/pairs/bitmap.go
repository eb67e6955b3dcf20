package pairs

import (
	"context"
	"fmt"
	"sync"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/hugepage"
)

// bitmapEngine stores the tidlist of every frequent item as a bitmap over
// the transactions and counts every pair by AND and popcount, 64
// transactions a word: package allpairs' bit-packed matrix product ("mm",
// AVX-512 VPOPCNTQ in 4×4 register blocks), which is this problem exactly
// (the supports of pairs are the all-pairs overlaps of the tidlists). It
// wins where the data are dense: on the BATMAP paper's instances it does
// C(f, 2)·⌈m/64⌉ word operations where apriori does an increment for
// every pair of items of every transaction.
type bitmapEngine struct{ cpu }

func (bitmapEngine) Name() string { return "bitmap" }

// bitmapWords is the number of 64-bit words of one tidlist bitmap.
func bitmapWords(d *Data) int64 { return (int64(d.Transactions) + 63) / 64 }

func (bitmapEngine) Estimate(d *Data) (Estimate, error) {
	f, words := d.Frequent(), bitmapWords(d)
	pairWords := float64(triangle(f)) * float64(words)
	c := d.unitCosts()
	sec := (pairWords*c.bitmapWord + float64(triangle(f))*c.bitmapPair + float64(d.Occurrences)*c.bitmapBuild) / float64(d.Threads)
	// The tidlists and their bitmaps; allpairs' problem over them (the
	// items' ids, the transactions' frequencies), its tiles (a buffer of
	// 2^18 counts a thread, a list of up to 2^16) and writers.
	mem := d.VerticalBytes() + hugepage.Bytes(int64(f)*words*8) + 4*int64(f) + 4*int64(d.Transactions+1) +
		int64(d.Threads)*(4<<18) + 12<<16 + int64(2*d.Threads+1)*writersBytes(1)
	return Estimate{Seconds: sec, Memory: mem,
		Detail: fmt.Sprintf("%d bitmaps of %d words, %.3g word pairs", f, words, pairWords)}, nil
}

func (bitmapEngine) Run(ctx context.Context, d *Data, out *Output) error {
	q := allpairs.Query{MinOverlap: d.MinSupport}
	opt := allpairs.Options{Device: "cpu", Technique: "mm", Threads: d.Threads,
		Progress: func(done, total int64) { out.Progress("pairs", done, total) }}
	if out.CountOnly() {
		n, _, err := allpairs.Count(ctx, d.Vertical(), nil, q, opt)
		if err != nil {
			return err
		}
		w := out.Writer()
		w.AddCount(n)
		w.Close()
		return nil
	}
	// allpairs calls back from several goroutines at once: each call takes
	// a writer of its own from the pool.
	var mu sync.Mutex
	var all []*Writer
	pool := make(chan *Writer, 2*d.Threads+1)
	_, err := allpairs.Join(ctx, d.Vertical(), nil, q, opt, func(ps []allpairs.Pair) error {
		var w *Writer
		select {
		case w = <-pool:
		default:
			w = out.Writer()
			mu.Lock()
			all = append(all, w)
			mu.Unlock()
		}
		w.addRanked(ps)
		select {
		case pool <- w:
		default: // more callers than the pool holds: the writer stays in all
		}
		return out.Err()
	})
	for _, w := range all {
		w.Close()
	}
	return err
}
