package pairs

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/intersect"
)

// costs are the CPU engines' per-unit costs, in seconds of one thread's
// time per unit of work while every thread works: an estimate is the units
// times their cost over the threads, wall time comparable with the GPU
// engines' estimates.
type costs struct {
	aprioriIncrement, aprioriEntry, aprioriVisit float64 // per increment, counter scanned, transaction visited
	batmapInsert, batmapWord, batmapPair         float64 // per element inserted, 32-bit word compared, pair
	eclatElement, eclatPair                      float64 // per tidlist element merged, intersection
	fpStep, fpSort, fpNode                       float64 // per step up a path, transaction sorted (times log2), node built

	// source says where the figures come from, for Explain.
	source string
}

// referenceCosts were fitted on the development machine (AMD Zen 5, 2
// threads on a shared core; docs/BATMAP.md) from whole engine runs on the
// FIMI files and the BATMAP paper's instances. batmapWord is that of the
// AVX-512 kernel.
var referenceCosts = costs{
	aprioriIncrement: 2.2e-9, aprioriEntry: 0.7e-9, aprioriVisit: 22e-9,
	batmapInsert: 40e-9, batmapWord: 0.035e-9, batmapPair: 6e-9,
	eclatElement: 0.2e-9, eclatPair: 100e-9,
	fpStep: 12e-9, fpSort: 30e-9, fpNode: 20e-9,
}

// defaultCosts are the reference costs, batmapWord scaled for the kernel
// batmap runs here (the portable one compares 4 times slower).
func defaultCosts() costs {
	c := referenceCosts
	if batmap.Kernel() == "go-swar64" {
		c.batmapWord *= 4
	}
	c.source = "per-unit costs of the Zen 5 reference"
	return c
}

// probe holds what a probe measured: seconds of one thread's time per
// unit of each kernel, with every thread running one.
type probe struct {
	increment float64 // apriori's counter increments along a row of 64 KiB
	word      float64 // batmap's kernel (batmap.CountWords), per 32-bit word pair
	element   float64 // intersect.Count, per element of both lists

	threads int
	elapsed time.Duration
}

// probeReference is the probe on the reference machine with 2 threads: the
// first quartile of 200 runs (the median is 2% to 4% higher, the machine
// being shared; a run takes 0.5 to 1 ms).
var probeReference = probe{increment: 0.64e-9, word: 0.080e-9, element: 0.32e-9}

// costs returns the reference costs scaled by what p measured here: each
// engine's main unit by its kernel's ratio to the reference machine, the
// others (scalar bookkeeping: visits, inserts, pairs, tree walks) by
// apriori's.
func (p *probe) costs() costs {
	r := referenceCosts
	scalar := p.increment / probeReference.increment
	word := p.word / probeReference.word
	element := p.element / probeReference.element
	c := costs{
		aprioriIncrement: r.aprioriIncrement * scalar, aprioriEntry: r.aprioriEntry * scalar, aprioriVisit: r.aprioriVisit * scalar,
		batmapInsert: r.batmapInsert * scalar, batmapWord: r.batmapWord * word, batmapPair: r.batmapPair * scalar,
		eclatElement: r.eclatElement * element, eclatPair: r.eclatPair * scalar,
		fpStep: r.fpStep * scalar, fpSort: r.fpSort * scalar, fpNode: r.fpNode * scalar,
	}
	c.source = fmt.Sprintf("per-unit costs measured by a %.2f ms probe on %d threads: counters ×%.2f, batmap words ×%.2f, tidlist merges ×%.2f the Zen 5 reference's",
		p.elapsed.Seconds()*1e3, p.threads, scalar, word, element)
	return c
}

// When NewPlan probes: only for auto, when the fastest estimate is long
// enough that a probe of a millisecond or two is lost in it, and the next
// is close enough that machines' differences (a factor of 3 between the
// kernels of Zen 5 and Sapphire Rapids) could reorder them.
const (
	probeWorth  = 0.05 // seconds
	probeSpread = 4.0
)

var probes struct {
	sync.Mutex
	byThreads map[int]*probe
}

// measure returns the probe for the number of threads, running it on the
// first call in the process.
func measure(threads int) *probe {
	probes.Lock()
	defer probes.Unlock()
	if p := probes.byThreads[threads]; p != nil {
		return p
	}
	p := runProbe(threads)
	if probes.byThreads == nil {
		probes.byThreads = map[int]*probe{}
	}
	probes.byThreads[threads] = p
	return p
}

// Probe sizes: each kernel runs about 30 microseconds per repetition on
// the reference machine; the fastest repetition counts.
const (
	probeReps      = 3 // at least
	probeMaxReps   = 12
	probeRow       = 16384 // counters: 64 KiB
	probeTx        = 64    // transactions of probeTxLen ranks
	probeTxLen     = 64
	probeRowPasses = 6
	probeWords     = 16384 // two batmaps of 64 KiB, compared probeCounts times
	probeCounts    = 3
	probeLists     = 8 // tidlists of probeListLen of a universe 20 times larger
	probeListLen   = 1000
	probeMerges    = 2
)

