package allpairs

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// MMJoin's optimiser. For Δ1 at the sizes that make 1/2, 1/4, ... of the
// sets heavy, and for each layout of the index part, an element pays for
// its column when its increments among the heavy sets, w(e) = C(dH(e), 2)
// (dHR(e)·dHS(e) for R × S, dH counting the heavy sets that hold e), exceed
// its 64th of a word per heavy pair: a threshold θ that does not depend on
// the data. So a split's cost needs only the number of elements over θ and
// the sum of their w: with every set heavy, exactly, from the histogram of
// the document frequencies; with some sets heavy, from a sample of the
// elements whose dH are counted, when counting them all would cost more
// than the estimate may (see heavySample). The heavy elements themselves
// are listed only for the split that runs (materialise).

// splitPlan is the optimiser's choice, without the heavy elements: what an
// estimate needs.
type splitPlan struct {
	delta1         int // math.MaxInt: nothing is heavy
	heavyR, heavyS int // the heavy sets: the largest of each side
	theta          int64
	pairsHH        int64
	elems          float64 // occurrences in the heavy sets, mapped into bitmaps
	elementMajor   bool
	cols, saved    float64 // heavy elements and the increments they save
	ns             float64 // single-thread nanoseconds
	sampled        bool    // cols and saved are estimated from a sample
}

// splitCosts is what the optimiser prices a split with.
type splitCosts struct {
	wordNS, pairNS float64
	// mapNS is the cost of mapping one occurrence of a heavy set to its
	// column and setting its bit, when the product is the CPU's (a device
	// builds its matrices itself, in its own estimate).
	mapNS float64
	// denseNS is the cost of reporting one heavy pair from its counts
	// (costModel.denseFor).
	denseNS float64
	copyNS  float64
	layouts []splitLayout
}

type splitLayout struct {
	base, inc float64 // the index part alone; one increment
	em        bool
}

// planSplit returns the cheapest split for a product costing wordNS per
// pair-word, pairNS per pair and mapNS per occurrence of a heavy set,
// memoised per problem and costs.
func planSplit(p *Problem, wordNS, pairNS, mapNS float64) splitPlan {
	key := fmt.Sprintf("allpairs.mmsplit/%g/%g/%g", wordNS, pairNS, mapNS)
	return p.Memo(key, func() any { return optimise(p, wordNS, pairNS, mapNS) }).(splitPlan)
}

func splitCostsOf(p *Problem, wordNS, pairNS, mapNS float64) splitCosts {
	st := &p.Stats
	kr, ks := p.R.Len(), p.S.Len()
	n := st.R.Elements
	if !p.Self {
		n += st.S.Elements
	}
	sc := splitCosts{wordNS: wordNS, pairNS: pairNS, mapNS: mapNS, denseNS: costs.denseFor(p), copyNS: costs.stream * float64(n)} // the reordered copy of the sets
	// The index part runs probe-major or element-major (see scanPlan),
	// with the increments costing what they cost there.
	plan := planScan(p)
	sc.layouts = []splitLayout{{plan.probeNS, costs.inc(counterBytes(ks)), false}}
	if !math.IsInf(plan.privateNS, 1) {
		sc.layouts = append(sc.layouts, splitLayout{plan.privateNS, costs.incAt(4 * int64(kr) * int64(ks)), true})
	}
	return sc
}

// price returns the time of a split of pairsHH heavy pairs and elems
// occurrences in heavy sets whose heavy elements number cols and save saved
// increments, and whether the product gains anything.
func (sc splitCosts) price(l splitLayout, pairsHH int64, elems, cols, saved float64) (float64, bool) {
	perWord := sc.wordNS * float64(pairsHH)
	gain := l.inc*saved - perWord*math.Ceil(cols/64)
	return l.base + sc.copyNS - gain + (sc.denseNS+sc.pairNS)*float64(pairsHH) + sc.mapNS*elems, gain > 0
}

// theta is the threshold of w(e) over which an element pays for its column.
func (sc splitCosts) theta(l splitLayout, pairsHH int64) int64 {
	return int64(sc.wordNS * float64(pairsHH) / 64 / l.inc)
}

// splitLevel is one candidate Δ1.
type splitLevel struct {
	delta1         int
	heavyR, heavyS int
	pairsHH        int64
	elems          float64 // occurrences in the heavy sets
}

