package allpairs

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/sets"
)

// prefix answers threshold queries by prefix filtering (AllPairs-style),
// visiting only pairs that can qualify. With elements ordered rarest first,
// a pair whose smaller set x must share t elements has a common element
// among the |x|-t+1 rarest of x. So each set x, taken in increasing size,
// walks only the lists of its prefix elements, restricted to the sets after
// it, and verifies the candidates it meets. For exact containment (t = |x|)
// the candidates are the intersection of x's lists, rarest first. The cost
// follows the output and the rare elements, not the frequent ones: it wins
// set containment joins of skewed data such as retail baskets.
type prefixFilter struct{ cpuEngine }

func init() { Register(prefixFilter{cpuEngine{"prefix"}}) }

func (prefixFilter) Estimate(p *Problem) (Estimate, error) {
	if _, _, ok := p.Tiled(); ok {
		return Estimate{}, cannot("reports pairs over a threshold, not dense tiles")
	}
	if p.ZeroQualifies() {
		return Estimate{}, cannot("needs a threshold of at least one common element")
	}
	st := &p.Stats
	if st.R.Elements+st.S.Elements >= math.MaxUint32 {
		return Estimate{}, cannot("over 2^32 elements")
	}
	cand, starts, verify := prefixWork(p)
	n, idx := prefixSize(p)
	ns := prefixBase(p) + costs.elemAt(idx)*starts + verify
	mem := int64(4*n*4) + 4*int64(p.Universe)*2 + int64(p.Threads)*4*int64(st.R.Sets+st.S.Sets)
	return Estimate{Seconds: cpuSeconds(p, ns), Memory: mem, Detail: fmt.Sprintf("%.3g candidate visits", cand)}, nil
}

// prefixSize returns the occurrences that prefix filtering indexes and the
// bytes of its index.
func prefixSize(p *Problem) (n float64, idx int64) {
	st := &p.Stats
	if p.Self {
		n = float64(st.R.Elements)
		return n, 8*int64(n) + 4*int64(p.Universe)
	}
	n = float64(st.R.Elements + st.S.Elements)
	return n, 4*int64(n) + 4*int64(p.Universe)
}

// prefixBase is the part of the estimate that needs no sample: building the
// index and sorting the sets by rarity.
func prefixBase(p *Problem) float64 {
	n, _ := prefixSize(p)
	avg := max(p.Stats.R.AvgSize, p.Stats.S.AvgSize, 1)
	return costs.build(n, p.Universe) + n*costs.sortElem*math.Log2(avg+1)
}

// lowerBound is prefixBase, plus, when every pair needs one common element
// only (prefixes are whole sets, and their lists are walked whole), half a
// visit per scan-count increment: the estimate, from a sample, counts at
// least one (0 where it cannot run, which Estimate says).
func (prefixFilter) lowerBound(p *Problem) float64 {
	if _, _, ok := p.Tiled(); ok || p.ZeroQualifies() || p.Stats.R.Elements+p.Stats.S.Elements >= math.MaxUint32 {
		return 0
	}
	ns := prefixBase(p)
	if need, ok := p.ConstNeed(); ok && need == 1 {
		ns += costs.visit / 2 * float64(p.Stats.ScanWork)
	}
	return cpuSeconds(p, ns)
}

// prefixWork estimates, on a sample of at most 4096 probes, the list
// entries the probes' prefixes visit, the lists they start, and the cost
// of visiting and verifying the candidates (memoised: it times a sample of
// verifications).
func prefixWork(p *Problem) (cand, starts, verifyNS float64) {
	w := p.Memo("allpairs.prefix", func() any {
		var w [3]float64
		w[0], w[1], w[2] = measurePrefixWork(p)
		return w
	}).([3]float64)
	return w[0], w[1], w[2]
}

// sizeTail describes a collection's set sizes for prefix filtering, where
// a probe meets only the sets after it in order of size: after[s] is the
// fraction of the collection's occurrences in sets larger than s plus half
// of those in sets of size s (ties go either way), and sets[s] the number
// of sets of size s or more.
type sizeTail struct {
	after []float64
	sets  []int
}

