// Package pairsort sorts a stream of pairs (sets.Pair) by I, then J, in
// a bounded amount of memory whatever their number: an external merge
// sort whose runs stay in memory while the budget holds them and go to a
// temporary file when it does not. The xsect command's --sort and the
// Beam pipeline's sorted tiles share it.
package pairsort

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/xsect/xsect/sets"
)

// Sorter sorts pairs, by I then J, in the memory of its budget whatever
// their number. Pairs are gathered in a buffer; a full buffer is sorted
// and stored, compactly, as a run; at the end the runs are merged into the
// sorted stream of all the pairs. Runs are kept in memory as long as the
// budget holds them, then in a temporary file (in a directory of its own
// under $TMPDIR, removed when the sort ends, or by Abandon when a signal
// ends the process). When every pair fits in one buffer, the pairs are
// simply sorted.
//
// Buffers hold about a million pairs: sorting and merging runs that stay
// in the caches is faster than sorting one large array. Runs are encoded
// as the distance from the previous pair (the J's, within one I) and the
// count, in varints: 2 or 3 bytes a pair instead of 12 in the usual case.
type Sorter struct {
	runPairs int   // pairs a buffer holds
	memLimit int64 // bytes of runs kept in memory

	mu    sync.Mutex
	buf   []sets.Pair // being filled
	spare []sets.Pair // the other buffer, nil while it is stored
	err   error       // the first store's error
	total int64

	spill   sync.Mutex // held while a buffer is sorted and stored
	scratch []sets.Pair
	counts  []uint32
	mem     chunks   // the runs, while they fit in memory
	dir     string   // the temporary directory, once they do not
	runs    *os.File // there, the runs, one after the other
	w       *bufio.Writer
	at      int64   // the bytes of runs
	index   []runAt // the runs
	enc     []byte
}

// runAt is a stored run: where it starts and ends, and its pairs.
type runAt struct {
	start, end int64
	pairs      int64
}

// bytesPerPair is the memory a Sorter needs per pair of its buffer: the
// buffer being filled and the one being stored (12 bytes a pair each),
// the sort's copy (12) and its counts (4 a distinct I, at most one a
// pair).
const bytesPerPair = 12 + 12 + 12 + 4

// maxRunPairs bounds the pairs of a buffer.
const maxRunPairs = 1 << 20

// MinBudget is the least memory a Sorter works with: below it, its runs
// would be so short that the merge would read a few bytes at a time from
// thousands of them.
const MinBudget = 4 << 20

// New returns a sorter that uses about budget bytes (at least MinBudget):
// its buffers, and what they leave for runs in memory.
func New(budget int64) *Sorter {
	budget = max(budget, MinBudget)
	s := &Sorter{runPairs: int(min(budget/2/bytesPerPair, maxRunPairs))}
	s.memLimit = budget - int64(s.runPairs)*bytesPerPair
	return s
}

