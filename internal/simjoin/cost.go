package simjoin

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/engine"
)

// workStats is what a sample of a filter's probes predicts of its run.
type workStats struct {
	alg     algorithm
	units   int     // probing units (records, or groups)
	records int     // probing records
	indexed int     // index entries
	entries float64 // list entries the probes walk
	heads   float64 // element lists they walk (not counted for GroupJoin)
	// PairJoin's entries walked in pair lists, its lookups there (first
	// elements and pairs), and its candidates met there (entries and
	// cands count the element lists').
	pairEntries, lookups, pairCands float64
	pairRange                       float64 // PPJoin's entries to records PairJoin indexes by pairs
	cands                           float64 // candidate units: distinct, and kept by the positional filter
	pairs                           float64 // pairs of records past the bound (GroupJoin)
	merged                          float64 // those that their bitmaps do not reject
	bounded, boundedLengths         float64 // pairs past the bound, and their records' elements (not GroupJoin)
	steps                           float64 // the elements of their remainders
	lengths                         float64 // the elements of both records of those pairs (what a whole merge reads)
	sampled                         int     // probes sampled
	elements                        int64   // elements of the probing side's records
}

// work samples the filter alg on p, once per problem and algorithm.
func work(p *Problem, alg algorithm) *workStats {
	return p.Memo(fmt.Sprintf("simjoin.work.%d", alg), func() any { return sample(p, alg) }).(*workStats)
}

// sampleStride is how many probes the sample skips: it runs about 512 of
// them, spread over the sizes.
func sampleStride(n int) int { return max(1, n/512) }

// sample runs the filter's candidate generation on every sampleStride-th
// probe, counting what the run would do, and scales the counts up.
func sample(p *Problem, alg algorithm) *workStats {
	out := &Output{p: p, countOnly: true}
	j := newJoin(p, out, alg)
	st := &workStats{alg: alg, units: j.prb.n, records: j.prb.side.Len(), indexed: len(j.x.ent), elements: int64(len(j.prb.side.Tok))}
	if j.prb.n == 0 {
		return st
	}
	stride := sampleStride(j.prb.n)
	if alg == ppJoin {
		if pb := pairBoundsOf(p); pb.lo <= pb.hi {
			j.countLo, j.countHi = p.R.SizeStart[pb.lo], p.R.SizeStart[pb.hi+1]
		}
	}
	// The sampled probes, split over up to 8 cores (each with a prober
	// that the run then reuses): every worker takes every workers-th of
	// them.
	sampled := (j.prb.n - stride/2 + stride - 1) / stride
	workers := max(1, min(p.Threads, 8, sampled/32))
	pcs := make([]probeCounts, workers)
	sts := make([]workStats, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := j.getProber()
			defer j.putProber(pr)
			first, step := stride/2+i*stride, workers*stride
			if alg == groupJoin {
				for u := first; u < j.prb.n; u += step {
					j.sampleProbe(pr, u, &sts[i])
					sts[i].sampled++
				}
				return
			}
			// The probes themselves, counting their work.
			pr.count = &pcs[i]
			defer func() { pr.count = nil }()
			w := out.Writer()
			defer w.Close()
			for u := first; u < j.prb.n; u += step {
				j.probe(pr, u, w)
				sts[i].sampled++
			}
		}()
	}
	wg.Wait()
	for i := range workers {
		pc, s := &pcs[i], &sts[i]
		st.sampled += s.sampled
		st.entries += float64(pc.entries) + s.entries
		st.heads += float64(pc.heads)
		st.cands += float64(pc.cands) + s.cands
		st.merged += float64(pc.merged) + s.merged
		st.steps += float64(pc.steps) + s.steps
		st.lengths += float64(pc.lengths) + s.lengths
		st.pairs += s.pairs
		st.pairEntries += float64(pc.pairEntries)
		st.lookups += float64(pc.lookups)
		st.pairCands += float64(pc.pairCands)
		st.bounded += float64(pc.bounded)
		st.boundedLengths += float64(pc.boundedLengths)
		st.pairRange += float64(pc.pairRange)
	}
	scale := float64(j.prb.n) / float64(st.sampled)
	st.lookups *= scale
	st.heads *= scale
	st.pairRange *= scale
	st.pairEntries *= scale
	st.pairCands *= scale
	st.entries *= scale
	st.cands *= scale
	st.pairs *= scale
	st.merged *= scale
	st.steps *= scale
	st.lengths *= scale
	st.bounded *= scale
	st.boundedLengths *= scale
	return st
}