func newSizeTail(c *sets.Collection) sizeTail {
	top := 0
	for i := range c.Len() {
		top = max(top, c.SetLen(i))
	}
	occ := make([]float64, top+2)
	n := make([]int, top+2)
	for i := range c.Len() {
		occ[c.SetLen(i)] += float64(c.SetLen(i))
		n[c.SetLen(i)]++
	}
	total := max(float64(len(c.Elements)), 1)
	t := sizeTail{after: make([]float64, top+2), sets: make([]int, top+2)}
	var above float64 // occurrences in larger sets
	for x := top; x >= 0; x-- {
		t.after[x] = (above + occ[x]/2) / total
		above += occ[x]
		t.sets[x] = t.sets[x+1] + n[x]
	}
	return t
}

// of returns after and sets for a probe of size s.
func (t sizeTail) of(s int) (after float64, sets int) {
	s = min(s, len(t.after)-1)
	return t.after[s], t.sets[s]
}

func measurePrefixWork(p *Problem) (cand, starts, verifyNS float64) {
	df := func(e uint32) int64 {
		d := int64(p.DFR[e])
		if !p.Self {
			d += int64(p.DFS[e])
		}
		return d
	}
	// Verifications to time: the rest of a sampled probe (its most
	// frequent elements) with a set of the other side drawn in proportion
	// to its size (a candidate shares a rare element with the probe), and
	// at least as large (it comes after the probe).
	const maxTimed, maxTimedElems = 2048, 1 << 20
	var timedA, timedB [][]uint32
	timedElems := 0 // of the probes timed: a pass over each picks its rest
	rng := rand.New(rand.NewPCG(uint64(p.R.Len()), uint64(len(p.S.Elements))))
	probe := func(c, other *sets.Collection, need func(int) uint32) (float64, float64, float64, float64) {
		k := c.Len()
		if k == 0 || other.Len() == 0 {
			return 0, 0, 0, 0
		}
		tail := newSizeTail(other)
		// At most 4096 probes and about 2^18 of their elements.
		n := len(c.Elements)
		step := max(1, k/4096, n>>18)
		timeEvery := max(1, k/step/maxTimed)
		var visits, lists, exact, cands float64
		var h int64Heap
		samples := 0
		for i := 0; i < k; i += step {
			samples++
			s := c.Set(i)
			t := int(need(i))
			if t > len(s) || t == 0 {
				continue
			}
			plen := len(s) - t + 1
			lists += float64(plen)
			// The sum of the plen smallest frequencies, and the largest of
			// them (the prefix's last).
			var sum, cutoff int64
			if plen == len(s) {
				for _, e := range s {
					sum += df(e)
				}
			} else {
				keepSmall := plen <= len(s)-plen
				m := plen
				if !keepSmall {
					m = len(s) - plen
				}
				h = h[:0]
				var total int64
				for _, e := range s {
					d := df(e)
					total += d
					if !keepSmall {
						d = -d
					}
					if len(h) < m {
						heap.Push(&h, d)
					} else if d < h[0] {
						h[0] = d
						heap.Fix(&h, 0)
					}
				}
				var part int64
				for _, d := range h {
					part += d
				}
				if keepSmall {
					sum, cutoff = part, h[0]
				} else {
					sum = total + part // part holds the largest, negated
					cutoff = -h[0]     // the least of the rest: a tie at most
				}
			}
			if t == len(s) {
				// Intersecting the lists: about one step per entry, half of
				// them (the first list's after the probe, the others'
				// whole, cut short as the candidates run out).
				exact += float64(sum) / 2
				continue
			}
			// The lists' entries after the probe: in sets larger than it,
			// in proportion to their occurrences.
			after, larger := tail.of(len(s))
			v := float64(sum) * after
			visits += v
			// Each distinct candidate is verified by intersecting the rest
			// of the probe with it; lists of rare elements seldom share a
			// set, so nearly every visit is a distinct candidate.
			cands += min(v, float64(larger))
			if len(timedA) < maxTimed && timedElems < maxTimedElems && samples%timeEvery == 0 {
				if y := sizeBiased(rng, other, len(s)); y >= 0 {
					timedA, timedB = append(timedA, restOf(s, df, cutoff, len(s)-plen)), append(timedB, other.Set(y))
					timedElems += len(s)
				}
			}
		}
		scale := float64(k) / float64(samples)
		return visits * scale, lists * scale, exact * scale, cands * scale
	}
	visits, starts, exact, cands := probe(p.R, p.S, p.NeedR)
	if !p.Self {
		v2, s2, e2, c2 := probe(p.S, p.R, p.NeedS)
		visits, starts, exact, cands = visits+v2, starts+s2, exact+e2, cands+c2
	}
	verifyNS = visits*costs.visit + exact*costs.visitExact + cands*verifyCost(p, timedA, timedB)
	return visits + exact, starts, verifyNS
}

