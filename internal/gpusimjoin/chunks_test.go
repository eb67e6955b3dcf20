package gpusimjoin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/simjoin"
)

type triple struct{ probe, cand, need uint32 }

// randomBatch returns a batch of up to maxProbes probes with 1 to
// maxCands candidates each, and its triples.
func randomBatch(rng *rand.Rand, maxProbes, maxCands int, tag uint32) (*simjoin.CandidateBatch, []triple) {
	b := &simjoin.CandidateBatch{Starts: []uint32{0}}
	var ts []triple
	for range 1 + rng.IntN(maxProbes) {
		x := tag<<16 | uint32(rng.IntN(1<<16))
		b.Probes = append(b.Probes, x)
		for range 1 + rng.IntN(maxCands) {
			y, nd := rng.Uint32(), rng.Uint32N(100)
			b.Cands = append(b.Cands, y)
			b.Need = append(b.Need, nd)
			ts = append(ts, triple{x, y, nd})
		}
		b.Starts = append(b.Starts, uint32(len(b.Cands)))
	}
	return b, ts
}

// drain consumes a builder's chunks as the device would (after their
// writers), checks their layout and returns their triples.
func drain(t *testing.T, bd *builder, hold time.Duration) <-chan []triple {
	got := make(chan []triple, 1)
	go func() {
		var ts []triple
		for ch := range bd.filled {
			ch.writers.Wait()
			if ch.nc == 0 || ch.np == 0 || ch.nc > bd.capCands || ch.np > bd.capProbes || ch.starts[0] != 0 || int(ch.starts[ch.np]) != ch.nc {
				t.Errorf("chunk of %d probes, %d candidates, starts %v", ch.np, ch.nc, ch.starts[:ch.np+1])
			}
			for i := range ch.np {
				lo, hi := ch.starts[i], ch.starts[i+1]
				if lo >= hi {
					t.Errorf("probe %d of a chunk has candidates [%d, %d)", i, lo, hi)
				}
				for k := lo; k < hi; k++ {
					ts = append(ts, triple{ch.probes[i], ch.cands[k], ch.need[k]})
				}
			}
			time.Sleep(hold) // a slow device: the filters wait
			bd.recycle(ch)
		}
		got <- ts
	}()
	return got
}

