package simjoin

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// CandidateBatch is a batch of pairs of records to verify, in the layout of
// Bellas and Gounaris's GPU verification: each probing record with the run
// of its candidates. The records of Probes are records of Problem.S, those
// of Cands records of Problem.R (the same side in a self-join, where a
// probe never meets itself); the pair Probes[i], Cands[k] for k in
// [Starts[i], Starts[i+1]) is similar when its sets share at least Need[k]
// elements. Side.Set returns the sets to intersect.
type CandidateBatch struct {
	Probes []uint32
	Starts []uint32 // len(Probes)+1
	Cands  []uint32
	Need   []uint32
	// Left is the share of the filter's work not yet begun when the
	// batch was handed on, from 1 down to 0: near 0 the filters are
	// about to finish, and an engine sends on what it holds sooner.
	Left float64
}

// batchCands is the number of candidates a batch collects before it is
// handed over: enough to keep a device busy, little enough that filtering
// goes on meanwhile.
const batchCands = 1 << 16

// add appends the pair (probe x, candidate y) needing need common elements.
func (b *CandidateBatch) add(x, y, need uint32) {
	if n := len(b.Probes); n == 0 || b.Probes[n-1] != x {
		b.Probes = append(b.Probes, x)
		b.Starts = append(b.Starts, uint32(len(b.Cands)))
	}
	b.Cands = append(b.Cands, y)
	b.Need = append(b.Need, need)
	b.Starts[len(b.Starts)-1] = uint32(len(b.Cands))
}

// flush hands a nonempty batch to emit and empties it.
func (b *CandidateBatch) flush(emit func(*CandidateBatch) error) error {
	if len(b.Cands) == 0 {
		return nil
	}
	err := emit(b)
	b.Probes, b.Starts, b.Cands, b.Need = b.Probes[:0], b.Starts[:1], b.Cands[:0], b.Need[:0]
	return err
}

// filterAlgorithm returns the filter called technique.
func filterAlgorithm(technique string) (algorithm, error) {
	switch technique {
	case "allpairs":
		return allPairs, nil
	case "ppjoin":
		return ppJoin, nil
	case "groupjoin":
		return groupJoin, nil
	case "pairjoin":
		return pairJoin, nil
	}
	return 0, fmt.Errorf("simjoin: no filter %q (allpairs, ppjoin, groupjoin or pairjoin)", technique)
}

// Filter is a configuration of the filters for an engine that verifies
// Candidates' batches on another device.
type Filter struct {
	// Technique is the filter: allpairs, ppjoin, groupjoin or pairjoin.
	Technique string
	// NoBitmap leaves the bitmap filter out: every pair past Mann et
	// al.'s bound is handed on. Where the device verifies a pair for less
	// than the CPU's check of two bitmaps costs (the records' bitmaps are
	// read at random), the filters do less and the device more.
	NoBitmap bool
}

func (f Filter) String() string {
	if f.NoBitmap {
		return f.Technique + " without the bitmap filter"
	}
	return f.Technique
}

// Work is what the planner's sample of a filter predicts of its run, for
// an engine that verifies Candidates' batches on another device.
type Work struct {
	// Seconds is the CPU engine's estimate: filtering and verifying on
	// p.Threads cores.
	Seconds float64
	// Verified and Steps are the pairs that the CPU engine verifies and
	// the elements of their remainders past the prefixes that it reads:
	// what its verification costs, which a device saves.
	Verified, Steps float64
	// Pairs is the number of pairs of records that the filter hands on
	// (in a count; when every pair's overlap is wanted, it hands on the
	// pairs that the prefix count decides too).
	Pairs float64
	// Elements is the sum of both records' sizes over those pairs: what
	// merges of the whole records read.
	Elements float64
	// Unchecked is the number of bitmap checks that the filter leaves
	// out (Filter.NoBitmap): the pairs past the bound.
	Unchecked float64
	// BitmapWords is the width of the records' bitmaps in 64-bit words,
	// which the bitmap filter's checks read.
	BitmapWords int
	// Probes is the number of probing records.
	Probes int
	// Memory is the CPU engine's estimate of its memory, which filtering
	// alone needs too.
	Memory int64
}

