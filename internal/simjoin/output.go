package simjoin

import (
	"sync/atomic"

	"github.com/xsect/xsect/internal/engine"
)

// Pair is one similar pair: I indexes the first collection, J the second
// (or the first again in a self-join, where I < J), both by the sets'
// positions in the caller's collections. Overlap is |r[I] ∩ s[J]|, and
// Similarity the measure's value for the pair as a float64 (Overlap itself
// for the overlap measure); the decision that the pair is similar was
// made exactly, from Overlap and the sets' sizes.
type Pair struct {
	I, J       uint32
	Overlap    uint32
	Similarity float64
}

// Output receives an engine's similar pairs of records and passes them on
// to the caller as pairs of set ids (each pair of records standing for
// every pair of the equal sets they hold, unless the problem is
// Distinct), in batches, or only their number. Its methods are safe for
// concurrent use, except those of each Writer.
type Output struct {
	p         *Problem
	notes     *engine.Notes
	countOnly bool
	sink      func([]Pair) error
	progress  func(done, total int64)
	total     int64

	count atomic.Int64
	done  atomic.Int64
	first engine.FirstError
	free  engine.FreeList[*Writer]
}

// batchSize is the number of pairs a Writer buffers before it calls the
// sink: large enough that the sink's per-call costs vanish.
const batchSize = 1 << 13

func (o *Output) fail(err error) { o.first.Set(err) }

// Err returns the first error of the caller's callbacks, if any; engines
// check it between chunks of work and stop.
func (o *Output) Err() error { return o.first.Err() }

// Note records a line of the run's account, which the plan's Notes return.
func (o *Output) Note(format string, args ...any) { o.notes.Add(format, args...) }

// Progress records that n more records of the probing side are done.
func (o *Output) Progress(n int64) {
	d := o.done.Add(n)
	if o.progress != nil {
		o.progress(d, o.total)
	}
}

// CountOnly reports whether the caller wants only the number of pairs.
func (o *Output) CountOnly() bool { return o.countOnly }

// CountsRecords reports whether the caller wants only the number of
// pairs and each similar pair of records is one pair of sets (equal sets
// count once, or there are none): an engine may then report how many
// pairs of records it found (Writer.AddCount) without naming them.
func (o *Output) CountsRecords() bool {
	return o.countOnly && (o.p.Distinct || (o.p.R.DupOff == nil && o.p.S.DupOff == nil))
}

// Writer buffers the pairs of one goroutine.
type Writer struct {
	o         *Output
	r, s      *Side
	self      bool
	expand    bool // pairs of records stand for pairs of every equal set
	measure   Measure
	countOnly bool
	buf       []Pair
	n         int64
}

// Writer returns a writer for one goroutine; the engine must Close it.
func (o *Output) Writer() *Writer {
	if w, ok := o.free.Get(); ok {
		return w
	}
	p := o.p
	w := &Writer{o: o, r: p.R, s: p.S, self: p.Self, measure: p.Threshold.Measure, countOnly: o.countOnly,
		expand: !p.Distinct && (p.R.DupOff != nil || p.S.DupOff != nil)}
	if !w.countOnly {
		w.buf = make([]Pair, 0, batchSize)
	}
	return w
}

// Add reports that record x of R and record y of S share c elements and
// are similar (it does not check). In a self-join x != y.
func (w *Writer) Add(x, y int, c uint32) {
	if w.countOnly {
		if w.expand {
			w.n += int64(len(w.r.IDs(x))) * int64(len(w.s.IDs(y)))
		} else {
			w.n++
		}
		return
	}
	sim := w.measure.Similarity(c, w.r.Size(x), w.s.Size(y))
	if !w.expand {
		w.add(w.r.ID[x], w.s.ID[y], c, sim)
		return
	}
	for _, i := range w.r.IDs(x) {
		for _, j := range w.s.IDs(y) {
			w.add(i, j, c, sim)
		}
	}
}

// AddCount reports n similar pairs of records without naming them; only
// where the Output CountsRecords.
func (w *Writer) AddCount(n int64) {
	if !w.countOnly || w.expand {
		panic("simjoin: AddCount where pairs are wanted or stand for several")
	}
	w.n += n
}

// addUnits reports, for counting only, that every record of unit x of R
// is similar to every record of unit y of S.
func (w *Writer) addUnits(r *units, x int, s *units, y int) {
	xlo, xhi := r.records(x)
	ylo, yhi := s.records(y)
	if !w.expand {
		w.n += int64(xhi-xlo) * int64(yhi-ylo)
		return
	}
	for a := xlo; a < xhi; a++ {
		for b := ylo; b < yhi; b++ {
			w.Add(a, b, 0)
		}
	}
}

func (w *Writer) add(i, j, c uint32, sim float64) {
	if w.self && i > j {
		i, j = j, i
	}
	w.buf = append(w.buf, Pair{I: i, J: j, Overlap: c, Similarity: sim})
	if len(w.buf) == cap(w.buf) {
		w.flush()
	}
}

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

// addEqualSets reports, in a self-join that is not Distinct, the pairs of
// equal sets: each record's sets pair with one another, with similarity 1
// (when a set of its size reaches the threshold with itself, which only
// an overlap threshold above its size prevents).
func (o *Output) addEqualSets() {
	p := o.p
	r := p.R
	if !p.Self || p.Distinct || r.DupOff == nil {
		return
	}
	w := o.Writer()
	defer w.Close()
	for x := 0; x < r.Len(); x++ {
		ids := r.IDs(x)
		n := r.Size(x)
		if len(ids) < 2 || !p.Threshold.Reached(n, n, n) {
			continue
		}
		if w.countOnly {
			w.n += int64(len(ids)) * int64(len(ids)-1) / 2
			continue
		}
		sim := w.measure.Similarity(n, n, n)
		for a, i := range ids {
			for _, j := range ids[a+1:] {
				w.add(i, j, n, sim)
			}
		}
		if w.o.first.Failed() {
			return
		}
	}
}
