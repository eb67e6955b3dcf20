package allpairs

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/internal/engine"
)

// Output receives an engine's results and passes them on to the caller:
// pairs in batches, dense tiles one at a time, or only a count. Its methods
// are safe for concurrent use, except those of each Writer.
type Output struct {
	notes     *engine.Notes
	p         *Problem
	countOnly bool
	sink      func([]Pair) error // pair plans, unless countOnly
	tileFn    func(*Tile) error  // tile plans
	progress  func(done, total int64)

	tileMu sync.Mutex
	count  atomic.Int64
	done   atomic.Int64
	first  engine.FirstError
	free   engine.FreeList[*Writer]
}

// batchSize is the number of pairs a Writer buffers before it calls the
// sink: large enough that the sink's per-call costs vanish.
const batchSize = 1 << 13

func (o *Output) fail(err error) { o.first.Set(err) }

// Err returns the first error of the caller's callbacks, if any; engines
// check it between chunks of work and stop.
func (o *Output) Err() error { return o.first.Err() }

// Note records a line of the run's account (where its time went, on which
// device), which the plan's Notes return.
func (o *Output) Note(format string, args ...any) { o.notes.Add(format, args...) }

// CountOnly reports whether the caller wants only the number of pairs:
// an engine may then count them where it computes them (Writer.AddCount).
func (o *Output) CountOnly() bool { return o.countOnly }

// Progress records that n more pairs of the problem are done.
func (o *Output) Progress(n int64) {
	d := o.done.Add(n)
	if o.progress != nil {
		o.progress(d, o.p.Stats.Pairs)
	}
}

// Writer buffers the pairs of one goroutine. Engines report pairs by their
// positions in Problem.R and Problem.S; in a self-join with i < j.
type Writer struct {
	o          *Output
	rids, sids []uint32
	buf        []Pair
	n          int64
	countOnly  bool
}

// Writer returns a writer for one goroutine; the engine must Close it.
func (o *Output) Writer() *Writer {
	if w, ok := o.free.Get(); ok {
		return w
	}
	w := &Writer{o: o, rids: o.p.RIDs, sids: o.p.SIDs, countOnly: o.countOnly}
	if !w.countOnly {
		w.buf = make([]Pair, 0, batchSize)
	}
	return w
}

// Add reports pair (i, j) with overlap c. It does not check the threshold.
func (w *Writer) Add(i, j int, c uint32) {
	if w.countOnly {
		w.n++
		return
	}
	w.buf = append(w.buf, Pair{I: w.rids[i], J: w.sids[j], Count: c})
	if len(w.buf) == cap(w.buf) {
		w.flush()
	}
}

// AddTriples reports the pairs of triples, three values a pair: (i-i0,
// j-j0, overlap), as Add(i0+triples[3k], j0+triples[3k+1], triples[3k+2])
// would, in one loop. It does not check the threshold.
func (w *Writer) AddTriples(i0, j0 int, triples []uint32) {
	n := len(triples) / 3
	if w.countOnly {
		w.n += int64(n)
		return
	}
	rids, sids := w.rids[i0:], w.sids[j0:]
	for len(triples) >= 3 {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		k := len(w.buf)
		part := min(len(triples)/3, cap(w.buf)-k)
		buf := w.buf[k : k+part]
		for x := range buf {
			t := triples[3*x : 3*x+3]
			buf[x] = Pair{I: rids[t[0]], J: sids[t[1]], Count: t[2]}
		}
		w.buf = w.buf[:k+part]
		triples = triples[3*part:]
	}
}

// CountOnly reports whether the caller wants only the number of pairs; an
// engine may then call AddCount instead of Add.
func (w *Writer) CountOnly() bool { return w.countOnly }

// AddCount reports n pairs without naming them; only for CountOnly writers.
func (w *Writer) AddCount(n int64) { w.n += n }

func (w *Writer) flush() { w.buf = engine.Send(w.o.sink, w.buf, &w.o.first) }

// Close flushes the writer and returns it to its Output for reuse.
func (w *Writer) Close() {
	w.o.count.Add(w.n)
	w.n = 0
	if !w.countOnly {
		w.flush()
	}
	w.o.free.Put(w)
}