// Add adds pairs; safe for concurrent use. When the buffer is full, the
// caller sorts and writes it while the others fill the second buffer;
// when that one is full too, they wait: the pairs never take more than the
// two buffers.
func (s *Sorter) Add(ps []sets.Pair) error {
	for len(ps) > 0 {
		s.mu.Lock()
		if s.err != nil {
			s.mu.Unlock()
			return s.err
		}
		if len(s.buf) < s.runPairs {
			n := min(len(ps), s.runPairs-len(s.buf))
			if len(s.buf)+n > cap(s.buf) {
				// The first buffer grows as pairs come (few pairs take
				// little memory); geometrically, never past runPairs.
				b := make([]sets.Pair, len(s.buf), min(max(2*cap(s.buf), len(s.buf)+n, 1<<12), s.runPairs))
				copy(b, s.buf)
				s.buf = b
			}
			s.buf = append(s.buf, ps[:n]...)
			s.total += int64(n)
			ps = ps[n:]
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		if err := s.spillFull(); err != nil {
			return err
		}
	}
	return nil
}

// spillFull writes the full buffer as a run, unless another goroutine
// did while this one waited.
func (s *Sorter) spillFull() error {
	s.spill.Lock()
	defer s.spill.Unlock()
	s.mu.Lock()
	if len(s.buf) < s.runPairs {
		s.mu.Unlock()
		return nil
	}
	full := s.buf
	s.buf, s.spare = s.spare, nil
	if s.buf == nil {
		s.buf = make([]sets.Pair, 0, s.runPairs)
	}
	s.mu.Unlock()
	err := s.writeRun(full)
	s.mu.Lock()
	s.spare = full[:0]
	if err != nil && s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	return err
}

// writeRun sorts ps and stores it as a run: in memory while the runs fit
// there, else in the file, which it creates on first use (with the runs
// of memory). The spill lock is held.
func (s *Sorter) writeRun(ps []sets.Pair) error {
	sorted := s.sort(ps)
	start := s.at
	var e runEncoder
	for len(sorted) > 0 {
		n := min(len(sorted), 1<<14)
		s.enc = e.append(s.enc[:0], sorted[:n])
		if err := s.store(s.enc); err != nil {
			return spillError(err)
		}
		s.at += int64(len(s.enc))
		sorted = sorted[n:]
	}
	if s.w != nil {
		if err := s.w.Flush(); err != nil {
			return spillError(err)
		}
	}
	s.index = append(s.index, runAt{start, s.at, int64(len(ps))})
	return nil
}

// store appends encoded pairs to the runs.
func (s *Sorter) store(b []byte) error {
	if s.runs == nil && s.mem.size()+int64(len(b)) <= s.memLimit {
		s.mem.write(b)
		return nil
	}
	if s.runs == nil {
		dir, err := makeTempDir()
		if err != nil {
			return err
		}
		s.dir = dir
		if s.runs, err = os.Create(filepath.Join(dir, "runs")); err != nil {
			return err
		}
		s.w = bufio.NewWriterSize(s.runs, 1<<20)
		for _, c := range s.mem.parts {
			if _, err := s.w.Write(c); err != nil {
				return err
			}
		}
		s.mem = chunks{}
	}
	_, err := s.w.Write(b)
	return err
}

// chunks is bytes in memory in pieces of a mebibyte: it grows without
// copying what it holds.
type chunks struct{ parts [][]byte }

const chunkSize = 1 << 20

func (c *chunks) size() int64 {
	if len(c.parts) == 0 {
		return 0
	}
	return int64(len(c.parts)-1)*chunkSize + int64(len(c.parts[len(c.parts)-1]))
}

func (c *chunks) write(b []byte) {
	for len(b) > 0 {
		if n := len(c.parts); n == 0 || len(c.parts[n-1]) == chunkSize {
			c.parts = append(c.parts, make([]byte, 0, chunkSize))
		}
		last := &c.parts[len(c.parts)-1]
		k := min(len(b), chunkSize-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

// ReadAt reads from the bytes held, as a file would.
func (c *chunks) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		i, at := (off+int64(n))/chunkSize, (off+int64(n))%chunkSize
		if i >= int64(len(c.parts)) || at >= int64(len(c.parts[i])) {
			return n, io.EOF
		}
		n += copy(p[n:], c.parts[i][at:])
	}
	return n, nil
}

// spillError is a failure to write or read the runs: the temporary
// directory's file system, full or failing, is where to look. The
// message names the directory, not the files under it, which are gone by
// the time it is read.
func spillError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("sorting the pairs in temporary files (under %s; set TMPDIR to use another directory): %w", os.TempDir(), err)
}

// temps are the temporary directories of the sorts in progress, which
// Abandon removes.
var temps struct {
	sync.Mutex
	dirs      map[string]bool
	abandoned bool
}

// errAbandoned refuses a temporary directory once Abandon has run.
var errAbandoned = errors.New("the process is ending")

// makeTempDir creates a directory for a sort's runs under $TMPDIR (or
// /tmp), registered for Abandon.
func makeTempDir() (string, error) {
	temps.Lock()
	defer temps.Unlock()
	if temps.abandoned {
		return "", errAbandoned
	}
	dir, err := os.MkdirTemp("", "xsect-sort-")
	if err != nil {
		return "", err
	}
	if temps.dirs == nil {
		temps.dirs = map[string]bool{}
	}
	temps.dirs[dir] = true
	return dir, nil
}

// removeTempDir removes a directory of makeTempDir and what it holds.
func removeTempDir(dir string) {
	temps.Lock()
	defer temps.Unlock()
	os.RemoveAll(dir)
	delete(temps.dirs, dir)
}

// Abandon removes the temporary files of every sort in progress, for a
// signal that ends the process (see package sigexit): a sort stopped that
// way never reaches the end that removes them, and would leave gigabytes
// under $TMPDIR. The sorts that then try to spill fail: call it only on
// the way out.
func Abandon() {
	temps.Lock()
	defer temps.Unlock()
	temps.abandoned = true
	for dir := range temps.dirs {
		os.RemoveAll(dir)
	}
	clear(temps.dirs)
}

// sort sorts ps by I, then J, and returns the sorted pairs: ps itself, or
// the scratch buffer. With as many pairs as distinct I or more, by a
// counting sort on I into the scratch buffer, then each run of one I by J
// (engines mostly report them in order already); otherwise in place.
func (s *Sorter) sort(ps []sets.Pair) []sets.Pair {
	maxI := uint32(0)
	for _, p := range ps {
		maxI = max(maxI, p.I)
	}
	if int64(maxI)+2 > int64(len(ps)) || len(ps) < 1<<12 {
		slices.SortFunc(ps, sets.ComparePairs)
		return ps
	}
	if cap(s.scratch) < len(ps) {
		s.scratch = make([]sets.Pair, len(ps))
	}
	if cap(s.counts) < int(maxI)+1 {
		s.counts = make([]uint32, int(maxI)+1, s.runPairs+1)
	}
	out, start := s.scratch[:len(ps)], s.counts[:maxI+1]
	clear(start)
	for _, p := range ps {
		start[p.I]++
	}
	sum := uint32(0)
	for i, n := range start {
		start[i], sum = sum, sum+n
	}
	for _, p := range ps {
		out[start[p.I]] = p
		start[p.I]++
	}
	// start[i] is now where the pairs of I = i end.
	lo := uint32(0)
	for _, hi := range start {
		if run := out[lo:hi]; len(run) > 1 && !slices.IsSortedFunc(run, sets.ComparePairs) {
			slices.SortFunc(run, sets.ComparePairs)
		}
		lo = hi
	}
	return out
}

// runEncoder encodes a run of sorted pairs. Each pair is a varint of the
// distance from the previous J (less one), shifted left, or 1 when I
// changes, followed then by the distance in I and J itself; then the
// count.
type runEncoder struct {
	prev    sets.Pair
	started bool
}

// append appends the encoding of ps, which continue the run.
func (e *runEncoder) append(b []byte, ps []sets.Pair) []byte {
	prev := e.prev
	for _, p := range ps {
		if !e.started || p.I != prev.I {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(p.I-prev.I))
			b = binary.AppendUvarint(b, uint64(p.J))
			e.started = true
		} else {
			b = binary.AppendUvarint(b, uint64(p.J-prev.J-1)<<1)
		}
		b = binary.AppendUvarint(b, uint64(p.Count))
		prev = p
	}
	e.prev = prev
	return b
}

