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
			bd.finish()
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
	bd.finish()
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
			bd.finish()
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
// last chunk, unsealed, when it holds at most the given candidates (else
// seals it): every pair reaches the device or the tail once.
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
		if inTail > most {
			t.Fatalf("a tail of %d candidates, at most %d wanted", inTail, most)
		}
		if len(tail) == 0 && most > 1000 && ns[len(ns)-1] < 40 {
			t.Fatalf("no tail returned, though the last chunk (%d candidates) fits", ns[len(ns)-1])
		}
		// Full chunks until the endgame, the one it seals, then chunks of
		// 40 to 40+11 candidates, and the last one whatever is left.
		endgame := false
		for i, n := range ns {
			last := i == len(ns)-1 && len(tail) == 0
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
	if _, inTail := tailTriples(t, tail); inTail != n-1000*len(ns) {
		t.Fatalf("%d pairs, chunks %v, tail of %d", n, ns, inTail)
	}
	for _, k := range ns {
		if k != 1000 {
			t.Fatalf("chunks %v: one sealed small", ns)
		}
	}
}

// tailTriples returns the triples of the chunks finishTail returned, and
// their number, checking their layout.
func tailTriples(t *testing.T, tail []*chunk) ([]triple, int) {
	t.Helper()
	var ts []triple
	for _, ch := range tail {
		ch.writers.Wait()
		if ch.nc == 0 || int(ch.starts[ch.np]) != ch.nc {
			t.Fatalf("a tail chunk of %d candidates, starts ending at %d", ch.nc, ch.starts[ch.np])
		}
		for i := range ch.np {
			for k := ch.starts[i]; k < ch.starts[i+1]; k++ {
				ts = append(ts, triple{ch.probes[i], ch.cands[k], ch.need[k]})
			}
		}
	}
	return ts, len(ts)
}

// TestBuilderTailReclaims: of the chunks sealed but not yet taken by the
// device when the filters are done, and the last one, the tail takes the
// newest that fit in its share (all of them when they do), and the
// device gets the oldest, in order: not all or nothing.
func TestBuilderTailReclaims(t *testing.T) {
	for _, c := range []struct{ most, inTail, tailChunks, devChunks int }{
		{100, 25, 3, 0}, // all
		{25, 25, 3, 0},
		{20, 15, 2, 1}, // the last (5) and the newest sealed (10)
		{14, 5, 1, 2},
		{4, 0, 0, 3},
		{0, 0, 0, 3}, // none: a failed run, or a test's tail on the device
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
		}
		if inTail != c.inTail || len(tail) != c.tailChunks || chunks != c.devChunks {
			t.Fatalf("most %d: %d chunks with %d pairs in the tail, %d to the device; want %d with %d, %d",
				c.most, len(tail), inTail, chunks, c.tailChunks, c.inTail, c.devChunks)
		}
		sortTriples(got)
		sortTriples(want)
		if !slices.Equal(got, want) {
			t.Fatalf("most %d: %d pairs came out, %d went in (or they differ)", c.most, len(got), len(want))
		}
	}
}

// TestBuilderTailSplit: beyond its share, the tail takes the newest
// chunks while the device, with what it has in flight, would still be
// busy with the rest when the CPU is done, so that it ends first; with
// the device fast enough, the share alone.
func TestBuilderTailSplit(t *testing.T) {
	bd := &builder{cpuNS: 10, devNS: 2, devTrip: 300}
	for _, c := range []struct {
		sizes          []int
		most, onDevice int
		want           int
	}{
		// Share 10: the newest (10) fits. Device on the rest: 300 + 2*90
		// = 480 ns against the CPU's 100: more. 20 on the CPU (200 against
		// 460), 30 (300, 440), 40 (400, 420), 50 (500, 400): five chunks.
		{[]int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, 10, 0, 5},
		// With 100 candidates in flight (200 ns more): at 50 on the CPU
		// (500 ns) the device needs 300 + 2*150 = 600, at 60 (600) 580:
		// six chunks.
		{[]int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, 10, 100, 6},
		// A share that holds all of them.
		{[]int{10, 10, 10}, 1000, 0, 3},
		// The CPU takes every chunk before the device would be done with
		// the rest (300 + 2*5 > 10*5).
		{[]int{5, 5}, 1, 0, 2},
		// None: no share.
		{[]int{10, 10}, 0, 0, 0},
		// Nothing left.
		{nil, 10, 50, 0},
	} {
		if got := bd.split(c.sizes, c.most, c.onDevice); got != c.want {
			t.Errorf("split(%v, most %d, %d on the device) = %d, want %d", c.sizes, c.most, c.onDevice, got, c.want)
		}
	}
	// Without the CPU's price, its share alone.
	if got := (&builder{}).split([]int{10, 10, 10, 10}, 25, 0); got != 2 {
		t.Errorf("split without prices = %d, want 2", got)
	}
}