// Tile delivers a dense tile of counts computed by an engine (RowIDs and
// ColIDs need not be set). For a tiled problem the tile must be one of the
// caller's grid, and it is passed on; otherwise it may have any shape, and
// its pairs that reach their threshold are reported (in a self-join, only
// the entries above the diagonal are read).
func (o *Output) Tile(t *Tile) error {
	if o.first.Failed() {
		return o.Err()
	}
	if rows, cols, ok := o.p.Tiled(); ok {
		kr, ks := o.p.R.Len(), o.p.S.Len()
		if t.Row0%rows != 0 || t.Col0%cols != 0 || t.Rows != min(rows, kr-t.Row0) || t.Cols != min(cols, ks-t.Col0) || len(t.Counts) < t.Rows*t.Cols {
			return fmt.Errorf("allpairs: engine delivered tile %dx%d at (%d, %d), not one of the %dx%d grid", t.Rows, t.Cols, t.Row0, t.Col0, rows, cols)
		}
		t.RowIDs = o.p.RIDs[t.Row0 : t.Row0+t.Rows]
		t.ColIDs = o.p.SIDs[t.Col0 : t.Col0+t.Cols]
		o.tileMu.Lock()
		defer o.tileMu.Unlock()
		if err := o.tileFn(t); err != nil {
			o.fail(err)
			return err
		}
		return nil
	}
	w := o.Writer()
	filterTile(o.p, t, w)
	w.Close()
	return o.Err()
}

// filterTile reports the qualifying pairs of a dense tile.
func filterTile(p *Problem, t *Tile, w *Writer) {
	need, constant := p.ConstNeed()
	// span returns row x's counts from the first column worth reading
	// (right of the diagonal in a self-join), and the column of the first.
	span := func(x int) ([]uint32, int) {
		y0 := 0
		if p.Self {
			y0 = min(t.Cols, max(0, t.Row0+x+1-t.Col0))
		}
		return t.Counts[x*t.Cols+y0 : (x+1)*t.Cols], t.Col0 + y0
	}
	switch {
	case constant && w.countOnly:
		var n int64
		for x := range t.Rows {
			row, _ := span(x)
			for _, c := range row {
				n += int64(b2u(c >= need))
			}
		}
		w.n += n
	case constant:
		// The rows' pairs go straight into the batch; a row that does not
		// fit takes the long way.
		buf, k := w.buf[:cap(w.buf)], len(w.buf)
		for x := range t.Rows {
			row, j0 := span(x)
			rid, sids := w.rids[t.Row0+x], w.sids[j0:j0+len(row)]
			if len(row) > len(buf)-k {
				w.buf = buf[:k]
				w.addRow(rid, sids, row, need)
				buf, k = w.buf[:cap(w.buf)], len(w.buf)
				continue
			}
			k += compactRow(buf[k:k+len(row)], rid, sids, row, need)
		}
		w.buf = buf[:k]
	default:
		for x := range t.Rows {
			row, j0 := span(x)
			i := t.Row0 + x
			ni := p.NeedR(i)
			for y, c := range row {
				if c >= ni || c >= p.NeedS(j0+y) {
					w.Add(i, j0+y, c)
				}
			}
		}
	}
}

// addRow reports (rid, sids[y]) for every row[y] >= need; sids and row
// have the same length.
func (w *Writer) addRow(rid uint32, sids, row []uint32, need uint32) {
	for len(row) > 0 {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		k := len(w.buf)
		part := min(len(row), cap(w.buf)-k)
		k += compactRow(w.buf[k:k+part], rid, sids[:part], row[:part], need)
		w.buf = w.buf[:k]
		row, sids = row[part:], sids[part:]
	}
}

// compactRow writes to dst, in order, (rid, sids[y], row[y]) for every
// row[y] >= need and returns how many. dst, sids and row have the same
// length. Every candidate is written, and the count grows only for those
// that qualify: no branch to mispredict on the threshold, which some tenth
// of the counts pass at random.
func compactRow(dst []Pair, rid uint32, sids, row []uint32, need uint32) int {
	sids = sids[:len(row)]
	dst = dst[:len(row)]
	k := 0
	for y, c := range row {
		dst[k] = Pair{I: rid, J: sids[y], Count: c}
		k += int(b2u(c >= need))
	}
	return k
}

// b2u is 1 for true and 0 for false, without a branch.
func b2u(b bool) uint32 {
	var u uint32
	if b {
		u = 1
	}
	return u
}