// optimise prices every split that splitLevels offers, on both layouts,
// and returns the cheapest (nothing heavy if none gains).
func optimise(p *Problem, wordNS, pairNS, mapNS float64) splitPlan {
	kr, ks := p.R.Len(), p.S.Len()
	sc := splitCostsOf(p, wordNS, pairNS, mapNS)
	best := splitPlan{delta1: math.MaxInt, ns: math.Inf(1)}
	for _, l := range sc.layouts {
		if ns := l.base + sc.copyNS; ns < best.ns {
			best.ns, best.elementMajor = ns, l.em
		}
	}
	levels := splitLevels(p, sc)
	if len(levels) == 0 {
		return best
	}
	var sample *sharedSample
	for _, lv := range levels {
		var heavy func(theta int64) (cols, saved float64)
		sampled := false
		if lv.heavyR == kr && lv.heavyS == ks {
			heavy = allHeavy(p)
		} else {
			if sample == nil {
				last := levels[len(levels)-1]
				if last.heavyR == kr && last.heavyS == ks && len(levels) > 1 {
					last = levels[len(levels)-2]
				}
				sample = heavySampleFor(p, last.heavyR, last.heavyS)
			}
			h := sample.at(lv.heavyR, lv.heavyS)
			heavy, sampled = h.heavy, !h.exact
		}
		for _, l := range sc.layouts {
			theta := sc.theta(l, lv.pairsHH)
			cols, saved := heavy(theta)
			if cols == 0 {
				continue
			}
			ns, gains := sc.price(l, lv.pairsHH, lv.elems, cols, saved)
			if gains && ns < best.ns {
				best = splitPlan{delta1: lv.delta1, heavyR: lv.heavyR, heavyS: lv.heavyS, theta: theta, pairsHH: lv.pairsHH,
					elems: lv.elems, elementMajor: l.em, cols: cols, saved: saved, ns: ns, sampled: sampled}
			}
		}
	}
	return best
}

// splitLevels returns the Δ1 worth pricing, from the fewest heavy sets to
// the most: those whose increments among the heavy sets might outweigh the
// product's cost per pair. Those increments are about the scan-count work
// times the heavy sets' share of Σ |Si|·|Sj|, and the product can at best
// save them.
func splitLevels(p *Problem, sc splitCosts) []splitLevel {
	st := &p.Stats
	kr, ks := p.R.Len(), p.S.Len()
	orderR, orderS := heavyOrder(p)
	// The n-th largest size over both sides, for n = all, 1/2, 1/4, ...
	nth := func(n int) int {
		if p.Self {
			return p.R.SetLen(int(orderR[n-1]))
		}
		// Merge the two orders up to n.
		x, y := 0, 0
		size := 0
		for ; n > 0; n-- {
			if y == ks || x < kr && p.R.SetLen(int(orderR[x])) >= p.S.SetLen(int(orderS[y])) {
				size = p.R.SetLen(int(orderR[x]))
				x++
			} else {
				size = p.S.SetLen(int(orderS[y]))
				y++
			}
		}
		return size
	}
	total := kr
	if !p.Self {
		total += ks
	}
	var deltas []int
	for n := total; n >= 16; n /= 2 {
		d := max(nth(n), 1)
		if !slices.Contains(deltas, d) {
			deltas = append(deltas, d)
		}
	}
	prefR, prefS := sizePrefix(p.R, orderR), sizePrefix(p.S, orderS)
	sizeProduct := func(hr, hs int) float64 {
		if p.Self {
			a := float64(prefR[hr].sum)
			return (a*a - float64(prefR[hr].sq)) / 2
		}
		return float64(prefR[hr].sum) * float64(prefS[hs].sum)
	}
	allProduct := max(sizeProduct(kr, ks), 1)
	maxInc := 0.0
	for _, l := range sc.layouts {
		maxInc = max(maxInc, l.inc)
	}
	var out []splitLevel
	for x := len(deltas) - 1; x >= 0; x-- {
		d := deltas[x]
		lv := splitLevel{delta1: d, heavyR: countHeavy(p.R, orderR, d)}
		lv.heavyS = lv.heavyR
		if !p.Self {
			lv.heavyS = countHeavy(p.S, orderS, d)
		}
		lv.pairsHH = int64(lv.heavyR) * int64(lv.heavyS)
		if p.Self {
			lv.pairsHH = int64(lv.heavyR) * int64(lv.heavyR-1) / 2
		}
		if lv.pairsHH == 0 {
			continue
		}
		lv.elems = float64(prefR[lv.heavyR].sum)
		if !p.Self {
			lv.elems += float64(prefS[lv.heavyS].sum)
		}
		bound := 2 * float64(st.ScanWork) * sizeProduct(lv.heavyR, lv.heavyS) / allProduct
		if maxInc*bound <= (sc.denseNS+sc.pairNS)*float64(lv.pairsHH) {
			continue
		}
		out = append(out, lv)
	}
	return out
}

// heavyOrder returns the positions of the sets of R and of S, largest
// first (ties by position): the heavy sets of every Δ1 are a prefix.
func heavyOrder(p *Problem) (orderR, orderS []uint32) {
	v := p.Memo("allpairs.heavyorder", func() any {
		r := bySizeDesc(p.R)
		s := r
		if !p.Self {
			s = bySizeDesc(p.S)
		}
		return [2][]uint32{r, s}
	}).([2][]uint32)
	return v[0], v[1]
}

