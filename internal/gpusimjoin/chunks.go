package gpusimjoin

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/internal/simjoin"
)

// chunk is a chunk of candidate pairs in the layout of
// simjoin.CandidateBatch, assembled from the filters' batches: probe i
// (a record of S) with candidates cands[starts[i]:starts[i+1]] (records of
// R), each needing need[k] common elements. A probe may occur more than
// once. It is verified by one launch.
type chunk struct {
	probes, starts, cands, need []uint32 // at capacity; starts has one more
	np, nc                      int      // probes and candidates taken
	// writers counts the batches still being copied in: the chunk may be
	// sealed before they are done, and is uploaded only after.
	writers sync.WaitGroup
}

func newChunk(capProbes, capCands int) *chunk {
	return &chunk{probes: make([]uint32, capProbes), starts: make([]uint32, capProbes+1),
		cands: make([]uint32, capCands), need: make([]uint32, capCands)}
}

// builder assembles the batches that the filters emit, from many
// goroutines at once, into chunks of at most capCands candidates and
// capProbes probes. An emitter reserves room under the lock and copies
// outside it, so that filters fill a chunk in parallel. Sealed chunks go
// to filled; emitters take empty ones from free, and wait there while the
// device is behind (the time they wait is stalled).
type builder struct {
	capProbes, capCands int
	// Once the filters' work left falls to endgame (CandidateBatch.Left),
	// a chunk is sealed as soon as it holds tailCands candidates: the
	// device then verifies small chunks as the filters finish, and what
	// is left when they are done is small.
	endgame   float64
	tailCands int
	// trip, if positive, is how long before the filters' predicted end
	// no chunk is sealed small any more: one sealed later would still be
	// on the device when they are done, so its pairs wait for the tail.
	// The end is predicted from the endgame's own pace: the work done
	// since egStart, when egLeft of it was left, in the time since; and
	// no later than from the pace since start. (That one alone puts the
	// end too late: it counts the index's build, and the tasks before the
	// endgame are larger. The endgame's pace alone is noisy where the
	// endgame is shorter than a trip: its first tasks' times are a few
	// microseconds.)
	trip    time.Duration
	now     func() time.Time // the clock (a test's fake)
	start   time.Time        // the run's
	egStart time.Time        // the first batch of the endgame, zero before
	egLeft  float64          // its work left

	free, filled chan *chunk
	stop         <-chan struct{} // closed when the run fails
	stopErr      func() error

	mu  sync.Mutex
	cur *chunk

	// cpuNS and devNS are the prices that split the chunks left at the
	// end: the CPU's wall time per pair on every core and the devices'
	// per pair (upload and kernel), in nanoseconds, and devTrip a chunk's
	// fixed round trip to the device. Without cpuNS the CPU takes only
	// what fits in its share.
	cpuNS, devNS float64
	devTrip      time.Duration

	stalled  atomic.Int64 // nanoseconds emitters waited for a free chunk
	pairs    atomic.Int64 // candidates taken
	onDevice atomic.Int64 // candidates submitted to the devices and not seen done
	// endDevice is the candidates of the chunks left at the end that
	// finishTail left to the device.
	endDevice int
}

// newBuilder returns a builder with n chunks of the given capacities.
func newBuilder(n, capProbes, capCands int, stop <-chan struct{}, stopErr func() error) *builder {
	bd := &builder{capProbes: capProbes, capCands: capCands, free: make(chan *chunk, n), filled: make(chan *chunk, n),
		stop: stop, stopErr: stopErr, endgame: -1, now: time.Now, start: time.Now()}
	for range n {
		ch, _ := chunkPool.Get().(*chunk)
		if ch == nil || len(ch.probes) < capProbes || len(ch.cands) < capCands {
			ch = newChunk(capProbes, capCands)
		}
		bd.free <- ch
	}
	return bd
}

// chunkPool keeps the chunks of earlier runs: allocating (and zeroing)
// them costs a run more than the filters take on small inputs.
var chunkPool sync.Pool

// release gives the free chunks to the pool, once the run is over.
func (bd *builder) release() {
	for {
		select {
		case ch := <-bd.free:
			chunkPool.Put(ch)
		default:
			return
		}
	}
}

