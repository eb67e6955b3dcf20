//go:build !amd64 || purego

package simjoin

// walkPositional: see kernel.go.
func walkPositional(ent []entry, stop uint32, cnt []uint32, cands []cand, need, touched []uint32, aq, q uint32) (walked, added int) {
	return walkPositionalGeneric(ent, stop, cnt, cands, need, touched, aq, q)
}

// walkPairs: see kernel.go.
func walkPairs(ent []entry, stop uint32, pcnt []uint32, base uint32, need, touched []uint32, rest, first uint32) (walked, added int) {
	return walkPairsGeneric(ent, stop, pcnt, base, need, touched, rest, first)
}

// prefetchUnits does nothing: Go has no prefetch.
func prefetchUnits(ids []uint32, info []unitInfo, bits []uint64, words int) {}

// prefetchHeads does nothing: Go has no prefetch.
func prefetchHeads(elems []uint32, lists []span, ent []entry) {}

// filterCands: see kernel.go.
func filterCands(ids, cnt []uint32, cands []cand, info []unitInfo, bits []uint64, words int, need, pfx, idxPrefix, xr []uint32, a uint32, positional bool, xbits []uint64, out []survivor) int {
	return filterCandsGeneric(ids, cnt, cands, info, bits, words, need, pfx, idxPrefix, xr, a, positional, xbits, out)
}

// filterPairs: see kernel.go.
func filterPairs(ids, pcnt []uint32, base uint32, info []unitInfo, bits []uint64, words int, need []uint32, a uint32, exact bool, xbits []uint64, out []pairSurvivor) int {
	return filterPairsGeneric(ids, pcnt, base, info, bits, words, need, a, exact, xbits, out)
}