// allHeavy returns, for the split with every set heavy (dH = df), the
// number of elements whose w exceeds theta and the sum of their w: from
// the histogram of the frequencies in a self-join, by a pass over them for
// R × S.
func allHeavy(p *Problem) func(theta int64) (float64, float64) {
	if !p.Self {
		return func(theta int64) (float64, float64) {
			n, sum := heavySums(p.Threads, p.DFR, p.DFS, false, theta)
			return float64(n), float64(sum)
		}
	}
	hist := dfHistogram(p)
	return func(theta int64) (float64, float64) {
		var n, sum int64
		for d := len(hist) - 1; d >= 2; d-- {
			w := int64(d) * int64(d-1) / 2
			if w <= theta {
				break
			}
			n += hist[d]
			sum += hist[d] * w
		}
		return float64(n), float64(sum)
	}
}

// dfHistogram returns, memoised, the number of elements of each document
// frequency (in R; of dfR + dfS for R × S).
func dfHistogram(p *Problem) []int64 {
	return p.Memo("allpairs.dfhist", func() any {
		top := p.Stats.MaxDF
		if !p.Self {
			top *= 2
		}
		u := p.Universe
		parts := max(1, min(p.Threads, u>>18))
		if int64(top+1)*int64(parts) > int64(u)/4+1<<16 {
			parts = 1 // private histograms would outweigh the pass
		}
		hists := make([][]int64, parts)
		par.Each(parts, p.Threads, func(w int) {
			h := make([]int64, top+1)
			lo, hi := w*u/parts, (w+1)*u/parts
			if p.Self {
				for _, d := range p.DFR[lo:hi] {
					h[d]++
				}
			} else {
				ds := p.DFS[lo:hi]
				for e, d := range p.DFR[lo:hi] {
					h[d+ds[e]]++
				}
			}
			hists[w] = h
		})
		for _, h := range hists[1:] {
			for d, n := range h {
				hists[0][d] += n
			}
		}
		return hists[0]
	}).([]int64)
}

// heavySums returns the number of elements e with w(e) > theta and the sum
// of their w, where w(e) = dr[e]·ds[e] (C(dr[e], 2) if self), in parallel.
func heavySums(threads int, dr, ds []uint32, self bool, theta int64) (int64, int64) {
	u := len(dr)
	parts := max(1, min(threads, u>>18))
	ns, sums := make([]int64, parts), make([]int64, parts)
	par.Each(parts, threads, func(w int) {
		var n, sum int64
		for e := w * u / parts; e < (w+1)*u/parts; e++ {
			a, b := int64(dr[e]), int64(ds[e])
			x := a * b
			if self {
				x = a * (a - 1) / 2
			}
			if x > theta {
				n++
				sum += x
			}
		}
		ns[w], sums[w] = n, sum
	})
	var n, sum int64
	for w := range ns {
		n += ns[w]
		sum += sums[w]
	}
	return n, sum
}

// The sample's budget: about sampleOccurrences counted occurrences, and at
// least sampleValues values of the universe.
const (
	sampleOccurrences = 1 << 18
	sampleValues      = 1 << 15
	maxOccurrences    = 1 << 20 // over this, sets are sampled too
)

// heavySample counts dH for a sample of the elements as heavy sets are
// added, largest first. Exact when that is cheap: every element, every
// set. Otherwise the sample is (see sampleRuns)
//
//   - runs of consecutive values, one at a random place in each of 8 to 64
//     equal strata of the universe (each run costs a search in every heavy
//     set), whose values hold about sampleOccurrences occurrences of the
//     heavy sets;
//   - the elements of the highest document frequencies (up to topElems),
//     which weigh most, counted exactly;
//   - a short run from an element of each frequency class that the strata
//     sampled too little;
//   - when the values alone would still hold over maxOccurrences
//     occurrences (a small universe under very many elements), only every
//     m-th heavy set, dH scaled back.
//
// The counts are post-stratified by document frequency (see weigh), which
// keeps the estimate right when frequency and value correlate
// (vocabularies numbered by frequency). Classes without a sampled element
// are priced from their mean frequency and the heavy sets' share of the
// occurrences at the nearest sampled frequencies.
type heavySample struct {
	p              *Problem
	exact          bool
	orderR, orderS []uint32
	heavyR, heavyS int // the heavy sets so far, and of them those counted
	keptR, keptS   int
	every          int // every th heavy set is counted
	runs           []sampleRun
	dTop           uint32    // elements of at least this frequency are all sampled
	dr, ds         []uint32  // dH per sampled value (ds aliases dr in a self-join)
	df             []uint32  // the frequency (dfR + dfS for R × S) per sampled value
	wt, wtW        []float64 // the weights per sampled value of its count and of its w; nil when exact
	unsampled      []classMean
}

// sampleRun is values [lo, hi), counted at positions at.. of the sample.
type sampleRun struct{ lo, hi, at uint32 }