// piece is the part of a batch that goes to one chunk: its probes
// [i0, i1) and candidates [k0, k1) (the first and last probe may be cut),
// placed at probe p0 and candidate c0 of the chunk.
type piece struct {
	ch             *chunk
	p0, c0         int
	i0, i1, k0, k1 int
}

// emit takes a batch of the filters into chunks. It is safe for
// concurrent use; b is not kept. Each piece is reserved under the lock and
// copied before the next is reserved: an emitter that waits for a free
// chunk (holding the lock) has no copy pending, so the device's goroutine,
// which waits for a sealed chunk's copies, never waits for it.
func (bd *builder) emit(b *simjoin.CandidateBatch) error {
	n := len(b.Cands)
	for i, k := 0, 0; k < n; {
		bd.mu.Lock()
		if bd.egStart.IsZero() && b.Left <= bd.endgame {
			bd.egStart, bd.egLeft = bd.now(), b.Left
		}
		ch := bd.cur
		if ch == nil {
			var err error
			if ch, err = bd.take(); err != nil {
				bd.mu.Unlock()
				return err
			}
			bd.cur = ch
		}
		k1 := min(n, k+bd.capCands-ch.nc)
		// The probes from i on that start before k1 (probe i starts at
		// or before k).
		i1 := i + 1 + sort.Search(len(b.Probes)-i-1, func(q int) bool { return int(b.Starts[i+1+q]) >= k1 })
		if i1-i > bd.capProbes-ch.np {
			i1 = i + bd.capProbes - ch.np
			k1 = int(b.Starts[i1])
		}
		pc := piece{ch: ch, p0: ch.np, c0: ch.nc, i0: i, i1: i1, k0: k, k1: k1}
		ch.writers.Add(1)
		ch.np += i1 - i
		ch.nc += k1 - k
		if ch.nc == bd.capCands || ch.np == bd.capProbes || (ch.nc >= bd.tailCands && bd.sealSmall(b.Left)) {
			bd.seal(ch) // full, or the filters nearly done: the device may start on it
		}
		bd.mu.Unlock()
		pc.copy(b)
		ch.writers.Done()
		k = k1
		i = i1
		if int(b.Starts[i1]) > k1 {
			i = i1 - 1 // its candidates go on in the next chunk
		}
	}
	bd.pairs.Add(int64(n))
	return nil
}

// sealSmall reports whether a chunk is sealed at tailCands candidates,
// with left of the filters' work left: in the endgame, until the filters'
// predicted end is a device's round trip (trip) away; bd.mu is held. The
// work left goes at the pace it went since the endgame began (its tasks
// are of one size), or the run's so far where that is faster; until some
// is seen done, none is sealed small. Left counts the tasks not begun, so
// the end predicted is when the last one begins: a task's time early,
// which errs towards the CPU's tail.
func (bd *builder) sealSmall(left float64) bool {
	if left > bd.endgame {
		return false
	}
	if bd.trip <= 0 {
		return true
	}
	done := bd.egLeft - left
	if done <= 0 {
		return false // no pace yet
	}
	now := bd.now()
	end := float64(now.Sub(bd.egStart)) * left / done
	if left < 1 {
		end = min(end, float64(now.Sub(bd.start))*left/(1-left))
	}
	return end >= float64(bd.trip)
}

// copy copies its part of b into its chunk.
func (pc piece) copy(b *simjoin.CandidateBatch) {
	ch := pc.ch
	for q := pc.i0; q < pc.i1; q++ {
		at := pc.p0 + q - pc.i0
		ch.probes[at] = b.Probes[q]
		ch.starts[at] = uint32(pc.c0 + max(int(b.Starts[q]), pc.k0) - pc.k0)
	}
	copy(ch.cands[pc.c0:], b.Cands[pc.k0:pc.k1])
	copy(ch.need[pc.c0:], b.Need[pc.k0:pc.k1])
}

// seal hands ch on to the device; bd.mu is held.
func (bd *builder) seal(ch *chunk) {
	ch.starts[ch.np] = uint32(ch.nc)
	bd.cur = nil
	bd.filled <- ch // never blocks: it holds every chunk
}