func sortTriples(ts []triple) {
	slices.SortFunc(ts, func(a, b triple) int {
		switch {
		case a.probe != b.probe:
			return cmpU32(a.probe, b.probe)
		case a.cand != b.cand:
			return cmpU32(a.cand, b.cand)
		}
		return cmpU32(a.need, b.need)
	})
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestBuilder: batches emitted from many goroutines at once reach the
// device whole, each pair once with its probe and need, whatever the
// capacities (batches larger than a chunk, probes cut between chunks,
// chunks full by probes or by candidates), and with a device slower than
// the filters.
func TestBuilder(t *testing.T) {
	for _, tc := range []struct {
		chunks, capProbes, capCands, maxProbes, maxCands int
		hold                                             time.Duration
	}{
		{4, 1 << 10, 1 << 12, 50, 40, 0},
		{2, 3, 7, 9, 12, 0},
		{2, 1, 1, 5, 5, 0},
		{3, 64, 16, 30, 3, time.Millisecond},
		{1, 5, 1000, 20, 100, 0},
	} {
		t.Run(fmt.Sprintf("%d chunks of %d probes %d candidates", tc.chunks, tc.capProbes, tc.capCands), func(t *testing.T) {
			stop := make(chan struct{})
			bd := newBuilder(tc.chunks, tc.capProbes, tc.capCands, stop, func() error { return errors.New("stopped") })
			got := drain(t, bd, tc.hold)
			var mu sync.Mutex
			var want []triple
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for range 40 {
						b, ts := randomBatch(rng, tc.maxProbes, tc.maxCands, uint32(w))
						if err := bd.emit(b); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						want = append(want, ts...)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			bd.finishTail(0)
			all := <-got
			sortTriples(all)
			sortTriples(want)
			if !slices.Equal(all, want) {
				t.Fatalf("%d pairs reached the device, %d were emitted (or they differ)", len(all), len(want))
			}
			if bd.pairs.Load() != int64(len(want)) {
				t.Fatalf("pairs %d, want %d", bd.pairs.Load(), len(want))
			}
		})
	}
}

// TestBuilderStop: once the run fails, filters waiting for a chunk get
// the error instead of waiting forever.
func TestBuilderStop(t *testing.T) {
	stop := make(chan struct{})
	boom := errors.New("the device failed")
	bd := newBuilder(1, 2, 2, stop, func() error { return boom })
	rng := rand.New(rand.NewPCG(1, 2))
	b, _ := randomBatch(rng, 1, 1, 0)
	if err := bd.emit(b); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		// Two more pairs fill the only chunk; the next needs another.
		var err error
		for err == nil {
			b, _ := randomBatch(rng, 3, 3, 0)
			err = bd.emit(b)
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	close(stop)
	select {
	case err := <-done:
		if err != boom {
			t.Fatalf("emit returned %v, want %v", err, boom)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("emit still waits after the run failed")
	}
	// The chunk sealed before the failure is still there for the
	// device's goroutine to drain.
	bd.finishTail(0)
	n := 0
	for ch := range bd.filled {
		ch.writers.Wait()
		n++
	}
	if n != 1 {
		t.Fatalf("%d chunks sealed, want 1", n)
	}
}

// TestBuilderOwners: several owners taking sealed chunks from the one
// queue (as the owners of a gpurt.Set do) get every pair once between
// them, with the host chunks a run plans for that many owners.
func TestBuilderOwners(t *testing.T) {
	for _, owners := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("%d owners", owners), func(t *testing.T) {
			stop := make(chan struct{})
			chunks := numChunks + owners - 1
			bd := newBuilder(chunks, 7, 20, stop, func() error { return errors.New("stopped") })
			var gots []<-chan []triple
			for k := range owners {
				gots = append(gots, drain(t, bd, time.Duration(k)*100*time.Microsecond))
			}
			var mu sync.Mutex
			var want []triple
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), uint64(owners)))
					for range 60 {
						b, ts := randomBatch(rng, 12, 9, uint32(w))
						if err := bd.emit(b); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						want = append(want, ts...)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			bd.finishTail(0)
			var all []triple
			for _, got := range gots {
				all = append(all, <-got...)
			}
			sortTriples(all)
			sortTriples(want)
			if !slices.Equal(all, want) {
				t.Fatalf("%d pairs reached the owners, %d were emitted (or they differ)", len(all), len(want))
			}
			if n := len(bd.free); n != chunks {
				t.Fatalf("%d chunks back after the run, want %d", n, chunks)
			}
		})
	}
}