// classMean is a frequency class without a sampled element: its elements,
// their mean frequency, and its index.
type classMean struct {
	n, mean float64
	class   int
}

// dfClass buckets document frequencies: exact below 32, then four classes
// per doubling.
func dfClass(d uint32) int {
	if d < 32 {
		return int(d)
	}
	b := bits.Len32(d) - 1
	return 32 + (b-5)*4 + int(d>>(b-2))&3
}

const dfClasses = 32 + 27*4

// newHeavySample prepares a sample sized for up to heavyR × heavyS heavy
// sets.
func newHeavySample(p *Problem, heavyR, heavyS int) *heavySample {
	h := &heavySample{p: p, every: 1, dTop: math.MaxUint32}
	h.orderR, h.orderS = heavyOrder(p)
	u := p.Universe
	prefR, prefS := sizePrefix(p.R, h.orderR[:heavyR]), sizePrefix(p.S, h.orderS[:heavyS])
	occ := float64(prefR[heavyR].sum) // occurrences in the heavy sets
	sets := float64(heavyR)
	if !p.Self {
		occ += float64(prefS[heavyS].sum)
		sets += float64(heavyS)
	}
	frac := min(1, max(sampleValues/float64(max(u, 1)), sampleOccurrences/max(occ, 1)))
	if c := frac * occ; c > maxOccurrences {
		h.every = int(math.Ceil(c / maxOccurrences))
	}
	if frac == 1 {
		h.runs = []sampleRun{{0, uint32(u), 0}}
		h.exact = h.every == 1
	} else {
		// Runs: each costs a search in every counted heavy set, a few
		// cache misses in a large set, so about one per 256 elements of
		// an average set.
		avg := occ / max(sets, 1)
		nr := int(min(64, max(8, avg/256)))
		h.runs, h.dTop = sampleRuns(p, nr, nr/2, frac)
	}
	n := 0
	for _, r := range h.runs {
		n += int(r.hi - r.lo)
	}
	h.dr = make([]uint32, n)
	h.ds = h.dr
	if !p.Self {
		h.ds = make([]uint32, n)
	}
	if !h.exact {
		h.weigh()
	}
	return h
}