// runProbe times each engine's main kernel on synthetic data, on threads
// goroutines at once. The kernels take turns, so that a disturbance (the
// garbage collector, another process) slows them alike.
func runProbe(threads int) *probe {
	start := time.Now()
	// More goroutines than Ps would take turns spinning.
	threads = min(max(threads, 1), runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(0x9e37, 0x79b9))
	// apriori: transactions of increasing ranks, each incrementing the
	// counters of its items in a row (each worker its own row).
	txs := make([][]uint32, probeTx)
	for i := range txs {
		txs[i] = randomSet(rng, probeTxLen, probeRow)
	}
	rows := make([][]uint32, threads)
	for w := range rows {
		rows[w] = make([]uint32, probeRow)
	}
	increment := func(w int) {
		row := rows[w]
		for range probeRowPasses {
			for _, tx := range txs {
				addRow(row, tx, 0)
			}
		}
	}
	// batmap: the kernel compares any words as entries; random words
	// match rarely, as entries of different sets do.
	a, b := make([]uint32, probeWords), make([]uint32, probeWords)
	for i := range a {
		a[i], b[i] = rng.Uint32(), rng.Uint32()
	}
	word := func(int) {
		for range probeCounts {
			batmap.CountWords(a, b, 8)
		}
	}
	// eclat: intersections of tidlists of 5% density, back to back in one
	// array as Vertical stores them (the kernel's speed depends on their
	// placement in memory).
	// Their lengths differ, so that their alignments do.
	lists := make([][]uint32, probeLists)
	all := make([]uint32, 0, probeLists*(probeListLen+probeLists))
	merged := 0 // elements of both lists, over the intersections
	for i := range lists {
		n := probeListLen + 3*i
		all = append(all, randomSet(rng, n, 20*probeListLen)...)
		lists[i] = all[len(all)-n:]
		merged += (probeLists - 1) * n
	}
	element := func(int) {
		for range probeMerges {
			for i, x := range lists {
				for _, y := range lists[i+1:] {
					intersect.Count(x, y)
				}
			}
		}
	}
	// Repeat until each kernel's two fastest runs agree within 10%: on a
	// machine shared with other work, a run that another process
	// interrupted is slower by a factor.
	var best, second [3]time.Duration
	reps := 0
	for ; reps < probeMaxReps; reps++ {
		settled := reps >= probeReps
		for k, fn := range []func(int){increment, word, element} {
			t := timeParallel(threads, fn)
			if reps == 0 || t < best[k] {
				best[k], second[k] = t, best[k]
			} else if reps == 1 || t < second[k] {
				second[k] = t
			}
			settled = settled && second[k] <= best[k]+best[k]/10
		}
		if settled {
			reps++
			break
		}
	}
	increments := probeRowPasses * probeTx * probeTxLen
	for _, row := range rows {
		if sum(row) != uint64(reps)*uint64(increments) {
			panic("pairs: the probe miscounted")
		}
	}
	return &probe{
		increment: best[0].Seconds() / float64(increments),
		word:      best[1].Seconds() / float64(probeCounts*probeWords),
		element:   best[2].Seconds() / float64(probeMerges*merged),
		threads:   threads,
		elapsed:   time.Since(start),
	}
}

// timeParallel runs fn on threads goroutines that start together and
// returns the time until the last one is done. The goroutines spin
// (yielding) rather than sleep until the start, and note their own end:
// waking a sleeping thread takes tens of microseconds, as long as a
// kernel's run.
func timeParallel(threads int, fn func(w int)) time.Duration {
	var ready, done sync.WaitGroup
	var begin atomic.Bool
	ends := make([]time.Time, threads)
	ready.Add(threads)
	done.Add(threads)
	for w := range threads {
		go func() {
			defer done.Done()
			ready.Done()
			for !begin.Load() {
				runtime.Gosched() // lets the timing goroutine run
			}
			fn(w)
			ends[w] = time.Now()
		}()
	}
	ready.Wait()
	t0 := time.Now()
	begin.Store(true)
	done.Wait()
	var last time.Duration
	for _, e := range ends {
		last = max(last, e.Sub(t0))
	}
	return last
}

// randomSet returns n increasing values below u (n <= u/2), spread
// evenly at random.
func randomSet(rng *rand.Rand, n, u int) []uint32 {
	s := make([]uint32, n)
	x := -1
	for i := range s {
		room := (u - 1 - x) / (n - i) // keeps room for the rest
		x += 1 + rng.IntN(max(2*room-1, 1))/2
		s[i] = uint32(x)
	}
	return s
}

func sum(s []uint32) uint64 {
	var n uint64
	for _, x := range s {
		n += uint64(x)
	}
	return n
}

// addRow increments row[b-off] for every rank b of items: the counting
// loop of apriori, shared with the probe that times it.
func addRow[C uint16 | uint32](row []C, items []uint32, off uint32) {
	for _, b := range items {
		row[b-off]++
	}
}