// take returns an empty chunk, waiting for one if the device holds them
// all; bd.mu is held, so that other emitters wait too.
func (bd *builder) take() (*chunk, error) {
	var ch *chunk
	select {
	case ch = <-bd.free:
	default:
		start := time.Now()
		select {
		case ch = <-bd.free:
		case <-bd.stop:
			return nil, bd.stopErr()
		}
		bd.stalled.Add(int64(time.Since(start)))
	}
	ch.np, ch.nc = 0, 0
	return ch, nil
}

// tailPart is a part of the chunks left at the end that the CPU
// verifies: b's pairs, which lie in ch; own says whether the whole of ch
// is the CPU's (to recycle after), else the device verifies ch's first
// probes.
type tailPart struct {
	ch  *chunk
	b   simjoin.CandidateBatch
	own bool
}

// finishTail seals the last chunk, once the filters are done, and closes
// filled; but part of the chunks the device has not taken yet (sealed ones
// still waiting, and the last one) is not sealed but returned, for the CPU
// to verify; the caller recycles the chunks it owns. The CPU takes the newest pairs (those the device would reach
// last; the device keeps the oldest, in order), as many as split says,
// the chunk where they end cut between two probes: none where most is not
// positive. The device gets the rest.
func (bd *builder) finishTail(most int) []tailPart {
	bd.mu.Lock()
	var left []*chunk // oldest first
	for taken := false; !taken; {
		select {
		case ch := <-bd.filled:
			left = append(left, ch)
		default:
			taken = true
		}
	}
	if ch := bd.cur; ch != nil {
		bd.cur = nil
		if ch.nc > 0 {
			ch.starts[ch.np] = uint32(ch.nc)
			left = append(left, ch)
		} else {
			bd.free <- ch
		}
	}
	total := 0
	for _, ch := range left {
		ch.writers.Wait() // the filters are done: no copy is pending
		total += ch.nc
	}
	want := bd.split(total, most, int(bd.onDevice.Load()))
	var tail []tailPart
	keep := len(left)
	for keep > 0 && want > 0 {
		ch := left[keep-1]
		// The last probes of ch with at least want candidates: from the
		// last probe i whose candidates start at or before nc-want.
		i := sort.Search(ch.np, func(q int) bool { return int(ch.starts[q]) > ch.nc-want }) - 1
		if i <= 0 {
			tail = append(tail, tailPart{ch: ch, own: true, b: simjoin.CandidateBatch{Probes: ch.probes[:ch.np],
				Starts: ch.starts[:ch.np+1], Cands: ch.cands[:ch.nc], Need: ch.need[:ch.nc]}})
			want -= ch.nc
			keep--
			continue
		}
		// Cut: the CPU takes probes [i, np), the device the rest of ch,
		// whose starts already end at starts[i].
		c0 := int(ch.starts[i])
		starts := make([]uint32, ch.np-i+1)
		for q := range starts {
			starts[q] = ch.starts[i+q] - uint32(c0)
		}
		tail = append(tail, tailPart{ch: ch, b: simjoin.CandidateBatch{Probes: ch.probes[i:ch.np], Starts: starts,
			Cands: ch.cands[c0:ch.nc], Need: ch.need[c0:ch.nc]}})
		ch.np, ch.nc = i, c0
		break
	}
	for _, ch := range left[:keep] {
		bd.filled <- ch // never blocks: it holds every chunk
		bd.endDevice += ch.nc
	}
	bd.mu.Unlock()
	close(bd.filled)
	return tail
}

// split returns how many of the total candidates left when the filters
// are done the CPU verifies: its share, most (what it verifies in about a
// device's round trip), or, where the CPU's time per pair is known
// (cpuNS) and the device would still be busy with the rest when the CPU
// is done with its share, more: where both end together, the device, with
// onDevice pairs in flight, taking devTrip and devNS a pair. So the
// device ends before the CPU where the prices hold. None where most is
// not positive.
func (bd *builder) split(total, most, onDevice int) int {
	if most <= 0 {
		return 0
	}
	cpu := min(total, most)
	if bd.cpuNS > 0 {
		both := (float64(bd.devTrip) + float64(onDevice+total)*bd.devNS) / (bd.cpuNS + bd.devNS)
		cpu = max(cpu, min(total, int(math.Ceil(both))))
	}
	return cpu
}

// recycle gives a chunk back once its copy to the device is queued.
func (bd *builder) recycle(ch *chunk) { bd.free <- ch }