// sampleRuns places nb runs of about frac·u values in nb equal strata of
// the universe, then runs on elements the strata missed:
//
//   - the elements of the highest frequencies (all of those with a
//     frequency of at least some d, up to topElems of them), which weigh
//     most, leaving out the least frequent while they take over topRuns
//     runs;
//   - a run of classRun values from a random element of each frequency
//     class that the strata sampled fewer than classPicks times, most
//     important classes first (by the sum of C(d, 2) over them), up to
//     2·topRuns runs: the strata miss whole classes where frequency
//     follows the value (vocabularies numbered by frequency), and the
//     estimate would have to guess them.
//
// Runs are cut where they overlap. It returns the runs in
// increasing order, numbered, with that d (math.MaxUint32 if none).
func sampleRuns(p *Problem, nb, topRuns int, frac float64) (runs []sampleRun, dTop uint32) {
	u := p.Universe
	length := max(1, int(math.Ceil(frac*float64(u)/float64(nb))))
	rng := rand.New(rand.NewPCG(uint64(u), uint64(p.R.Len())))
	var blocks []sampleRun
	var inBlocks [dfClasses]int
	for b := 0; b < nb; b++ {
		lo, hi := b*u/nb, (b+1)*u/nb
		n := min(length, hi-lo)
		if n <= 0 {
			continue
		}
		start := lo + rng.IntN(hi-lo-n+1)
		blocks = append(blocks, sampleRun{lo: uint32(start), hi: uint32(start + n)})
	}
	// The least d > 2 with at most topElems elements at or above it.
	hist := dfHistogram(p)
	d, above := len(hist), int64(0)
	for d > 3 && above+hist[d-1] <= topElems {
		d--
		above += hist[d]
	}
	dTop = math.MaxUint32
	if above > 0 {
		dTop = uint32(d)
	}
	for _, r := range blocks {
		for e := r.lo; e < r.hi; e++ {
			if f := p.frequency(e); f < dTop {
				inBlocks[dfClass(f)]++
			}
		}
	}
	// The classes to pick from, by frequency.
	var all [dfClasses]int64
	var weight [dfClasses]float64
	for f, n := range hist[:min(len(hist), int(dTop))] {
		all[dfClass(uint32(f))] += n
		weight[dfClass(uint32(f))] += float64(n) * float64(f) * float64(f)
	}
	want := make([]bool, len(hist))
	var short []int
	for c := 3; c < dfClasses; c++ { // classes 0-2 hold no w
		if inBlocks[c] < classPicks && all[c] > int64(inBlocks[c]) {
			short = append(short, c)
		}
	}
	for f := range want {
		c := dfClass(uint32(f))
		want[f] = uint32(f) >= dTop || c >= 3 && inBlocks[c] < classPicks && all[c] > int64(inBlocks[c])
	}
	found := wantedElements(p, want, dTop)
	inBlock := func(e uint32) bool {
		x, _ := slices.BinarySearchFunc(blocks, e, func(r sampleRun, e uint32) int {
			if r.hi <= e {
				return -1
			}
			if r.lo > e {
				return 1
			}
			return 0
		})
		return x < len(blocks) && blocks[x].lo <= e && e < blocks[x].hi
	}
	// The top elements, increasing.
	var tops []uint32
	for _, f := range found {
		for _, e := range f.top {
			if !inBlock(e) {
				tops = append(tops, e)
			}
		}
	}
	var extra []sampleRun
	for dt := dTop; len(tops) > 0; {
		extra = coalesceRuns(tops, func(e uint32) bool { return p.frequency(e) >= dt })
		if len(extra) <= topRuns {
			dTop = dt
			break
		}
		// Too scattered: leave out the least frequent.
		next := uint32(math.MaxUint32)
		for _, e := range tops {
			if f := p.frequency(e); f > dt {
				next = min(next, f)
			}
		}
		extra, dt = nil, next
	}
	if len(extra) == 0 {
		dTop = math.MaxUint32
	}
	// Class picks, the weightiest classes first: a run from one of its
	// elements (where frequency follows the value, its neighbours are
	// of its class too).
	slices.SortStableFunc(short, func(a, b int) int { return cmp.Compare(weight[b], weight[a]) })
	for x, c := range short {
		if x >= 2*topRuns {
			break
		}
		start := rng.IntN(len(found))
		for y := 0; y < len(found); y++ {
			if f := found[(start+y)%len(found)].picks[c]; len(f) > 0 {
				e := f[rng.IntN(len(f))]
				extra = append(extra, sampleRun{lo: e, hi: uint32(min(int(e)+classRun, u))})
				break
			}
		}
	}
	// Cut the runs where they overlap one another.
	slices.SortFunc(extra, func(a, b sampleRun) int { return cmp.Compare(a.lo, b.lo) })
	var cut []sampleRun
	x := 0
	for _, r := range extra {
		if n := len(cut); n > 0 {
			r.lo = max(r.lo, cut[n-1].hi)
		}
		for x < len(blocks) && blocks[x].hi <= r.lo {
			x++
		}
		if x < len(blocks) {
			if blocks[x].lo <= r.lo {
				continue // starts in a stratum's run
			}
			r.hi = min(r.hi, blocks[x].lo)
		}
		if r.lo < r.hi {
			cut = append(cut, r)
		}
	}
	extra = cut
	runs = append(blocks, extra...)
	slices.SortFunc(runs, func(a, b sampleRun) int { return cmp.Compare(a.lo, b.lo) })
	at := uint32(0)
	for i := range runs {
		runs[i].at = at
		at += runs[i].hi - runs[i].lo
	}
	return runs, dTop
}

// A sample should hold classPicks elements of each frequency class; a class
// with fewer gets a run of classRun values from one of its elements.
const (
	classPicks = 8
	classRun   = 32
)

// coalesceRuns returns the increasing elements es for which keep is true
// (all if keep is nil) as runs of consecutive values.
func coalesceRuns(es []uint32, keep func(uint32) bool) []sampleRun {
	var out []sampleRun
	for _, e := range es {
		if keep != nil && !keep(e) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].hi == e {
			out[n-1].hi++
			continue
		}
		out = append(out, sampleRun{lo: e, hi: e + 1})
	}
	return out
}

// wantedPart is what wantedElements finds in one part of the universe.
type wantedPart struct {
	top   []uint32            // every element of frequency at least dTop
	picks [dfClasses][]uint32 // the first classPicks elements of each wanted class below dTop
}

// wantedElements scans the universe in parts, in parallel, for the
// elements of the frequencies f with want[f].
func wantedElements(p *Problem, want []bool, dTop uint32) []wantedPart {
	u := p.Universe
	parts := max(1, min(64, u>>14))
	found := make([]wantedPart, parts)
	threads := p.Threads
	if u < p.spread().min {
		threads = 1
	}
	par.Each(parts, threads, func(w int) {
		f := &found[w]
		lo, hi := w*u/parts, (w+1)*u/parts
		add := func(e int, d uint32) {
			if d >= dTop {
				f.top = append(f.top, uint32(e))
			} else if c := dfClass(d); len(f.picks[c]) < classPicks {
				f.picks[c] = append(f.picks[c], uint32(e))
			}
		}
		if p.Self {
			for x, d := range p.DFR[lo:hi] {
				if want[d] {
					add(lo+x, d)
				}
			}
			return
		}
		ds := p.DFS[lo:hi]
		for x, d := range p.DFR[lo:hi] {
			if d += ds[x]; want[d] {
				add(lo+x, d)
			}
		}
	})
	return found
}