// runReader decodes a run from a section of the runs' file.
type runReader struct {
	f         io.ReaderAt
	at, end   int64 // the next byte to read, and the run's end
	buf       []byte
	pos       int       // the next byte of buf to decode
	left      int64     // the pairs not yet decoded
	cur       sets.Pair // the current pair
	readError error
}

// maxPairBytes is the most bytes one pair's encoding takes.
const maxPairBytes = 1 + 5 + 5 + 5

// next decodes the next pair into r.cur, and reports false at the run's
// end or on an error (r.readError).
func (r *runReader) next() bool {
	if r.left == 0 {
		return false
	}
	if len(r.buf)-r.pos < maxPairBytes && r.at < r.end && !r.fill() {
		return false
	}
	b := r.buf[r.pos:]
	v, n := binary.Uvarint(b)
	ok := n > 0
	switch {
	case ok && v&1 != 0:
		di, m := binary.Uvarint(b[n:])
		if ok, n = m > 0, n+m; ok {
			j, m := binary.Uvarint(b[n:])
			ok, n = m > 0, n+m
			r.cur.I += uint32(di)
			r.cur.J = uint32(j)
		}
	case ok:
		r.cur.J += uint32(v>>1) + 1
	}
	if ok {
		c, m := binary.Uvarint(b[n:])
		ok, n = m > 0, n+m
		r.cur.Count = uint32(c)
	}
	if !ok {
		r.readError = spillError(errors.New("a run of sorted pairs is corrupt"))
		return false
	}
	r.pos += n
	r.left--
	return true
}