// TestBuilderEndgame: once the filters' work left falls to the endgame,
// chunks are sealed at tailCands candidates, and finishTail hands back the
// newest pairs, unsealed, as many as the given share, cut between probes
// (a probe has at most 4 candidates here): every pair reaches the device
// or the tail once.
func TestBuilderEndgame(t *testing.T) {
	for _, most := range []int{1 << 20, 1} {
		bd := newBuilder(3, 1000, 1000, make(chan struct{}), func() error { return errors.New("stopped") })
		bd.endgame, bd.tailCands = 0.25, 40
		sizes := make(chan []int, 1)
		var dev []triple
		go func() {
			var ns []int
			for ch := range bd.filled {
				ch.writers.Wait()
				ns = append(ns, ch.nc)
				for i := range ch.np {
					for k := ch.starts[i]; k < ch.starts[i+1]; k++ {
						dev = append(dev, triple{ch.probes[i], ch.cands[k], ch.need[k]})
					}
				}
				bd.recycle(ch)
			}
			sizes <- ns
		}()
		rng := rand.New(rand.NewPCG(3, 4))
		var want []triple
		const batches = 1000
		for i := range batches {
			b, ts := randomBatch(rng, 3, 4, 0) // at most 12 pairs
			b.Left = float64(batches-1-i) / batches
			if err := bd.emit(b); err != nil {
				t.Fatal(err)
			}
			want = append(want, ts...)
		}
		tail := bd.finishTail(most)
		ns := <-sizes
		fromTail, inTail := tailTriples(t, tail)
		if inTail > most+3 || most == 1 && inTail < 1 {
			t.Fatalf("a tail of %d candidates, a share of %d", inTail, most)
		}
		if len(tail) == 0 && most > 1000 && ns[len(ns)-1] < 40 {
			t.Fatalf("no tail returned, though the last chunk (%d candidates) fits", ns[len(ns)-1])
		}
		// Full chunks until the endgame, the one it seals, then chunks of
		// 40 to 40+11 candidates, and the last one whatever is left.
		endgame := false
		for i, n := range ns {
			last := i == len(ns)-1 // the last one, or cut by the tail
			switch {
			case !endgame && n == 1000:
			case !endgame && n >= 40:
				endgame = true
			case endgame && n >= 40 && n < 52:
			case last && n < 52:
			default:
				t.Fatalf("chunk %d of %d has %d candidates (sizes %v)", i, len(ns), n, ns)
			}
		}
		if !endgame || len(ns) < 6 || ns[0] != 1000 {
			t.Fatalf("chunk sizes %v: no endgame", ns)
		}
		got := append(dev, fromTail...)
		sortTriples(got)
		sortTriples(want)
		if !slices.Equal(got, want) {
			t.Fatalf("most %d: %d pairs reached the device and the tail, %d were emitted (or they differ)", most, len(got), len(want))
		}
	}
	// With the filters' end predicted closer than trip all along, no
	// chunk is sealed small: full chunks, and the rest in the tail.
	bd := newBuilder(3, 1000, 1000, make(chan struct{}), func() error { return errors.New("stopped") })
	bd.endgame, bd.tailCands, bd.trip = 0.25, 40, time.Hour
	sizes := make(chan []int, 1)
	go func() {
		var ns []int
		for ch := range bd.filled {
			ch.writers.Wait()
			ns = append(ns, ch.nc)
			bd.recycle(ch)
		}
		sizes <- ns
	}()
	rng := rand.New(rand.NewPCG(5, 6))
	n := 0
	for i := range 1000 {
		b, _ := randomBatch(rng, 3, 4, 0)
		b.Left = float64(999-i) / 1000
		if err := bd.emit(b); err != nil {
			t.Fatal(err)
		}
		n += len(b.Cands)
	}
	tail := bd.finishTail(1000)
	ns := <-sizes
	_, inTail := tailTriples(t, tail)
	sum := inTail
	for i, k := range ns {
		sum += k
		// Full, or the one the tail cut, having taken its share.
		if k != 1000 && (i < len(ns)-1 || inTail < 1000) {
			t.Fatalf("chunks %v, a tail of %d: one sealed small", ns, inTail)
		}
	}
	if sum != n || inTail > 1003 {
		t.Fatalf("%d pairs, chunks %v, tail of %d", n, ns, inTail)
	}
}

// tailTriples returns the triples of the chunks finishTail returned, and
// their number, checking their layout.
func tailTriples(t *testing.T, tail []tailPart) ([]triple, int) {
	t.Helper()
	var ts []triple
	for _, pt := range tail {
		b := pt.b
		np := len(b.Probes)
		if len(b.Cands) == 0 || len(b.Starts) != np+1 || b.Starts[0] != 0 || int(b.Starts[np]) != len(b.Cands) || len(b.Need) != len(b.Cands) {
			t.Fatalf("a tail part of %d probes, %d candidates, starts %v", np, len(b.Cands), b.Starts)
		}
		for i := range np {
			for k := b.Starts[i]; k < b.Starts[i+1]; k++ {
				ts = append(ts, triple{b.Probes[i], b.Cands[k], b.Need[k]})
			}
		}
	}
	return ts, len(ts)
}

