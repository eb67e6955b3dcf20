package simjoin

import (
	"context"
	"fmt"
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

// Work is what the planner's sample of a filter predicts of its run, for
// an engine that verifies Candidates' batches on another device.
type Work struct {
	// Seconds is the CPU engine's estimate: filtering and verifying on
	// p.Threads cores.
	Seconds float64
	// Pairs is the number of pairs of records that the filter hands on
	// when every pair's overlap is wanted (a count hands on fewer).
	Pairs float64
	// Steps is the number of elements the CPU's verification of those
	// pairs reads: their remainders past the prefixes.
	Steps float64
	// Elements is the sum of both records' sizes over those pairs: what
	// merges of the whole records read.
	Elements float64
	// Probes is the number of probing records.
	Probes int
	// Memory is the CPU engine's estimate of its memory, which filtering
	// alone needs too.
	Memory int64
}

// CandidateWork predicts Candidates' run of the filter technique on p,
// from the sample the CPU engine's estimate takes (taken once per problem
// and filter).
func CandidateWork(p *Problem, technique string) (Work, error) {
	alg, err := filterAlgorithm(technique)
	if err != nil {
		return Work{}, err
	}
	est, err := cpuFilter{technique, alg}.Estimate(p)
	if err != nil {
		return Work{}, err
	}
	if alg == groupJoin {
		// As cpuFilter.Estimate: where records hardly group, PPJoin's
		// sample stands for GroupJoin's.
		groups, records := countGroups(p.R, problemBounds(p)), p.R.Len()
		if !p.Self {
			groups, records = groups+countGroups(p.S, problemBounds(p)), records+p.S.Len()
		}
		if groups*10 >= records*9 {
			alg = ppJoin
		}
	}
	w := work(p, alg)
	return Work{Seconds: est.Seconds, Pairs: w.merged, Steps: w.steps, Elements: w.lengths, Probes: p.S.Len(), Memory: est.Memory}, nil
}

// Candidates runs the filter of the named technique (allpairs, ppjoin,
// groupjoin or pairjoin) over p on the CPU, on p.Threads workers, and hands every pair
// of records it cannot decide without their elements to emit, in batches,
// from several goroutines at once (emit must be safe for that; a batch is
// only valid during the call). It is how an engine on another device
// plugs in: it verifies the batches there and reports the similar pairs
// through out's writers (out.Writer().Add(cand, probe, overlap)), while
// the pairs that the filter decides alone (when the caller counts) are
// reported through out here. Pairs of equal sets, in a problem that is not
// Distinct, are the plan's and never reach the engine. It returns the
// first error of emit, of out, or ctx's.
func Candidates(ctx context.Context, p *Problem, technique string, out *Output, emit func(*CandidateBatch) error) error {
	alg, err := filterAlgorithm(technique)
	if err != nil {
		return err
	}
	j := newJoin(p, out, alg)
	j.emit = emit
	err = j.run(ctx)
	if oerr := out.Err(); oerr != nil && err == nil {
		err = oerr
	}
	return err
}