// topElems is the most elements of the highest frequencies that a sample
// counts exactly.
const topElems = 1024

// frequency returns e's document frequency in R, plus in S for R × S.
func (p *Problem) frequency(e uint32) uint32 {
	if p.Self {
		return p.DFR[e]
	}
	return p.DFR[e] + p.DFS[e]
}

// weigh sets the weights of every sampled value: 1 for the elements of
// the top frequencies, all sampled; for the others, of frequency class c,
// N_c / n_c for counting elements (its class's elements over those
// sampled), and A_c / a_c for summing w, A_c the sum over the class of
// a(d) = C(d, 2) (d²/4 for R × S, d = dfR + dfS), which w follows closely,
// and a_c its sum over the sampled elements: a ratio estimator, far
// steadier than counts where a class holds few elements of very different
// frequencies. Elements in no set weigh 0.
func (h *heavySample) weigh() {
	p := h.p
	n := len(h.dr)
	aux := func(d float64) float64 {
		if p.Self {
			return d * (d - 1) / 2
		}
		return d * d / 4
	}
	h.df = make([]uint32, n)
	var sampled, sampledA [dfClasses]float64
	for _, r := range h.runs {
		for e := r.lo; e < r.hi; e++ {
			d := p.frequency(e)
			h.df[r.at+e-r.lo] = d
			if d < h.dTop {
				sampled[dfClass(d)]++
				sampledA[dfClass(d)] += aux(float64(d))
			}
		}
	}
	var all, sum, allA [dfClasses]float64
	for d, c := range dfHistogram(p) {
		if uint32(d) >= h.dTop {
			break
		}
		x := dfClass(uint32(d))
		all[x] += float64(c)
		sum[x] += float64(c) * float64(d)
		allA[x] += float64(c) * aux(float64(d))
	}
	var ratio, ratioA [dfClasses]float64
	for c := 1; c < dfClasses; c++ {
		switch {
		case sampled[c] > 0:
			ratio[c] = all[c] / sampled[c]
			if sampledA[c] > 0 {
				ratioA[c] = allA[c] / sampledA[c]
			}
		case all[c] > 0:
			h.unsampled = append(h.unsampled, classMean{all[c], sum[c] / all[c], c})
		}
	}
	h.wt, h.wtW = make([]float64, n), make([]float64, n)
	for i, d := range h.df {
		if d >= h.dTop {
			h.wt[i], h.wtW[i] = 1, 1
		} else {
			h.wt[i], h.wtW[i] = ratio[dfClass(d)], ratioA[dfClass(d)]
		}
	}
}

// sharedSample is a heavySample counted once per problem for every
// optimise that draws it: the CPU's MMJoin and a device's price the same
// levels with other costs, and the counting is most of their time. It
// keeps the counts of each level asked for, each grown from the largest
// level below it, so that callers may ask in any order and get what
// growing their own sample would give.
type sharedSample struct {
	mu     sync.Mutex
	base   *heavySample   // no set counted yet
	levels []*heavySample // counted, never changed after
	// own marks a sample too large to keep a copy of per level: each
	// caller grows one in place (in the memo, base until one takes it).
	own bool
}

// maxSharedValues bounds the sampled values of a shared sample: each level
// kept holds its counts, for as long as the problem.
const maxSharedValues = 1 << 18

// heavySampleFor returns the sample for up to heavyR × heavyS heavy sets,
// shared through the problem's memo when it is small enough to keep one
// copy of its counts per level.
func heavySampleFor(p *Problem, heavyR, heavyS int) *sharedSample {
	key := fmt.Sprintf("allpairs.heavysample/%d/%d", heavyR, heavyS)
	s := p.Memo(key, func() any {
		h := newHeavySample(p, heavyR, heavyS)
		return &sharedSample{base: h, own: len(h.dr) > maxSharedValues}
	}).(*sharedSample)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.own && s.base != nil:
		// Too large to keep: the first caller takes it, and the memo
		// lets it go.
		own := &sharedSample{base: s.base, own: true}
		s.base = nil
		return own
	case s.own:
		return &sharedSample{base: newHeavySample(p, heavyR, heavyS), own: true}
	}
	return s
}