// TestBuilderTailReclaims: of the chunks sealed but not yet taken by the
// device when the filters are done, and the last one, the tail takes the
// newest pairs, its share of them, cutting a chunk between probes, and the
// device gets the oldest, in order: not all or nothing.
func TestBuilderTailReclaims(t *testing.T) {
	for _, c := range []struct{ most, tailParts, devChunks int }{
		{100, 3, 0}, // all: the last (5) and both sealed (10 each)
		{25, 3, 0},
		{20, 3, 1}, // the last, the newest sealed, 5 of the oldest
		{15, 2, 1},
		{14, 2, 2}, // the last, 9 of the newest sealed
		{3, 1, 3},  // 3 of the last
		{0, 0, 3},  // none: a failed run, or a test's tail on the device
	} {
		bd := newBuilder(4, 10, 10, make(chan struct{}), func() error { return errors.New("stopped") })
		var want []triple
		for i := range 25 {
			b := &simjoin.CandidateBatch{Probes: []uint32{uint32(i)}, Starts: []uint32{0, 1}, Cands: []uint32{uint32(100 + i)}, Need: []uint32{uint32(i % 7)}}
			if err := bd.emit(b); err != nil {
				t.Fatal(err)
			}
			want = append(want, triple{uint32(i), uint32(100 + i), uint32(i % 7)})
		}
		tail := bd.finishTail(c.most) // no device has taken anything
		got, inTail := tailTriples(t, tail)
		var chunks int
		next := uint32(0) // the device's chunks come oldest first
		for ch := range bd.filled {
			ch.writers.Wait()
			chunks++
			for i := range ch.np {
				if ch.probes[i] != next {
					t.Fatalf("most %d: the device got probe %d, want %d", c.most, ch.probes[i], next)
				}
				next++
				for k := ch.starts[i]; k < ch.starts[i+1]; k++ {
					got = append(got, triple{ch.probes[i], ch.cands[k], ch.need[k]})
				}
			}
			if int(ch.starts[ch.np]) != ch.nc {
				t.Fatalf("most %d: a chunk of %d candidates, starts ending at %d", c.most, ch.nc, ch.starts[ch.np])
			}
		}
		if inTail != min(c.most, 25) || len(tail) != c.tailParts || chunks != c.devChunks || int(next) != 25-inTail {
			t.Fatalf("most %d: %d parts with %d pairs in the tail, %d chunks with %d to the device; want %d with %d, %d",
				c.most, len(tail), inTail, chunks, next, c.tailParts, min(c.most, 25), c.devChunks)
		}
		if bd.endDevice != int(next) {
			t.Fatalf("most %d: %d pairs left to the device, counted %d", c.most, next, bd.endDevice)
		}
		sortTriples(got)
		sortTriples(want)
		if !slices.Equal(got, want) {
			t.Fatalf("most %d: %d pairs came out, %d went in (or they differ)", c.most, len(got), len(want))
		}
	}
}

// TestBuilderTailSplit: beyond its share, the tail takes pairs until the
// device, with what it has in flight, would end with the CPU; with the
// device fast enough, the share alone.
func TestBuilderTailSplit(t *testing.T) {
	bd := &builder{cpuNS: 10, devNS: 2, devTrip: 300}
	for _, c := range []struct{ total, most, onDevice, want int }{
		// Share 10; both end together at x: 10x = 300 + 2(100-x), x = 42
		// (41.67 rounded up: the device ends first).
		{100, 10, 0, 42},
		// With 100 in flight: 10x = 300 + 2(200-x), x = 58.3: 59.
		{100, 10, 100, 59},
		// The share holds more.
		{100, 80, 0, 80},
		{30, 1000, 0, 30},
		// The CPU takes all before the device would be done: 300 + 2*10
		// against 10*10.
		{10, 1, 0, 10},
		// None: no share; nothing left.
		{100, 0, 0, 0},
		{0, 10, 50, 0},
	} {
		if got := bd.split(c.total, c.most, c.onDevice); got != c.want {
			t.Errorf("split(%d, most %d, %d on the device) = %d, want %d", c.total, c.most, c.onDevice, got, c.want)
		}
	}
	// Without the CPU's price, its share alone.
	if got := (&builder{}).split(40, 25, 0); got != 25 {
		t.Errorf("split without prices = %d, want 25", got)
	}
}

// tenCandidates is a batch of one probe with ten candidates, left of the
// filters' work still to come.
func tenCandidates(probe uint32, left float64) *simjoin.CandidateBatch {
	b := &simjoin.CandidateBatch{Probes: []uint32{probe}, Starts: []uint32{0, 10}, Left: left}
	for k := range 10 {
		b.Cands = append(b.Cands, uint32(k))
		b.Need = append(b.Need, 1)
	}
	return b
}

