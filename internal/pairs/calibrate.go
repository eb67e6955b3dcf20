package pairs

import (
	"fmt"
	"math"
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
	bitmapWord, bitmapPair, bitmapBuild          float64 // per 64-bit word pair ANDed and counted, pair, occurrence (tidlists, allpairs' preparation, bitmaps)

	// source says where the figures come from, for Explain.
	source string
}

// referenceCosts were fitted on the development machine (AMD Zen 5, 2
// threads on a shared core, running other work as it usually does: load 2
// to 4; docs/BATMAP.md) from whole engine runs on the FIMI files and the
// BATMAP paper's instances. batmapWord is that of the AVX-512 kernel.
var referenceCosts = costs{
	aprioriIncrement: 2.2e-9, aprioriEntry: 0.7e-9, aprioriVisit: 22e-9,
	batmapInsert: 85e-9, batmapWord: 0.075e-9, batmapPair: 12e-9,
	eclatElement: 0.36e-9, eclatPair: 150e-9,
	fpStep: 12e-9, fpSort: 30e-9, fpNode: 20e-9,
	bitmapWord: 0.055e-9, bitmapPair: 2e-9, bitmapBuild: 30e-9,
}

// defaultCosts are the reference costs, batmapWord scaled for the kernel
// batmap runs here (the portable one compares 4 times slower).
func defaultCosts() costs {
	c := referenceCosts
	if batmap.Kernel() == "go-swar64" {
		// Without AVX-512 (or with -tags purego) both SIMD kernels, the
		// batmap comparison and allpairs' AND + popcount, are portable Go.
		c.batmapWord *= 4
		c.bitmapWord *= 7
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

// probeReference is the probe on the reference machine with 2 threads, in
// the conditions the reference costs were fitted in, the machine running
// other work: about the median of many runs (docs/BATMAP.md).
var probeReference = probe{increment: 0.64e-9, word: 0.080e-9, element: 0.32e-9}

// costs returns the reference costs scaled by what p measured here: batmap
// words and tidlist merges by their kernels' ratios to the reference
// machine, and the scalar work (apriori's increments and visits, inserts,
// pairs, tree walks) by the lesser of the increment and the word kernel's
// ratios. The increment kernel alone overstates how much slower a machine
// is at that work when the work is partly memory-bound and the machine's
// caches are larger (as on the H100 host's Xeon, docs/BATMAP.md); the word
// kernel alone would miss a machine whose SIMD is slow (or the portable
// kernel), hence the lesser.
func (p *probe) costs() costs {
	r := referenceCosts
	word := p.word / probeReference.word
	element := p.element / probeReference.element
	scalar := min(p.increment/probeReference.increment, word)
	c := costs{
		aprioriIncrement: r.aprioriIncrement * scalar, aprioriEntry: r.aprioriEntry * scalar, aprioriVisit: r.aprioriVisit * scalar,
		batmapInsert: r.batmapInsert * scalar, batmapWord: r.batmapWord * word, batmapPair: r.batmapPair * scalar,
		eclatElement: r.eclatElement * element, eclatPair: r.eclatPair * scalar,
		fpStep: r.fpStep * scalar, fpSort: r.fpSort * scalar, fpNode: r.fpNode * scalar,
		bitmapWord: r.bitmapWord * word, bitmapPair: r.bitmapPair * scalar, bitmapBuild: r.bitmapBuild * scalar,
	}
	c.source = fmt.Sprintf("per-unit costs measured by a %.2f ms probe on %d threads: counters ×%.2f, batmap words ×%.2f, tidlist merges ×%.2f the Zen 5 reference's (scalar work ×%.2f)",
		p.elapsed.Seconds()*1e3, p.threads, p.increment/probeReference.increment, word, element, scalar)
	return c
}

// When NewPlan probes: only for auto, when the fastest estimate is long
// enough that a probe of a few milliseconds is lost in it, and the next
// is close enough that machines' differences (up to a factor of 2 between
// the kernels of Zen 5 and Sapphire Rapids) could reorder them.
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

// Probe sizes: one call of each kernel takes 4 to 10 microseconds on the
// reference machine; each is called over and over on every thread for
// probeWindow, the kernels in turns, at least probeRounds turns each.
const (
	probeRounds    = 2
	probeMaxRounds = 4
	probeWindow    = 250 * time.Microsecond
	probeStart     = time.Millisecond // the longest wait for all goroutines to run
	probeRow       = 16384            // counters: 64 KiB
	probeTx        = 64               // transactions of probeTxLen ranks
	probeTxLen     = 64
	probeRowPasses = 2
	probeWords     = 16384 // two batmaps of 64 KiB, compared probeCounts times
	probeCounts    = 3
	probeLists     = 6 // tidlists of probeListLen of a universe 20 times larger
	probeListLen   = 1000
)

// runProbe times each engine's main kernel on synthetic data, on threads
// goroutines at once. The kernels take turns, so that a disturbance (the
// garbage collector, another process) slows them alike.
func runProbe(threads int) *probe {
	start := time.Now()
	// More goroutines than Ps would take turns.
	threads = min(max(threads, 1), runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(0x9e37, 0x79b9))
	// apriori: transactions of increasing ranks, each incrementing the
	// counters of its items in a row (each worker its own row, whose
	// last counter counts the calls, for the check below).
	txs := make([][]uint32, probeTx)
	for i := range txs {
		txs[i] = randomSet(rng, probeTxLen, probeRow)
	}
	rows := make([][]uint32, threads)
	for w := range rows {
		rows[w] = make([]uint32, probeRow+1)
	}
	increment := func(w int) {
		row := rows[w]
		for range probeRowPasses {
			for _, tx := range txs {
				addRow(row[:probeRow], tx, 0)
			}
		}
		row[probeRow]++
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
	all := make([]uint32, 0, probeLists*(probeListLen+3*probeLists))
	merged := 0 // elements of both lists, over the intersections
	for i := range lists {
		n := probeListLen + 3*i
		all = append(all, randomSet(rng, n, 20*probeListLen)...)
		lists[i] = all[len(all)-n:]
		merged += (probeLists - 1) * n
	}
	element := func(int) {
		for i, x := range lists {
			for _, y := range lists[i+1:] {
				intersect.Count(x, y)
			}
		}
	}
	rates := timeRates(threads, []func(int){increment, word, element})
	increments := probeRowPasses * probeTx * probeTxLen
	for _, row := range rows {
		if sum(row[:probeRow]) != uint64(row[probeRow])*uint64(increments) {
			panic("pairs: the probe miscounted")
		}
	}
	return &probe{
		increment: rates[0] / float64(increments),
		word:      rates[1] / float64(probeCounts*probeWords),
		element:   rates[2] / float64(merged),
		threads:   threads,
		elapsed:   time.Since(start),
	}
}

// timeRates calls the kernels over and over on threads goroutines at
// once (kernel(w) on the w-th; the caller is the 0th), all the same kernel
// at a time, in turns of probeWindow each, and returns for each kernel the
// seconds one call takes on one thread while every thread runs it: its
// least over the turns of threads × the turn's time / the calls made in it.
//
// The goroutines start once, before the first turn (the time goroutines and
// idle cores take to start, tens of microseconds each on a large machine,
// is not counted: timing a kernel run once on each of 16 new goroutines to
// the last one's end measured that start more than the kernel), and none
// sleeps or waits for another: the caller keeps the time between its own
// calls and moves all to the next turn. A call in progress when its turn
// ends counts for that turn, as the turn's first calls start late by the
// end of the last call of the turn before. A turn's time runs from before
// the caller started it to after it ended it, so that a caller descheduled
// meanwhile makes the turn look slower, never faster.
//
// Turns repeat until each kernel's two best agree within 10%: on a machine
// shared with other work, a turn that another process interrupted is
// slower by a factor.
func timeRates(threads int, kernels []func(w int)) []float64 {
	k := len(kernels)
	phases := 1 + k*probeMaxRounds // a warm-up, then the turns
	// calls[w*stride+p] counts worker w's calls in phase p; each worker's
	// on cache lines of their own.
	stride := phases + 8
	calls := make([]atomic.Int64, threads*stride)
	count := func(p int) int64 {
		var n int64
		for w := range threads {
			n += calls[w*stride+p].Load()
		}
		return n
	}
	var phase atomic.Int32 // the kernel of phase p > 0 is (p-1) mod k; -1 stops
	var wg sync.WaitGroup
	for w := 1; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := int(phase.Load()); p >= 0; p = int(phase.Load()) {
				kernels[max(p-1, 0)%k](w)
				calls[w*stride+p].Add(1)
			}
		}()
	}
	// Warm up until every goroutine has made a call. Past probeStart, the
	// ones that have not run yet wait for a core, as an engine's would:
	// go on without them.
	start := time.Now()
	for {
		kernels[0](0)
		calls[0].Add(1)
		all := true
		for w := range threads {
			all = all && calls[w*stride].Load() > 0
		}
		if all || time.Since(start) > probeStart {
			break
		}
	}
	// Phase p runs from before[p] - its start was decided - to after[p+1],
	// when its end was stored.
	before := make([]time.Time, 1, phases+1)
	after := make([]time.Time, 1, phases+1)
	before[0] = time.Now()
	phase.Store(1)
	after[0] = time.Now()
	turn := func(p int) float64 {
		return float64(threads) * after[p].Sub(before[p-1]).Seconds() / float64(max(count(p), 1))
	}
	// best returns kernel i's least and second least time over its
	// finished turns.
	best := func(i int) (float64, float64) {
		b, s := math.Inf(1), math.Inf(1)
		for p := 1 + i; p < len(after); p += k {
			if t := turn(p); t < b {
				b, s = t, b
			} else if t < s {
				s = t
			}
		}
		return b, s
	}
	for p := 1; ; {
		kernels[(p-1)%k](0)
		calls[p].Add(1)
		now := time.Now()
		if now.Sub(before[p-1]) < probeWindow {
			continue
		}
		next := p + 1
		if p%k == 0 && p/k >= probeRounds {
			// The last turns' calls in progress are not counted yet: a
			// few percent at most, enough to decide.
			after = append(after, now)
			settled := true
			for i := range k {
				b, s := best(i)
				settled = settled && s <= 1.1*b
			}
			after = after[:p]
			if settled || p/k == probeMaxRounds {
				next = -1
			}
		}
		before = append(before, now)
		phase.Store(int32(next))
		after = append(after, time.Now())
		if next < 0 {
			break
		}
		p = next
	}
	wg.Wait()
	rates := make([]float64, k)
	for i := range rates {
		rates[i], _ = best(i)
	}
	return rates
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