// fill moves the bytes left to the front of the buffer and reads more.
func (r *runReader) fill() bool {
	n := copy(r.buf, r.buf[r.pos:])
	want := min(int64(cap(r.buf)-n), r.end-r.at)
	got, err := r.f.ReadAt(r.buf[n:n+int(want)], r.at)
	if int64(got) < want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.readError = spillError(err)
		return false
	}
	r.at += want
	r.buf, r.pos = r.buf[:n+got], 0
	return true
}

// runHeap orders run readers by their current pair.
type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(a, b int) bool { return sets.ComparePairs(h[a].cur, h[b].cur) < 0 }
func (h runHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// MaxBatch is the most pairs Finish hands on at a time.
const MaxBatch = 1 << 16

// minRunBuffer is the least buffer a run is read with in a merge; with
// more runs than the budget gives that to, they are merged in passes.
const minRunBuffer = 64 << 10

// Finish sorts what remains and calls emit with every pair, sorted, in
// batches of at most MaxBatch, one call at a time; a batch is valid only
// during the call, and an error from emit stops the sort and is returned.
// It then removes the temporary files. No Add may be running or follow.
func (s *Sorter) Finish(emit func([]sets.Pair) error) error {
	defer s.Close()
	if s.err != nil {
		return s.err
	}
	if len(s.index) == 0 {
		sorted := s.sort(s.buf)
		for len(sorted) > 0 {
			n := min(len(sorted), MaxBatch)
			if err := emit(sorted[:n]); err != nil {
				return err
			}
			sorted = sorted[n:]
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.writeRun(s.buf); err != nil {
			return err
		}
	}
	// The buffers' memory goes to the merge's reads.
	budget := int64(s.runPairs) * bytesPerPair
	s.buf, s.spare, s.scratch, s.counts = nil, nil, nil, nil
	if s.runs == nil {
		// Runs in memory are read in small pieces.
		return s.merge(&s.mem, s.index, minRunBuffer/4*int64(len(s.index)), emit)
	}
	budget += s.memLimit
	for len(s.index) > fanIn(budget) {
		if err := s.mergePass(budget); err != nil {
			return err
		}
	}
	return s.merge(s.runs, s.index, budget, emit)
}

// fanIn is the most runs merged at once with budget bytes to read them
// (and, in a pass, to write one): at least 2.
func fanIn(budget int64) int { return int(max(budget/minRunBuffer-1, 2)) }

// mergePass merges groups of runs into longer runs, in a new file, so
// that there are few enough for one merge of them all.
func (s *Sorter) mergePass(budget int64) error {
	fanIn := fanIn(budget)
	out, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("runs%d", len(s.index))))
	if err != nil {
		return spillError(err)
	}
	w := bufio.NewWriterSize(out, minRunBuffer)
	var index []runAt
	at := int64(0)
	var enc []byte
	for lo := 0; lo < len(s.index); lo += fanIn {
		group := s.index[lo:min(lo+fanIn, len(s.index))]
		r := runAt{start: at}
		var e runEncoder
		err := s.merge(s.runs, group, budget-minRunBuffer, func(ps []sets.Pair) error {
			enc = e.append(enc[:0], ps)
			at += int64(len(enc))
			r.pairs += int64(len(ps))
			_, err := w.Write(enc)
			return err
		})
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			out.Close()
			return spillError(err)
		}
		r.end = at
		index = append(index, r)
	}
	old := s.runs
	s.runs, s.index = out, index
	old.Close()
	os.Remove(old.Name())
	return nil
}