// TestBuilderSealPrediction: the filters' end is predicted from the
// endgame's own pace, not from the time since the run began (which counts
// the index's build and the larger tasks before the endgame). On a fake
// clock, the filters take 100 ms to reach the endgame (a quarter of their
// work left here), then do a thousandth of it every 10 us: chunks are
// sealed small (at 40 candidates, every 4 batches of 10) while the end is
// 400 us away or more, and none once it is less than trip (300 us) away.
// From the time since the start, it would be predicted 3 ms away even 10
// us before it.
func TestBuilderSealPrediction(t *testing.T) {
	bd := newBuilder(100, 1000, 1000, make(chan struct{}), func() error { return errors.New("stopped") })
	clock := time.Unix(1000, 0)
	bd.now, bd.start = func() time.Time { return clock }, clock
	bd.endgame, bd.tailCands, bd.trip = 0.25, 40, 300*time.Microsecond
	// Before the endgame: 100 ms, a full chunk.
	for i := range 100 {
		clock = clock.Add(time.Millisecond)
		if err := bd.emit(tenCandidates(uint32(i), 1-0.74*float64(i)/100)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(bd.filled); n != 1 {
		t.Fatalf("%d chunks sealed before the endgame, want 1 (full)", n)
	}
	// The endgame: batch i at 10*i us, with (250-i)/1000 of the work left,
	// the end at 2.5 ms.
	const steps = 250
	small, early := 0, 0
	for i := range steps {
		clock = clock.Add(10 * time.Microsecond)
		before := len(bd.filled)
		full := bd.cur != nil && bd.cur.nc+10 >= bd.tailCands
		if err := bd.emit(tenCandidates(uint32(100+i), float64(steps-i)/1000)); err != nil {
			t.Fatal(err)
		}
		sealed := len(bd.filled) > before
		toEnd := time.Duration(steps-i) * 10 * time.Microsecond
		switch {
		case sealed && toEnd < bd.trip:
			t.Fatalf("a chunk sealed small %v before the filters' end (batch %d of the endgame)", toEnd, i)
		case sealed:
			small++
		case full && toEnd >= 400*time.Microsecond && i > 0:
			early++
		}
	}
	if early > 0 || small < 50 {
		t.Fatalf("%d chunks sealed small, %d held past 40 candidates while the end was 400 us away or more", small, early)
	}
	if bd.cur == nil || bd.cur.nc < 280 || bd.cur.nc > 340 {
		t.Fatalf("the last chunk holds %v, want the last 28 to 34 batches", bd.cur)
	}
}

// TestBuilderSealShortEndgame: where the whole run is short, its pace so
// far bounds the prediction: 2 ms to the endgame (a thirty-second of 1024
// tasks left; 50 candidates in the chunk by then), then a task every 2
// us, the first seen 20 us after the endgame began. The endgame's own pace would put the end 620 us away
// there and seal a chunk small that the device verifies after the
// filters; the run's puts it 64 us away, and none is sealed small: what
// the endgame emits stays for the tail.
func TestBuilderSealShortEndgame(t *testing.T) {
	bd := newBuilder(10, 1000, 1000, make(chan struct{}), func() error { return errors.New("stopped") })
	clock := time.Unix(1000, 0)
	bd.now, bd.start = func() time.Time { return clock }, clock
	bd.endgame, bd.tailCands, bd.trip = 1.0/32, 40, 300*time.Microsecond
	n := 0
	for i := range 5 { // before the endgame: not sealed
		clock = clock.Add(400 * time.Microsecond)
		if err := bd.emit(tenCandidates(uint32(100+i), float64(1024-200*i)/1024)); err != nil {
			t.Fatal(err)
		}
		n += 10
	}
	for i := range 32 {
		if i == 1 {
			clock = clock.Add(20 * time.Microsecond)
		} else if i > 1 {
			clock = clock.Add(2 * time.Microsecond)
		}
		if err := bd.emit(tenCandidates(uint32(i), float64(32-i)/1024)); err != nil {
			t.Fatal(err)
		}
		n += 10
	}
	if len(bd.filled) != 0 || bd.cur == nil || bd.cur.nc != n {
		t.Fatalf("%d chunks sealed of %d candidates: want none sealed", len(bd.filled), n)
	}
}
