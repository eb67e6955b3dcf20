package sets

import (
	"cmp"
	"slices"
)

// Pair is two sets and the size of their intersection: the result type of
// every pair workload. In all-pairs counts and containment joins I and J
// are the ids (positions) of two sets, I in the first collection and J in
// the second (or I < J in the same collection), and Count is their
// overlap. In frequent pair mining I < J are two items and Count is their
// support: the size of the intersection of their transaction lists.
type Pair struct {
	// I and J are the pair's ids: two sets, or two items.
	I, J uint32
	// Count is the pair's overlap, or its support.
	Count uint32
}

// ComparePairs orders pairs by I, then J.
func ComparePairs(a, b Pair) int {
	if c := cmp.Compare(a.I, b.I); c != 0 {
		return c
	}
	return cmp.Compare(a.J, b.J)
}

// SortPairs sorts pairs by I, then J, in linear time plus small sorts when
// the I are dense: a counting sort on I, then each run of equal I sorted
// by J.
func SortPairs(ps []Pair) {
	if len(ps) < 1<<12 {
		slices.SortFunc(ps, ComparePairs)
		return
	}
	var maxI uint32
	for _, p := range ps {
		maxI = max(maxI, p.I)
	}
	if int64(maxI) > 4*int64(len(ps)) {
		slices.SortFunc(ps, ComparePairs)
		return
	}
	start := make([]int, int(maxI)+2)
	for _, p := range ps {
		start[p.I+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	sorted := make([]Pair, len(ps))
	fill := slices.Clone(start)
	for _, p := range ps {
		sorted[fill[p.I]] = p
		fill[p.I]++
	}
	for i := 0; i+1 < len(start); i++ {
		run := sorted[start[i]:start[i+1]]
		if !slices.IsSortedFunc(run, ComparePairs) {
			slices.SortFunc(run, ComparePairs)
		}
	}
	copy(ps, sorted)
}
