package cli

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/hugepage"
	"github.com/xsect/xsect/internal/pairsort"
)

// streamOut writes formatted pairs while they come. The goroutines that
// produce the pairs format them into chunks of their own; a full chunk is
// queued, and a producer that finds a writer's place free starts a
// goroutine that writes the queue until it is empty. A producer never
// writes: it goes back to its pairs at once, where an engine may be
// waiting for them to reuse their buffer (a GPU's super-tile in pinned
// memory). A file xsect creates takes mappedWriters writers at once, each
// copying into the file's mapping (outmap_linux.go); anything else one
// write(2) at a time, in order (several to one file go no faster). Written chunks are
// reused, and there are at most max of them: when all are full or being
// filled, a producer waits for the writes to free one, so that memory
// stays bounded however slow the output (a pipe, a slow disk). A regular
// file has a temporary name until finish renames it.
type streamOut[P any] struct {
	w      *outputFile
	format func([]byte, []P) []byte // appends the lines of a batch
	pairs  atomic.Int64             // the pairs added

	mu         sync.Mutex
	freed      sync.Cond    // signalled when a chunk is written or a write fails
	part       [][]byte     // chunks being filled, not in use
	free       [][]byte     // empty chunks
	full       [][]byte     // chunks to write, in order
	chunks     int          // chunks allocated
	max        int          // chunks allowed
	writers    atomic.Int32 // the goroutines writing the queue
	maxWriters int32        // how many may
	writing    sync.WaitGroup

	failed atomic.Bool
	err    error // the first write's error; set under mu
}

// chunkCap is the capacity of a chunk, and chunkBytes the length from
// which it is written: room for one more batch of the engines' writers
// (8192 pairs, lines of at most 64 bytes; a larger batch makes the chunk
// grow), with the formatter's slack. A chunk is one huge page where the
// kernel gives them.
const (
	chunkCap   = 2 << 20
	chunkBytes = chunkCap - 64<<13 - 8
)

// queueChunks is the number of chunks a streamOut may use with threads
// producers (0: GOMAXPROCS) and a budget of left bytes: two for each
// producer and two more, as far as an eighth of the budget holds them,
// and at least 2 (one filled while one is written).
func queueChunks(threads int, left int64) int {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return int(max(min(int64(2*threads+2), left/8/chunkCap), 2))
}

// outputBudget splits left, the memory a command's input leaves, between
// its plan and its output, and returns the plan's part and the chunks of
// the output's queue: a count keeps nothing, a sort its least buffers (it
// takes what the plan leaves, after), a stream of formatted pairs its
// queue.
func outputBudget(left budget, count, sorted bool, threads int) (plan budget, queue int) {
	switch {
	case count:
		return left, 0
	case sorted:
		return left.left(pairsort.MinBudget), 0
	}
	queue = queueChunks(threads, left.Bytes)
	return left.left(int64(queue) * chunkCap), queue
}

// peakMemory returns the memory predicted at a run's peak and what it is
// made of, for --explain: the input (named what), the plan and, where the
// pairs are streamed, the output's queue of queue chunks.
func peakMemory(what string, in, plan int64, queue int) (total, parts string) {
	out := int64(queue) * chunkCap
	parts = fmt.Sprintf("%s %s, the plan %s", what, engine.Bytes(in), engine.Bytes(plan))
	if queue > 0 {
		parts += fmt.Sprintf(", the output's queue %s", engine.Bytes(out))
	}
	return engine.Bytes(in + plan + out), parts
}

// newStreamOut returns a streamOut writing to w the lines format appends
// for each batch, with at most max chunks.
func newStreamOut[P any](w *outputFile, max int, format func([]byte, []P) []byte) *streamOut[P] {
	o := &streamOut[P]{w: w, max: max, format: format}
	o.maxWriters = int32(w.startChunks())
	o.freed.L = &o.mu
	return o
}

// errWriting stops a run whose output could not be written; finish
// returns the write's error.
var errWriting = errors.New("writing failed")

// add formats and writes a batch of pairs; safe for concurrent use.
func (o *streamOut[P]) add(ps []P) error {
	o.pairs.Add(int64(len(ps)))
	var b []byte
	o.mu.Lock()
	for b == nil {
		if o.failed.Load() {
			o.mu.Unlock()
			return errWriting
		}
		if n := len(o.part); n > 0 {
			b, o.part = o.part[n-1], o.part[:n-1]
		} else if n := len(o.free); n > 0 {
			b, o.free = o.free[n-1], o.free[:n-1]
		} else if o.chunks < o.max {
			o.chunks++
			o.mu.Unlock()
			b = hugepage.Make[byte](0, chunkCap)
			o.mu.Lock()
		} else {
			o.freed.Wait()
		}
	}
	o.mu.Unlock()
	b = o.format(b, ps)
	full := len(b) >= chunkBytes
	o.mu.Lock()
	if full {
		o.full = append(o.full, b)
	} else {
		o.part = append(o.part, b)
		o.freed.Signal() // a chunk to go on filling
	}
	o.mu.Unlock()
	if full && o.enterWriter() {
		o.writing.Go(o.write)
	}
	return nil
}

// flush writes the queued chunks unless enough goroutines are at it.
func (o *streamOut[P]) flush() {
	if o.enterWriter() {
		o.write()
	}
}

// write writes the queue until it is empty, in a writer's place taken by
// its caller. The check after each round catches the chunks queued while
// the writers were finishing: their producers found no place free.
func (o *streamOut[P]) write() {
	for entered := true; entered; entered = o.enterWriter() {
		for {
			o.mu.Lock()
			if len(o.full) == 0 {
				o.mu.Unlock()
				break
			}
			b := o.full[0]
			o.full = o.full[1:]
			failed := o.err != nil
			o.mu.Unlock()
			var err error
			if !failed {
				err = o.w.writeChunk(b)
			}
			o.mu.Lock()
			if err != nil && o.err == nil {
				o.err = err
				o.failed.Store(true)
			}
			o.free = append(o.free, b[:0])
			if o.err != nil {
				o.freed.Broadcast()
			} else {
				o.freed.Signal()
			}
			o.mu.Unlock()
		}
		o.writers.Add(-1)
		o.mu.Lock()
		n := len(o.full)
		o.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

// enterWriter takes a writer's place if one is free.
func (o *streamOut[P]) enterWriter() bool {
	for {
		n := o.writers.Load()
		if n >= o.maxWriters {
			return false
		}
		if o.writers.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// close ends the stream of a run that ended with runErr: it writes the
// rest where the run succeeded, and returns what the run ended with, the
// write's error where a failed write stopped it (or the writing failed at
// the end). The output is neither committed nor aborted. No add may be
// running or follow.
func (o *streamOut[P]) close(runErr error) error {
	o.writing.Wait()
	if runErr == nil {
		o.full = append(o.full, o.part...)
		o.flush()
	}
	if err := o.w.endChunks(); err != nil && o.err == nil {
		o.err = err
	}
	o.part, o.free, o.full = nil, nil, nil
	if o.err != nil && (runErr == nil || errors.Is(runErr, errWriting)) {
		return o.err
	}
	return runErr
}

// finish closes the stream and commits the output where the run and every
// write succeeded, or aborts it.
func (o *streamOut[P]) finish(runErr error) error {
	if err := o.close(runErr); err != nil {
		o.w.abort()
		return err
	}
	return o.w.commit()
}