// merge merges the runs of f at index, reading each with an equal part
// of budget, and calls emit with the sorted pairs in batches.
func (s *Sorter) merge(f io.ReaderAt, index []runAt, budget int64, emit func([]sets.Pair) error) error {
	size := int(max(budget/int64(max(len(index), 1)), minRunBuffer/4))
	h := make(runHeap, 0, len(index))
	for _, r := range index {
		rr := &runReader{f: f, at: r.start, end: r.end, left: r.pairs, buf: make([]byte, 0, size)}
		if rr.next() {
			h = append(h, rr)
		} else if rr.readError != nil {
			return rr.readError
		}
	}
	heap.Init(&h)
	batch := make([]sets.Pair, 0, MaxBatch)
	for len(h) > 0 {
		r := h[0]
		// The pairs of the least run up to the next run's first pair
		// go together: runs that do not overlap are copied.
		var bound *sets.Pair
		switch {
		case len(h) == 2:
			bound = &h[1].cur
		case len(h) > 2:
			bound = &h[1].cur
			if sets.ComparePairs(h[2].cur, *bound) < 0 {
				bound = &h[2].cur
			}
		}
		for {
			batch = append(batch, r.cur)
			if len(batch) == MaxBatch {
				if err := emit(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
			if !r.next() {
				if r.readError != nil {
					return r.readError
				}
				heap.Pop(&h)
				break
			}
			if bound != nil && sets.ComparePairs(r.cur, *bound) > 0 {
				heap.Fix(&h, 0)
				break
			}
		}
	}
	if len(batch) > 0 {
		return emit(batch)
	}
	return nil
}

// Close removes the temporary files, for a sort given up before Finish
// (which calls it). It may be called more than once.
func (s *Sorter) Close() {
	if s.runs != nil {
		s.runs.Close()
	}
	if s.dir != "" {
		removeTempDir(s.dir)
		s.dir = ""
	}
}

// Len returns the number of pairs added.
func (s *Sorter) Len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// WriteLines finishes the sort (Finish) and writes the pairs to w, sorted,
// each batch turned into lines by format; the batches are formatted on
// several cores and written in order, and a failed write stops the sort
// and is the error returned.
func (s *Sorter) WriteLines(w io.Writer, format func([]byte, []sets.Pair) []byte) error {
	o := newOrderedWriter(w, format)
	err := s.Finish(o.add)
	// A failed write stops the merge: report the write's error.
	if oerr := o.close(); oerr != nil && (err == nil || errors.Is(err, errWriting)) {
		err = oerr
	}
	return err
}

// errWriting stops a merge whose output could not be written; WriteLines
// returns the write's error.
var errWriting = errors.New("writing failed")

// orderedWriter formats batches of pairs on several goroutines and writes
// them in the order they came, with a bounded number in flight: add waits
// when the writes fall behind.
type orderedWriter struct {
	format func([]byte, []sets.Pair) []byte
	free   chan *formatJob
	work   chan *formatJob
	order  chan *formatJob
	done   chan struct{}
	err    error // the first write's error; set by the writing goroutine
	failed chan struct{}
}

type formatJob struct {
	ps    []sets.Pair
	out   []byte
	ready chan struct{}
}

// orderedWorkers bounds the goroutines that format: more go faster than
// any disk or pipe, and each costs two batches of memory.
const orderedWorkers = 8

func newOrderedWriter(w io.Writer, format func([]byte, []sets.Pair) []byte) *orderedWriter {
	workers := min(runtime.GOMAXPROCS(0), orderedWorkers)
	jobs := workers + 2
	o := &orderedWriter{format: format, free: make(chan *formatJob, jobs), work: make(chan *formatJob, jobs),
		order: make(chan *formatJob, jobs), done: make(chan struct{}), failed: make(chan struct{})}
	for range jobs {
		o.free <- &formatJob{ps: make([]sets.Pair, 0, MaxBatch), ready: make(chan struct{}, 1)}
	}
	for range workers {
		go func() {
			for j := range o.work {
				j.out = o.format(j.out[:0], j.ps)
				j.ready <- struct{}{}
			}
		}()
	}
	go func() {
		defer close(o.done)
		for j := range o.order {
			<-j.ready
			if o.err == nil {
				if _, err := w.Write(j.out); err != nil {
					o.err = err
					close(o.failed)
				}
			}
			o.free <- j
		}
	}()
	return o
}

// add queues a copy of ps; it returns an error once a write has failed.
func (o *orderedWriter) add(ps []sets.Pair) error {
	for len(ps) > 0 {
		var j *formatJob
		select {
		case j = <-o.free:
		case <-o.failed:
			return errWriting
		}
		n := min(len(ps), MaxBatch)
		j.ps = append(j.ps[:0], ps[:n]...)
		ps = ps[n:]
		o.work <- j
		o.order <- j
	}
	return nil
}

// close waits for the queued batches to be written and returns the first
// write's error.
func (o *orderedWriter) close() error {
	close(o.work)
	close(o.order)
	<-o.done
	return o.err
}
