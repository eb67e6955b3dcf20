package simjoin

// walkPositional walks one prefix list of a probe with the positional
// filter: for each entry of ent, in order, up to the first whose unit is
// stop or later, it counts the unit as a candidate of the probe (cnt, with
// the pruned bit; cands: where they met) if their common prefix elements
// so far, this one included, plus the most that can follow on the shorter
// side (aq = a − q on the probe's, size − pos on the unit's) reach need by
// the unit's size, and prunes it otherwise (a unit not counted before
// stays uncounted). Each unit counted for the first time is appended to
// touched. It returns the entries walked and the units appended.
//
// Without branches whose outcome the data decide: every entry writes its
// count, its cand and the next slot of touched, which moves on only for a
// new candidate. cnt and cands need room for every unit in ent, need for
// every size in ent, and touched for every new candidate and one more.
// walkPositional is this file's Go loop, walkPositionalGeneric, or on
// amd64 a kernel in assembly (kernel_amd64.go).

// walkPositionalGeneric is walkPositional's Go loop.
func walkPositionalGeneric(ent []entry, stop uint32, cnt []uint32, cands []cand, need, touched []uint32, aq, q uint32) (walked, added int) {
	for k := range ent {
		y := ent[k].id
		if y >= stop {
			return k, added
		}
		c := cnt[y]
		jy, b := ent[k].pos, ent[k].size
		// A candidate that passes counts one more (and is new if its
		// count was 0), one that fails is pruned (if counted before; else
		// it stays 0). Where it was met is kept either way: only a
		// candidate counted and not pruned reads it.
		ok := b2u(c+min(aq, b-jy) >= need[b])
		nz := b2u(c != 0)
		cnt[y] = ok*(c+1) + (1-ok)*nz*(c|pruned)
		cands[y] = cand{q, jy}
		touched[added] = y
		added += int(ok &^ nz)
	}
	return len(ent), added
}

// walkPairs walks one of PairJoin's pair lists for a probe whose pair
// ends at its position jx: for each entry of ent, in order, up to the
// first whose record is stop or later, a record met before by another
// pair (pcnt[y−base] != 0) counts one pair more (1<<16); one not met
// before becomes a candidate (pcnt = first | its position of the pair's
// second element, appended to touched) if two common elements plus the
// most that can follow on the shorter side (rest on the probe's) reach
// need by its size. It returns the entries walked and the records
// appended. Like walkPositional, without branches whose outcome the data
// decide; touched needs room for every new candidate and one more.
// walkPairs is walkPairsGeneric or, on amd64, a kernel in assembly.

// walkPairsGeneric is walkPairs' Go loop.
func walkPairsGeneric(ent []entry, stop uint32, pcnt []uint32, base uint32, need, touched []uint32, rest, first uint32) (walked, added int) {
	for k := range ent {
		y := ent[k].id
		if y >= stop {
			return k, added
		}
		// pos = jy | size<<8 in a pair list.
		jb := ent[k].pos
		jy, b := jb&0xff, jb>>8
		pass := b2u(2+min(rest, b-1-jy) >= need[b])
		c := pcnt[y-base]
		nz := b2u(c != 0)
		pcnt[y-base] = nz*(c+1<<16) + (1-nz)*pass*(first|jy)
		touched[added] = y
		added += int(pass &^ nz)
	}
	return len(ent), added
}

// filterCands applies the bounds to a probe's candidates ids, in order
// (see probe): it clears each one's count, drops it if pruned, if its
// count and the most that can follow (from where the unknown common
// elements lie, as unknown says) cannot reach need by its size, or if
// the bitmaps of the probe (xbits) and of the unit (bits, words each)
// say as much, and writes the others to out, returning their number.
// filterCands is filterCandsGeneric or, on amd64 with POPCNT, a kernel
// in assembly per width of bitmap.

// filterCandsGeneric is filterCands' Go loop.
func filterCandsGeneric(ids, cnt []uint32, cands []cand, info []unitInfo, bits []uint64, words int, need, pfx, idxPrefix, xr []uint32, a uint32, positional bool, xbits []uint64, out []survivor) int {
	m := 0
	for _, y := range ids {
		c := cnt[y]
		cnt[y] = 0
		if c&pruned != 0 {
			continue
		}
		cd, yi := cands[y], info[y]
		b := yi.size
		nd := need[b]
		xs, ys := unknown(xr, pfx, idxPrefix, positional, cd, yi, c)
		if c+min(a-xs, b-ys) < nd || bitBound(xbits, bits[int(y)*words:int(y+1)*words], a, b) < nd {
			continue
		}
		out[m] = survivor{y, c, xs, ys}
		m++
	}
	return m
}

// pairSurvivor is a PairJoin candidate past the bounds (filterPairs): its
// unit y and count c (hits<<16 | jx<<8 | jy); direct is 1 when the pairs
// met already show it similar (outside exact runs), and it needs no
// verification.
type pairSurvivor struct{ y, c, direct, _ uint32 }

// filterPairs applies the bounds to a probe's PairJoin candidates ids
// (see verifyPairs): it clears each one's count and writes to out those
// that the pairs met show similar (direct, unless exact) or whose bitmap
// bound with the probe's (xbits; a is the probe's size) reaches need by
// their size, returning their number. filterPairs is filterPairsGeneric
// or, on amd64 with POPCNT, a kernel in assembly per width of bitmap.

// filterPairsGeneric is filterPairs' Go loop.
func filterPairsGeneric(ids, pcnt []uint32, base uint32, info []unitInfo, bits []uint64, words int, need []uint32, a uint32, exact bool, xbits []uint64, out []pairSurvivor) int {
	m := 0
	for _, y := range ids {
		c := pcnt[y-base]
		pcnt[y-base] = 0
		b := info[y].size
		nd := need[b]
		switch {
		case !exact && pairsShared(c>>16) >= nd:
			out[m] = pairSurvivor{y: y, c: c, direct: 1}
		case bitBound(xbits, bits[int(y)*words:int(y+1)*words], a, b) >= nd:
			out[m] = pairSurvivor{y: y, c: c}
		default:
			continue
		}
		m++
	}
	return m
}
