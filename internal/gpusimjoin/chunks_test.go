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