// restOf returns the n elements of s (increasing) that prefix filtering
// verifies rather than indexes: the n most frequent, those of frequency
// cutoff (the prefix's largest) last in s among their ties, as the order by
// rarity puts ties by value.
func restOf(s []uint32, df func(uint32) int64, cutoff int64, n int) []uint32 {
	if n <= 0 {
		return nil
	}
	above, ties := 0, 0
	for _, e := range s {
		switch d := df(e); {
		case d > cutoff:
			above++
		case d == cutoff:
			ties++
		}
	}
	skip := ties - max(0, n-above) // ties that stay in the prefix
	rest := make([]uint32, 0, n)
	for _, e := range s {
		switch d := df(e); {
		case d > cutoff:
			rest = append(rest, e)
		case d == cutoff:
			if skip > 0 {
				skip--
			} else {
				rest = append(rest, e)
			}
		}
	}
	return rest
}

// sizeBiased returns a set of c drawn with probability in proportion to
// its size among those of at least min elements, or -1 if a few draws find
// none.
func sizeBiased(rng *rand.Rand, c *sets.Collection, least int) int {
	if len(c.Elements) == 0 {
		return -1
	}
	for range 8 {
		q := uint64(rng.Int64N(int64(len(c.Elements))))
		i, _ := slices.BinarySearch(c.Offsets, q+1) // the set holding occurrence q
		i--
		if c.SetLen(i) >= least {
			return i
		}
	}
	return -1
}

// verifyCost returns the nanoseconds of verifying one candidate, timed on
// the pairs: as for merge's sample, the kernels' speed differs too much
// between CPUs for a constant (on the Xeon of the development VM, without
// VP2INTERSECT, a verification on retail costs 100 to 200 ns). The real
// candidates are sets met at random, mostly out of L1 and L2, so the first
// pass, which brings the sample in, is the measure; a second, cached pass
// bounds it, in case the first was interrupted. Collections larger than
// the caches run slower still.
func verifyCost(p *Problem, a, b [][]uint32) float64 {
	if len(a) == 0 {
		return verifyCall
	}
	var pass [2]float64
	sink := 0
	for r := range pass {
		start := time.Now()
		for x := range a {
			sink += intersect.Count(a[x], b[x])
		}
		pass[r] = float64(time.Since(start).Nanoseconds()) / float64(len(a))
	}
	_ = sink
	scale := 1.0
	if 4*(p.Stats.R.Elements+p.Stats.S.Elements) > tiers.l3 {
		scale = 1.3
	}
	return scale * min(pass[0], 2*pass[1])
}

// verifyCall is the cost of a verification when none could be timed.
const verifyCall = 50