// sampleProbe is probe counting its work instead of verifying: the list
// entries it walks, its candidates, and the pairs of records to merge.
func (j *join) sampleProbe(pr *prober, u int, st *workStats) {
	a := j.prb.size[u]
	p := j.b.probe[a]
	if p == 0 {
		return
	}
	xr := j.prb.record(u)
	j.setNeed(pr, a)
	members := func(us *units, v int) float64 {
		lo, hi := us.records(v)
		return float64(hi - lo)
	}
	if j.p.Self && j.prb.first != nil {
		m := members(j.prb, u)
		st.pairs += m * (m - 1) / 2
		st.merged += m * (m - 1) / 2
		st.steps += m * (m - 1) / 2 * float64(a-p)
		st.lengths += m * (m - 1) / 2 * float64(2*a)
	}
	minSize := j.b.minSize[a]
	if minSize > j.p.R.MaxSize {
		return
	}
	lo := j.idx.sizeStart[minSize]
	end := uint32(u)
	if !j.p.Self {
		end = j.idx.sizeStart[min(j.b.maxSize[a], j.p.R.MaxSize)+1]
	}
	if lo >= end {
		return
	}
	x := j.x
	touched := pr.touched[:0]
	for q, e := range xr[:p] {
		list := x.ent[x.start[e]:x.start[e+1]]
		k, _ := slices.BinarySearchFunc(list, lo, func(en entry, lo uint32) int { return cmp.Compare(en.id, lo) })
		stop := min(end, pr.stop[q])
		for ; k < len(list) && list[k].id < stop; k++ {
			st.entries++
			y := list[k].id
			c := pr.cnt[y]
			if c&pruned != 0 {
				continue
			}
			jy := list[k].pos
			if j.positional {
				b := list[k].size
				if c+min(a-uint32(q), b-jy) < pr.need[b] {
					if c != 0 {
						pr.cnt[y] = c | pruned
					}
					continue
				}
			}
			if c == 0 {
				touched = append(touched, y)
			}
			pr.cnt[y] = c + 1
			pr.cand[y] = cand{uint32(q), jy}
		}
	}
	pr.touched = touched

	for _, y := range touched {
		c := pr.cnt[y]
		cd := pr.cand[y]
		pr.cnt[y] = 0
		if c&pruned != 0 {
			continue
		}
		st.cands++
		b := j.idx.size[y]
		yr := j.idx.record(int(y))
		ip := j.idxPrefix[b]
		var xs, ys uint32
		pb := pr.pfx[b]
		if xr[pb-1] > yr[ip-1] {
			xs, ys = cd.q+1, ip
		} else {
			xs, ys = pb, cd.j+1
			if !j.positional {
				ys = c
			}
		}
		if c+min(a-xs, b-ys) < pr.need[b] {
			continue
		}
		// The pairs of records, and those that their bitmaps do not
		// reject: these are merged.
		xlo, xhi := j.prb.records(u)
		ylo, yhi := j.idx.records(int(y))
		st.pairs += float64((xhi - xlo) * (yhi - ylo))
		for rx := xlo; rx < xhi; rx++ {
			bx := j.prb.side.bitmap(rx)
			for ry := ylo; ry < yhi; ry++ {
				if bitBound(bx, j.idx.side.bitmap(ry), a, b) >= pr.need[b] {
					st.merged++
					st.steps += float64(b - ys)
					st.lengths += float64(a + b)
				}
			}
		}
	}
}

