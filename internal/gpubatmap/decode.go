package gpubatmap

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/batmap"
)

// span is one tile's run of entries in a batch's output.
type span struct {
	start, n uint32
	t        tile
}

// spansOf returns the non-empty runs of a batch, from the kernel's runs
// array (start, length per tile of the launch), sorted by start.
func spansOf(bt *batch, runs []uint32) []span {
	var ss []span
	for i, t := range bt.tiles {
		if n := runs[2*i+1]; n != 0 {
			ss = append(ss, span{start: runs[2*i], n: n, t: t})
		}
	}
	slices.SortFunc(ss, func(x, y span) int { return cmp.Compare(x.start, y.start) })
	return ss
}

// decoder turns a run's output (exact counts: the kernel corrects for
// failed insertions) into pairs or tiles on the host.
type decoder struct {
	b        *batmap.Batmaps
	pl       *plan
	need     []uint32 // per position, or nil for minCount
	minCount uint32
	threads  int
	emit     func(worker int, ps []Pair) error
	tileFn   func(*batmap.Tile) error
	bufs     [][]Pair

	jobs    chan job
	workers sync.WaitGroup
	failed  atomic.Pointer[error]
}

func newDecoder(b *batmap.Batmaps, pl *plan, opt Options) *decoder {
	d := &decoder{b: b, pl: pl, need: opt.Need, minCount: opt.MinCount, threads: opt.threads()}
	if pl.mode == modePairs {
		d.bufs = make([][]Pair, d.threads)
		for i := range d.bufs {
			d.bufs[i] = make([]Pair, 0, pairBatch)
		}
	}
	return d
}

// pairBatch is the number of pairs handed to the caller at a time.
const pairBatch = 4096

func (d *decoder) needOf(p, q int) uint32 {
	if d.need == nil {
		return d.minCount
	}
	return min(d.need[p], d.need[q])
}

// deviceNeed returns the per-position thresholds the kernel gets.
func (d *decoder) deviceNeed() []uint32 {
	if d.need != nil {
		return d.need
	}
	nd := make([]uint32, d.b.Len())
	for i := range nd {
		nd[i] = d.minCount
	}
	return nd
}

// job is a range [a, e) of a batch's entries to decode, held in words
// from entry lo on.
type job struct {
	spans    []span
	words    []uint32
	lo, a, e int64
	done     *sync.WaitGroup
}

// jobEntries is the size of a job: small enough that the workers finish
// a piece of output together.
const jobEntries = 1 << 15

// start starts d.threads workers, each with its own worker id, that
// decode jobs until stop.
func (d *decoder) start() {
	d.jobs = make(chan job, 4*d.threads)
	for w := range d.threads {
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			for j := range d.jobs {
				if d.failed.Load() == nil {
					if err := d.decodeRange(w, j.spans, j.words, j.lo, j.a, j.e); err != nil {
						d.failed.CompareAndSwap(nil, &err)
					}
				}
				j.done.Done()
			}
		}()
	}
}

// err returns the first error of the workers.
func (d *decoder) err() error {
	if e := d.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// stop ends the workers and returns their first error.
func (d *decoder) stop() error {
	if d.jobs != nil {
		close(d.jobs)
		d.workers.Wait()
		d.jobs = nil
	}
	return d.err()
}

// submit queues the decoding of a piece of a batch's compacted output:
// entries [lo, lo+count) held in words (1 word an entry, or 2 when wide).
// done counts the piece's jobs until the workers have finished them.
func (d *decoder) submit(spans []span, words []uint32, lo int64, done *sync.WaitGroup) {
	per := int64(1)
	if d.pl.wide {
		per = 2
	}
	n := int64(len(words)) / per
	for a := lo; a < lo+n; a += jobEntries {
		done.Add(1)
		d.jobs <- job{spans: spans, words: words, lo: lo, a: a, e: min(a+jobEntries, lo+n), done: done}
	}
}

// pairs decodes a piece of output (as submit) and waits for it.
func (d *decoder) pairs(spans []span, words []uint32, lo int64) error {
	var wg sync.WaitGroup
	d.submit(spans, words, lo, &wg)
	wg.Wait()
	return d.err()
}

func (d *decoder) decodeRange(w int, spans []span, words []uint32, lo, a, e int64) error {
	k, _ := slices.BinarySearchFunc(spans, a, func(s span, i int64) int {
		if int64(s.start)+int64(s.n) <= i {
			return -1
		}
		return 1
	})
	buf := d.bufs[w][:0]
	wide := d.pl.wide
	for i := a; i < e; k++ {
		if k >= len(spans) || int64(spans[k].start) > i {
			return fmt.Errorf("gpubatmap: entry %d of a batch belongs to no tile (corrupt output)", i)
		}
		sp := spans[k]
		g, h := &d.pl.groups[sp.t.g], &d.pl.groups[sp.t.h]
		end := min(e, int64(sp.start)+int64(sp.n))
		for ; i < end; i++ {
			var r, c, cnt uint32
			if wide {
				x := words[2*(i-lo)]
				r, c, cnt = x>>16, x&0xffff, words[2*(i-lo)+1]
			} else {
				x := words[i-lo]
				r, c, cnt = x>>25, x>>18&127, x&(1<<18-1)
			}
			p, q := g.start+int(r), h.start+int(c)
			if int(r) >= g.len || int(c) >= h.len || p >= q {
				return fmt.Errorf("gpubatmap: entry (%d, %d) outside tile (%d, %d) (corrupt output)", r, c, sp.t.g, sp.t.h)
			}
			if cnt < d.needOf(p, q) {
				return fmt.Errorf("gpubatmap: pair (%d, %d) of count %d under its threshold %d (corrupt output)", p, q, cnt, d.needOf(p, q))
			}
			buf = append(buf, Pair{I: uint32(p), J: uint32(q), Count: cnt})
			if len(buf) == cap(buf) {
				if err := d.emit(w, buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		return d.emit(w, buf)
	}
	return nil
}

// dense delivers rows [row0, row0+rows) of a dense batch whose columns
// start at col0 (the batch's first row).
func (d *decoder) dense(row0, col0, rows int, counts []uint32) error {
	cols := d.pl.n - col0
	return d.tileFn(&batmap.Tile{Row0: row0, Col0: col0, Rows: rows, Cols: cols, Counts: counts[:rows*cols]})
}