// CandidateWork predicts Candidates' run of filter f on p, from the
// sample the CPU engine's estimate takes (taken once per problem and
// filter technique). GroupJoin's sample does not count the pairs past the
// bound: without its bitmap filter, it is predicted from PPJoin's; nor is
// PairJoin sampled where its pair index would not pay (pairEstimate), nor
// AllPairs (as for its CPU estimate, PPJoin's sample stands for it).
func CandidateWork(p *Problem, f Filter) (Work, error) {
	alg, err := filterAlgorithm(f.Technique)
	if err != nil {
		return Work{}, err
	}
	est, err := cpuFilter{f.Technique, alg}.Estimate(p)
	if err != nil {
		return Work{}, err
	}
	if alg == groupJoin {
		// As cpuFilter.Estimate: where records hardly group, PPJoin's
		// sample stands for GroupJoin's.
		groups, records := problemGroups(p)
		if groups*10 >= records*9 {
			alg = ppJoin
		} else if _, skip := groupJoinLeast(p, groups, records); skip {
			// Nor is GroupJoin's index built where the CPU's estimate
			// is a bound: its pairs are about PPJoin's, and its time is
			// the bound's.
			alg = ppJoin
		}
	}
	if alg == allPairs {
		// As cpuFilter.Estimate: PPJoin's sample stands for AllPairs',
		// which is not taken (AllPairs hands on at least PPJoin's pairs).
		alg = ppJoin
	}
	if alg == pairJoin {
		// As cpuFilter.Estimate: where PairJoin's pair index would not
		// pay, its estimate comes from PPJoin's sample, and so do the
		// pairs it hands on (it meets about PPJoin's candidates), so that
		// no estimate builds that index for nothing.
		if _, ok := pairEstimate(p); ok {
			alg = ppJoin
		}
	}
	w := work(p, alg)
	out := Work{Seconds: est.Seconds, Verified: w.merged, Steps: w.steps, Pairs: w.merged, Elements: w.lengths,
		Probes: p.S.Len(), Memory: est.Memory, BitmapWords: p.S.words}
	if f.NoBitmap {
		if alg == groupJoin {
			w = work(p, ppJoin)
		}
		out.Pairs, out.Elements, out.Unchecked = w.bounded, w.boundedLengths, w.bounded
	}
	return out, nil
}

// Candidates runs filter f over p on the CPU, on p.Threads workers, and
// hands every pair of records it cannot decide without their elements to
// emit, in batches, from several goroutines at once (emit must be safe for
// that; a batch is only valid during the call). It is how an engine on
// another device plugs in: it verifies the batches there and reports the
// similar pairs through out's writers (out.Writer().Add(cand, probe,
// overlap)), while the pairs that the filter decides alone (when the
// caller counts) are reported through out here. Pairs of equal sets, in a
// problem that is not Distinct, are the plan's and never reach the
// engine. It returns the first error of emit, of out, or ctx's.
func Candidates(ctx context.Context, p *Problem, f Filter, out *Output, emit func(*CandidateBatch) error) error {
	alg, err := filterAlgorithm(f.Technique)
	if err != nil {
		return err
	}
	j := newJoin(p, out, alg)
	j.emit = emit
	j.noBitmap = f.NoBitmap
	err = j.run(ctx)
	if oerr := out.Err(); oerr != nil && err == nil {
		err = oerr
	}
	return err
}

// VerifyBatch verifies the pairs of b on the CPU, on up to threads
// goroutines, and reports the similar ones through out's writers, with
// their overlaps, as an engine on another device reports those its device
// finds: for the last pairs of a run, which the CPU verifies sooner than a
// round trip to the device. It decides each pair by its Need, in integer
// arithmetic, as the device does.
func VerifyBatch(p *Problem, b *CandidateBatch, out *Output, threads int) {
	n := len(b.Probes)
	if n == 0 {
		return
	}
	exact := !out.CountOnly()
	// Runs of probes of about equal candidates.
	parts := max(1, min(threads, len(b.Cands)/256, n))
	var wg sync.WaitGroup
	lo := 0
	for t := range parts {
		hi := n
		if t+1 < parts {
			want := uint32(len(b.Cands) * (t + 1) / parts)
			hi = max(lo, sort.Search(n, func(i int) bool { return b.Starts[i+1] >= want }))
		}
		if hi <= lo {
			continue
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			w := out.Writer()
			defer w.Close()
			for i := lo; i < hi; i++ {
				x := b.Probes[i]
				xs := p.S.Set(int(x))
				for k := b.Starts[i]; k < b.Starts[i+1]; k++ {
					y := b.Cands[k]
					if c, ok := verifySets(xs, p.R.Set(int(y)), b.Need[k], exact); ok {
						w.Add(int(y), int(x), c)
					}
				}
			}
		}(lo, hi)
		lo = hi
	}
	wg.Wait()
}