// Costs in nanoseconds on one core, set by TestCalibrate's runs on the
// development machine (eight real data sets, thresholds 0.5, 0.7 and 0.9,
// every algorithm). The record filters (AllPairs, PPJoin, PairJoin) count
// their work on the sampled probes themselves: per element list entry
// walked, per list walked, per pair list entry, per pair looked up, per
// candidate, per pair verified and per element of its remainder; plus the
// fixed costs of each worker, per unit and per element of the universe.
// These were searched for estimates close to the measured times (off by
// 17% on average) and for the choices that cost least (within 1% of the
// best algorithm's time summed over the runs). GroupJoin's, from its own
// sample: per list entry walked over groups, per candidate, per pair of
// records that its pairs of groups expand to, and its fixed costs.
const (
	costEntry     = 4
	costHead      = 22
	costPairEntry = 7
	costLookup    = 26
	costCand      = 4
	costMerge     = 28
	costStep      = 1
	costUnit      = 15
	costUniverse  = 4

	costGroupEntry    = 18
	costGroupCand     = 2
	costGroupPair     = 4
	costGroupUnit     = 51
	costGroupUniverse = 26
	costGroupElem     = 3 // grouping, per element, when GroupJoin is estimated from PPJoin's sample
)

// seconds predicts the run's time on p.Threads cores.
func (w *workStats) seconds(p *Problem) float64 {
	par := w.entries*costEntry + w.heads*costHead + w.pairEntries*costPairEntry + w.lookups*costLookup +
		(w.cands+w.pairCands)*costCand + w.merged*costMerge + w.steps*costStep
	perWorker := float64(w.units)*costUnit + float64(p.Universe)*costUniverse
	if w.alg == groupJoin {
		par = w.entries*costGroupEntry + w.cands*costGroupCand + w.pairs*costGroupPair
		perWorker = float64(w.units)*costGroupUnit + float64(p.Universe)*costGroupUniverse
	}
	return (par/float64(max(1, p.Threads)) + perWorker) * 1e-9
}

// memory predicts the bytes the run allocates: the index and each
// worker's counters and cursors.
func (w *workStats) memory(p *Problem) int64 {
	idx := int64(w.indexed)*12 + 4*int64(p.Universe)
	perWorker := 12*int64(p.R.Len()) + 16*int64(p.Universe)
	units := 16 * int64(p.R.Len()+p.S.Len())
	if w.alg == pairJoin {
		pd := pairData(p)
		idx += 12*int64(len(pd.px.ent)) + 8*int64(pd.px.lists()) + 4*int64(p.Universe)
		perWorker += 8*int64(pd.px.lists()) + 4*int64(len(pd.f.idx.info))
	}
	return idx + units + int64(p.Threads)*perWorker
}

// detail describes the sample for Explain.
func (w *workStats) detail() string {
	if w.alg == pairJoin {
		return fmt.Sprintf("%.3g list entries, %.3g of pair lists, %.3g lookups, %.3g candidates, %.3g pairs to merge",
			w.entries+w.pairEntries, w.pairEntries, w.lookups, w.cands+w.pairCands, w.merged)
	}
	s := fmt.Sprintf("%.3g list entries, %.3g candidates, %.3g pairs to merge", w.entries, w.cands, w.merged)
	if w.alg == groupJoin {
		s += fmt.Sprintf(" (%d groups of %d records)", w.units, w.records)
	}
	return s
}

// pairEstimate estimates PairJoin without building its pair index where
// the pairs its probes would look up cost more than twice the element
// list entries they spare (those PPJoin's sample walks to the records
// that PairJoin indexes by pairs): there its pairs cannot pay for
// themselves, and the index would be built for nothing (gcide, retail).
func pairEstimate(p *Problem) (engine.Estimate, bool) {
	w := work(p, ppJoin)
	pb := pairBoundsOf(p)
	// The lookups: each first element of a pair, then each pair.
	n := p.S.Len()
	var lookups, sampled float64
	for x, stride := sampleStride(n)/2, sampleStride(n); x < n; x += stride {
		if q := float64(pb.probe2[p.S.Size(x)]); q >= 2 {
			lookups += q - 1 + q*(q-1)/2
		}
		sampled++
	}
	if sampled == 0 {
		return engine.Estimate{}, false
	}
	lookups *= float64(n) / sampled
	if lookups*costLookup <= 2*w.pairRange*costEntry {
		return engine.Estimate{}, false
	}
	extra := (lookups*costLookup - w.pairRange*costEntry) / float64(max(1, p.Threads)) * 1e-9
	return engine.Estimate{Seconds: w.seconds(p) + extra, Memory: w.memory(p),
		Detail: fmt.Sprintf("PPJoin's work, and %.3g pair lookups for %.3g list entries spared (not sampled)", lookups, w.pairRange)}, true
}