type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] > h[j] } // a max-heap
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// rarityRanks returns each element's position in the order of increasing
// document frequency (ties by element), by a counting sort on frequency.
func rarityRanks(p *Problem) []uint32 {
	u := p.Universe
	df := make([]uint32, u)
	var maxDF uint32
	for e := range df {
		df[e] = p.DFR[e]
		if !p.Self {
			df[e] += p.DFS[e]
		}
		maxDF = max(maxDF, df[e])
	}
	start := make([]uint32, maxDF+2)
	for _, d := range df {
		start[d+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	rank := make([]uint32, u)
	for e, d := range df {
		rank[e] = start[d]
		start[d]++
	}
	return rank
}

// bySize returns the sets of c in increasing size (ties by position), their
// elements replaced by rarity ranks and sorted rarest first, and the
// original position of each.
func bySize(c *sets.Collection, rank []uint32) (*sets.Collection, []uint32) {
	k := c.Len()
	perm := make([]uint32, k)
	for i := range perm {
		perm[i] = uint32(i)
	}
	slices.SortStableFunc(perm, func(a, b uint32) int { return cmp.Compare(c.SetLen(int(a)), c.SetLen(int(b))) })
	out := &sets.Collection{Offsets: make([]uint64, k+1), Elements: make([]uint32, 0, len(c.Elements))}
	for x, i := range perm {
		start := len(out.Elements)
		for _, e := range c.Set(int(i)) {
			out.Elements = append(out.Elements, rank[e])
		}
		slices.Sort(out.Elements[start:])
		out.Offsets[x+1] = uint64(len(out.Elements))
	}
	return out, perm
}

// prefixSide is one collection of a prefix join, reordered.
type prefixSide struct {
	c    *sets.Collection
	perm []uint32
	x    *index
}

func (prefixFilter) Run(ctx context.Context, p *Problem, out *Output) error {
	rank := rarityRanks(p)
	var r, s prefixSide
	r.c, r.perm = bySize(p.R, rank)
	if p.Self {
		r.x = buildIndex(p.Threads, r.c, p.Universe, dfByRank(p, rank, p.DFR), true)
		return prefixSelf(ctx, p, out, &r)
	}
	s.c, s.perm = bySize(p.S, rank)
	r.x = buildIndex(p.Threads, r.c, p.Universe, dfByRank(p, rank, p.DFR), false)
	s.x = buildIndex(p.Threads, s.c, p.Universe, dfByRank(p, rank, p.DFS), false)
	return prefixCross(ctx, p, out, &r, &s)
}

// dfByRank returns the document frequencies indexed by rarity rank.
func dfByRank(p *Problem, rank []uint32, df []uint32) []uint32 {
	out := make([]uint32, p.Universe)
	for e, d := range df {
		out[rank[e]] = d
	}
	return out
}

// prefixProber holds one worker's scratch space.
type prefixProber struct {
	cnt     []uint32
	touched []uint32
	a, b    []uint32
}

func prefixSelf(ctx context.Context, p *Problem, out *Output, r *prefixSide) error {
	c, x := r.c, r.x
	k := c.Len()
	spans := splitWork(k, p.Threads*tasksPerThread, func(i int) int64 {
		var w int64
		lo := c.Offsets[i]
		t := int(p.NeedR(int(r.perm[i])))
		n := c.SetLen(i)
		if t > n {
			return 0
		}
		for q := lo; q < lo+uint64(n-t+1); q++ {
			w += int64(x.start[c.Elements[q]+1] - x.start[c.Elements[q]] - x.rank[q])
		}
		return w
	})
	probers := make([]*prefixProber, p.Threads)
	return par.Tasks(ctx, len(spans), p.Threads, func(w, task int) error {
		pr := probers[w]
		if pr == nil {
			pr = &prefixProber{cnt: make([]uint32, k)}
			probers[w] = pr
		}
		wr := out.Writer()
		defer wr.Close()
		var pairs int64
		for i := spans[task].lo; i < spans[task].hi; i++ {
			pairs += int64(k - 1 - i)
			set := c.Set(i)
			pi := int(r.perm[i])
			t := int(p.NeedR(pi))
			if t > len(set) || t == 0 {
				continue
			}
			lo := c.Offsets[i]
			plen := len(set) - t + 1
			add := func(y uint32, v uint32) {
				a, b := pi, int(r.perm[y])
				if a > b {
					a, b = b, a
				}
				if v >= p.Need(a, b) {
					wr.Add(a, b, v)
				}
			}
			if t == len(set) {
				// Exact containment of x: intersect its lists, rarest first.
				e0 := set[0]
				l := x.list(e0)[x.rank[lo]+1:]
				pr.a = append(pr.a[:0], l...)
				for _, e := range set[1:] {
					if len(pr.a) == 0 {
						break
					}
					pr.b = intersect.Intersect(pr.b[:0], pr.a, x.list(e))
					pr.a, pr.b = pr.b, pr.a
				}
				for _, y := range pr.a {
					add(y, uint32(len(set)))
				}
				continue
			}
			pr.touched = pr.touched[:0]
			for q := lo; q < lo+uint64(plen); q++ {
				e := c.Elements[q]
				for _, y := range x.list(e)[x.rank[q]+1:] {
					if pr.cnt[y] == 0 {
						pr.touched = append(pr.touched, y)
					}
					pr.cnt[y]++
				}
			}
			rest := set[plen:]
			for _, y := range pr.touched {
				v := pr.cnt[y] + uint32(intersect.Count(rest, c.Set(int(y))))
				pr.cnt[y] = 0
				add(y, v)
			}
		}
		out.Progress(pairs)
		return out.Err()
	})
}

func prefixCross(ctx context.Context, p *Problem, out *Output, r, s *prefixSide) error {
	kr, ks := r.c.Len(), s.c.Len()
	// A pair belongs to its smaller set, R's on equal sizes: set x of one
	// side pairs with the sets of the other side from `from` on.
	fromS := make([]int, kr) // S sets before R's x: size < |x|
	j := 0
	for i := 0; i < kr; i++ {
		for j < ks && s.c.SetLen(j) < r.c.SetLen(i) {
			j++
		}
		fromS[i] = j
	}
	fromR := make([]int, ks) // R sets before S's y: size <= |y|
	i := 0
	for y := 0; y < ks; y++ {
		for i < kr && r.c.SetLen(i) <= s.c.SetLen(y) {
			i++
		}
		fromR[y] = i
	}
	type job struct {
		side    int // 0: probes of R, 1: probes of S
		lo, hi  int
		workSum int64
	}
	var jobs []job
	for side, sd := range []*prefixSide{r, s} {
		k := sd.c.Len()
		for _, sp := range splitWork(k, p.Threads*tasksPerThread/2+1, func(i int) int64 { return int64(sd.c.SetLen(i)) * 4 }) {
			jobs = append(jobs, job{side: side, lo: sp.lo, hi: sp.hi})
		}
	}
	probers := make([]*prefixProber, p.Threads)
	return par.Tasks(ctx, len(jobs), p.Threads, func(w, task int) error {
		pr := probers[w]
		if pr == nil {
			pr = &prefixProber{cnt: make([]uint32, max(kr, ks))}
			probers[w] = pr
		}
		wr := out.Writer()
		defer wr.Close()
		jb := jobs[task]
		me, other := r, s
		from := fromS
		if jb.side == 1 {
			me, other, from = s, r, fromR
		}
		var pairs int64
		for i := jb.lo; i < jb.hi; i++ {
			set := me.c.Set(i)
			pi := int(me.perm[i])
			var t int
			if jb.side == 0 {
				t = int(p.NeedR(pi))
			} else {
				t = int(p.NeedS(pi))
			}
			f := uint32(from[i])
			pairs += int64(other.c.Len() - int(f))
			if t > len(set) || t == 0 || int(f) >= other.c.Len() {
				continue
			}
			add := func(y uint32, v uint32) {
				a, b := pi, int(other.perm[y])
				if jb.side == 1 {
					a, b = b, a
				}
				if v >= p.Need(a, b) {
					wr.Add(a, b, v)
				}
			}
			plen := len(set) - t + 1
			if t == len(set) {
				l := other.x.list(set[0])
				pr.a = append(pr.a[:0], l[lowerBound(l, f):]...)
				for _, e := range set[1:] {
					if len(pr.a) == 0 {
						break
					}
					pr.b = intersect.Intersect(pr.b[:0], pr.a, other.x.list(e))
					pr.a, pr.b = pr.b, pr.a
				}
				for _, y := range pr.a {
					add(y, uint32(len(set)))
				}
				continue
			}
			pr.touched = pr.touched[:0]
			for _, e := range set[:plen] {
				l := other.x.list(e)
				for _, y := range l[lowerBound(l, f):] {
					if pr.cnt[y] == 0 {
						pr.touched = append(pr.touched, y)
					}
					pr.cnt[y]++
				}
			}
			rest := set[plen:]
			for _, y := range pr.touched {
				v := pr.cnt[y] + uint32(intersect.Count(rest, other.c.Set(int(y))))
				pr.cnt[y] = 0
				add(y, v)
			}
		}
		out.Progress(pairs)
		return out.Err()
	})
}