// at returns the sample with the largest heavyR sets of R (heavyS of S)
// counted. The result is read-only, except for an own sample, which the
// next call grows.
func (s *sharedSample) at(heavyR, heavyS int) *heavySample {
	if s.own {
		s.base.grow(heavyR, heavyS)
		return s.base
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from := s.base
	for _, h := range s.levels {
		if h.heavyR == heavyR && h.heavyS == heavyS {
			return h
		}
		if h.heavyR <= heavyR && h.heavyS <= heavyS && h.heavyR+h.heavyS > from.heavyR+from.heavyS {
			from = h
		}
	}
	h := *from
	h.dr = slices.Clone(from.dr)
	h.ds = h.dr
	if !s.base.p.Self {
		h.ds = slices.Clone(from.ds)
	}
	h.grow(heavyR, heavyS)
	s.levels = append(s.levels, &h)
	return &h
}

// grow makes the largest heavyR sets of R (heavyS of S) heavy, counting
// the new ones.
func (h *heavySample) grow(heavyR, heavyS int) {
	h.keptR = h.add(h.dr, h.p.R, h.orderR, h.heavyR, heavyR, h.keptR)
	h.heavyR = heavyR
	if !h.p.Self {
		h.keptS = h.add(h.ds, h.p.S, h.orderS, h.heavyS, heavyS, h.keptS)
	}
	h.heavyS = heavyS
}

// add counts the sets order[from:to] that the sample keeps (every h.every
// th), and returns kept plus their number.
func (h *heavySample) add(cnt []uint32, c *sets.Collection, order []uint32, from, to, kept int) int {
	var ids []uint32
	for x := from; x < to; x++ {
		if x%h.every == 0 {
			ids = append(ids, order[x])
		}
	}
	set := func(x int) []uint32 { return c.Set(int(ids[x])) }
	runs := h.runs
	if len(runs) == 1 && runs[0].lo == 0 && int(runs[0].hi) == h.p.Universe {
		addDF(h.p.spread(), cnt, len(ids), set) // every value
		return kept + len(ids)
	}
	// Workers take disjoint ranges of runs, so they share the counters.
	workers := max(1, min(h.p.Threads, len(runs)/8, len(ids)*len(runs)>>12))
	par.Do(workers, func(w int) {
		mine := runs[w*len(runs)/workers : (w+1)*len(runs)/workers]
		if len(mine) == 0 {
			return
		}
		for x := range ids {
			s := set(x)
			i := 0
			for _, r := range mine {
				i = seek(s, i, r.lo)
				for i < len(s) && s[i] < r.hi {
					cnt[r.at+s[i]-r.lo]++
					i++
				}
				if i == len(s) {
					break
				}
			}
		}
	})
	return kept + len(ids)
}

// seek returns the first position at or after from in the increasing s
// whose value is at least v. It guesses the position by interpolation
// between s[from] and the last value, then gallops from the guess to a
// bracket and searches it: a sample's runs are far apart in large sets,
// and the guess lands a few cache lines from the answer where the values
// spread evenly (a plain gallop would miss the cache at every doubling).
func seek(s []uint32, from int, v uint32) int {
	n := len(s)
	if from >= n || s[from] >= v {
		return from
	}
	last := s[n-1]
	if last < v {
		return n
	}
	// s[from] < v <= last: the answer is in (from, n-1].
	lo, hi := from, n-1
	g := lo + 1 + int(uint64(hi-lo-1)*uint64(v-s[lo])/uint64(last-s[lo]))
	if s[g] < v {
		lo = g // gallop up from g
		for step := 1; ; step *= 2 {
			if x := g + step; x >= hi || s[x] >= v {
				hi = min(x, hi)
				break
			} else {
				lo = x
			}
		}
	} else {
		hi = g // gallop down from g
		for step := 1; ; step *= 2 {
			if x := g - step; x <= lo || s[x] < v {
				lo = max(x, lo)
				break
			} else {
				hi = x
			}
		}
	}
	// s[lo] < v <= s[hi]
	i, _ := slices.BinarySearch(s[lo+1:hi], v)
	return lo + 1 + i
}

// heavy estimates the number of elements whose w exceeds theta among the
// current heavy sets, and the sum of their w.
func (h *heavySample) heavy(theta int64) (cols, saved float64) {
	p := h.p
	qr := float64(h.keptR) / float64(max(h.heavyR, 1))
	qs := qr
	if !p.Self {
		qs = float64(h.keptS) / float64(max(h.heavyS, 1))
	}
	th := float64(theta)
	w := func(a, b float64) float64 {
		if p.Self {
			return a * (a - 1) / 2 / (qr * qr)
		}
		return a * b / (qr * qs)
	}
	if h.exact {
		n, sum := heavySums(p.Threads, h.dr, h.ds, p.Self, theta)
		return float64(n), float64(sum)
	}
	// The heavy sets' share of the occurrences, per frequency class of
	// the sampled elements, for the classes without any.
	var occH, occ [dfClasses]float64
	for i, c := range h.dr {
		x := w(float64(c), float64(h.ds[i]))
		if x > th {
			cols += h.wt[i]
			saved += h.wtW[i] * x
		}
		if d := h.df[i]; d > 0 {
			k := dfClass(d)
			occH[k] += float64(c) / qr
			if !p.Self {
				occH[k] += float64(h.ds[i]) / qs
			}
			occ[k] += float64(d)
		}
	}
	for _, c := range h.unsampled {
		// The share varies with the frequency (frequent elements fall in
		// the heavy sets at their share of the sets, rare ones at their
		// share of the elements): interpolate between the nearest classes
		// with sampled occurrences, on the class index, a log scale.
		lo, hi := c.class-1, c.class+1
		for lo > 0 && occ[lo] == 0 {
			lo--
		}
		for hi < dfClasses && occ[hi] == 0 {
			hi++
		}
		var share float64
		switch {
		case lo > 0 && hi < dfClasses:
			a, b := occH[lo]/occ[lo], occH[hi]/occ[hi]
			share = a + (b-a)*float64(c.class-lo)/float64(hi-lo)
		case lo > 0:
			share = occH[lo] / occ[lo]
		case hi < dfClasses:
			share = occH[hi] / occ[hi]
		}
		a := c.mean * share
		var x float64
		if p.Self {
			x = a * (a - 1) / 2
		} else {
			x = a * a / 4 // an even split between R and S
		}
		if x > th {
			cols += c.n
			saved += c.n * x
		}
	}
	return cols, saved
}

// materialise lists the heavy elements of split sp: their exact dH, from
// the heavy sets (the frequencies when every set is heavy), and the
// elements whose w exceeds sp.theta. The split stays only if it gains.
func materialise(p *Problem, sp splitPlan, sc splitCosts) *MMJoinSplit {
	kr, ks := p.R.Len(), p.S.Len()
	out := &MMJoinSplit{Delta1: math.MaxInt}
	ns := math.Inf(1)
	for _, l := range sc.layouts {
		if x := l.base + sc.copyNS; x < ns {
			ns, out.elementMajor = x, l.em
		}
	}
	if sp.delta1 != math.MaxInt {
		dr, ds := p.DFR, p.DFS
		if sp.heavyR < kr || sp.heavyS < ks {
			orderR, orderS := heavyOrder(p)
			dr = make([]uint32, p.Universe)
			addDF(p.spread(), dr, sp.heavyR, func(x int) []uint32 { return p.R.Set(int(orderR[x])) })
			ds = dr
			if !p.Self {
				ds = make([]uint32, p.Universe)
				addDF(p.spread(), ds, sp.heavyS, func(x int) []uint32 { return p.S.Set(int(orderS[x])) })
			}
		}
		cols, saved := heavyColumns(p.Threads, dr, ds, p.Self, sp.theta, nil)
		var l splitLayout
		for _, x := range sc.layouts {
			if x.em == sp.elementMajor {
				l = x
			}
		}
		if x, gains := sc.price(l, sp.pairsHH, sp.elems, float64(len(cols)), float64(saved)); gains && len(cols) > 0 && x < ns {
			out.elementMajor = sp.elementMajor
			out.Delta1, out.Columns, out.pairsHH, out.saved = sp.delta1, cols, sp.pairsHH, saved
			ns = x
		}
	}
	if p.forceMMJoin != nil {
		p.forceMMJoin(out)
	}
	out.Seconds = cpuSeconds(p, ns)
	if len(out.Columns) == 0 {
		out.Delta1 = math.MaxInt // nothing is heavy
	}
	heavyR, heavyS := 0, 0
	if out.Delta1 != math.MaxInt {
		heavyR, heavyS = sp.heavyR, sp.heavyS
	}
	out.HeavyR = heavyIDs(p.R, out.Delta1, heavyR)
	out.HeavyS = out.HeavyR
	if !p.Self {
		out.HeavyS = heavyIDs(p.S, out.Delta1, heavyS)
	}
	return out
}

// heavyColumns appends to cols the elements e, in increasing order, whose
// increments w(e) = dr[e]·ds[e] (C(dr[e], 2) in a self-join) exceed theta,
// and returns it with the sum of their w(e). Workers scan parts of the
// universe, and their parts are joined in order.
func heavyColumns(threads int, dr, ds []uint32, self bool, theta int64, cols []uint32) ([]uint32, int64) {
	scan := func(lo, hi int, cols []uint32) ([]uint32, int64) {
		var saved int64
		for e := lo; e < hi; e++ {
			a, b := int64(dr[e]), int64(ds[e])
			w := a * b
			if self {
				w = a * (a - 1) / 2
			}
			if w > theta {
				cols = append(cols, uint32(e))
				saved += w
			}
		}
		return cols, saved
	}
	u := len(dr)
	workers := threads
	if u < 1<<20 || workers <= 1 {
		return scan(0, u, cols)
	}
	parts := make([][]uint32, workers)
	sums := make([]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		// The first part goes straight into cols; the others start with
		// about their share of its capacity, which earlier calls grew.
		dst := cols
		if w > 0 {
			dst = make([]uint32, 0, cap(cols)/workers)
		}
		wg.Go(func() { parts[w], sums[w] = scan(w*u/workers, (w+1)*u/workers, dst) })
	}
	wg.Wait()
	cols = parts[0]
	saved := sums[0]
	for w := 1; w < workers; w++ {
		cols = append(cols, parts[w]...)
		saved += sums[w]
	}
	return cols, saved
}
