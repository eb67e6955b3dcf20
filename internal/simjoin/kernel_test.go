package simjoin

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// walkCase is one list walk: its entries and the probe's state before.
type walkCase struct {
	ent          []entry
	stop, aq, q  uint32
	cnt, need    []uint32
	units, sizes int
}

// randomWalk returns a walk over units [0, units) of sizes below sizes:
// increasing ids as the index's lists hold them (or any order, which the
// kernel must not care about), counts of every kind (0, counted, pruned,
// near 2^31) and any stop, up to past the units.
func randomWalk(rng *rand.Rand) walkCase {
	w := walkCase{units: 1 + rng.IntN(300), sizes: 2 + rng.IntN(60)}
	n := rng.IntN(w.units + 1)
	ids := rng.Perm(w.units)[:n]
	if rng.IntN(4) != 0 {
		slices.Sort(ids)
	}
	for _, id := range ids {
		b := uint32(1 + rng.IntN(w.sizes-1))
		w.ent = append(w.ent, entry{uint32(id), uint32(rng.IntN(int(b))), b})
	}
	w.cnt = make([]uint32, w.units)
	for i := range w.cnt {
		switch rng.IntN(6) {
		case 0, 1:
		case 2:
			w.cnt[i] = pruned | uint32(rng.IntN(5))
		case 3:
			w.cnt[i] = pruned - 1 - uint32(rng.IntN(3))
		default:
			w.cnt[i] = uint32(1 + rng.IntN(8))
		}
	}
	w.need = make([]uint32, w.sizes)
	for i := range w.need {
		w.need[i] = uint32(rng.IntN(i + 2))
	}
	w.stop = uint32(rng.IntN(w.units + 3))
	if rng.IntN(3) == 0 {
		w.stop = ^uint32(0)
	}
	w.aq, w.q = uint32(rng.IntN(w.sizes)), uint32(rng.IntN(1<<20))
	return w
}

// run walks w with f on fresh copies of its state and returns all of it.
func (w walkCase) run(f func([]entry, uint32, []uint32, []cand, []uint32, []uint32, uint32, uint32) (int, int)) (walked, added int, cnt []uint32, cands []cand, touched []uint32) {
	cnt = slices.Clone(w.cnt)
	cands = make([]cand, w.units)
	touched = make([]uint32, w.units+1)
	for i := range touched {
		touched[i] = 1<<32 - 1
	}
	walked, added = f(w.ent, w.stop, cnt, cands, w.need, touched, w.aq, w.q)
	return
}

// TestWalkPositional checks the walk in use (the kernel where there is
// one) against the Go loop on random walks, and the Go loop against the
// filter's rule entry by entry.
func TestWalkPositional(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for i := range 20000 {
		w := randomWalk(rng)
		compareWalks(t, i, w)
	}
}

func compareWalks(t *testing.T, i int, w walkCase) {
	t.Helper()
	gw, ga, gc, gcd, gt := w.run(walkPositional)
	ww, wa, wc, wcd, wt := w.run(walkPositionalGeneric)
	if gw != ww || ga != wa || !slices.Equal(gc, wc) || !slices.Equal(gcd, wcd) || !slices.Equal(gt, wt) {
		t.Fatalf("case %d %+v: walked %d, added %d; the Go loop %d, %d\ncnt %v\nwant %v\ncands %v\nwant %v\ntouched %v\nwant %v",
			i, w, gw, ga, ww, wa, gc, wc, gcd, wcd, gt, wt)
	}
	// The rule, entry by entry.
	want := slices.Clone(w.cnt)
	var fresh []uint32
	k := 0
	for ; k < len(w.ent) && w.ent[k].id < w.stop; k++ {
		e := w.ent[k]
		c := want[e.id]
		switch {
		case c+min(w.aq, e.size-e.pos) >= w.need[e.size]:
			if c == 0 {
				fresh = append(fresh, e.id)
			}
			want[e.id] = c + 1
		case c != 0:
			want[e.id] = c | pruned
		}
	}
	if ww != k || !slices.Equal(wc, want) || !slices.Equal(wt[:wa], fresh) {
		t.Fatalf("case %d %+v: the Go loop walked %d, counts %v, new %v; want %d, %v, %v", i, w, ww, wc, wt[:wa], k, want, fresh)
	}
}

// FuzzWalkPositional: the kernel and the Go loop agree on any walk.
func FuzzWalkPositional(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		compareWalks(t, 0, randomWalk(rand.New(rand.NewPCG(a, b))))
	})
}

// pairWalk is one walk of a pair list.
type pairWalk struct {
	ent                     []entry
	stop, base, rest, first uint32
	pcnt, need              []uint32
}

// randomPairWalk returns a walk over records [base, base+len(pcnt)) of
// sizes below 256, with counts of records met before or not.
func randomPairWalk(rng *rand.Rand) pairWalk {
	n := 1 + rng.IntN(300)
	w := pairWalk{base: uint32(rng.IntN(1000)), pcnt: make([]uint32, n), need: make([]uint32, 256)}
	ids := rng.Perm(n)[:rng.IntN(n+1)]
	if rng.IntN(4) != 0 {
		slices.Sort(ids)
	}
	for _, id := range ids {
		b := uint32(2 + rng.IntN(254))
		jy := uint32(1 + rng.IntN(int(b)-1))
		w.ent = append(w.ent, entry{w.base + uint32(id), jy | b<<8, 0})
	}
	for i := range w.pcnt {
		if rng.IntN(3) == 0 {
			w.pcnt[i] = uint32(1+rng.IntN(9))<<16 | uint32(rng.IntN(1<<16))
		}
	}
	for i := range w.need {
		w.need[i] = uint32(2 + rng.IntN(i/2+2))
	}
	w.stop = w.base + uint32(rng.IntN(n+3))
	if rng.IntN(4) == 0 {
		w.stop = uint32(rng.IntN(int(w.base) + 1)) // at or before the first record
	}
	jx := uint32(1 + rng.IntN(254))
	w.rest, w.first = uint32(rng.IntN(256)), jx<<8|1<<16
	return w
}

func (w pairWalk) run(f func([]entry, uint32, []uint32, uint32, []uint32, []uint32, uint32, uint32) (int, int)) (walked, added int, pcnt, touched []uint32) {
	pcnt = slices.Clone(w.pcnt)
	touched = make([]uint32, len(w.pcnt)+1)
	for i := range touched {
		touched[i] = 1<<32 - 1
	}
	walked, added = f(w.ent, w.stop, pcnt, w.base, w.need, touched, w.rest, w.first)
	return
}

// TestWalkPairs checks the pair walk in use against the Go loop on random
// walks, and the Go loop against PairJoin's rule.
func TestWalkPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for i := range 20000 {
		comparePairWalks(t, i, randomPairWalk(rng))
	}
}

func comparePairWalks(t *testing.T, i int, w pairWalk) {
	t.Helper()
	gw, ga, gc, gt := w.run(walkPairs)
	ww, wa, wc, wt := w.run(walkPairsGeneric)
	if gw != ww || ga != wa || !slices.Equal(gc, wc) || !slices.Equal(gt, wt) {
		t.Fatalf("case %d %+v: walked %d, added %d; the Go loop %d, %d\npcnt %v\nwant %v\ntouched %v\nwant %v", i, w, gw, ga, ww, wa, gc, wc, gt, wt)
	}
	want := slices.Clone(w.pcnt)
	var fresh []uint32
	k := 0
	for ; k < len(w.ent) && w.ent[k].id < w.stop; k++ {
		e := w.ent[k]
		jy, b := e.pos&0xff, e.pos>>8
		c := &want[e.id-w.base]
		switch {
		case *c != 0:
			*c += 1 << 16
		case 2+min(w.rest, b-1-jy) >= w.need[b]:
			*c = w.first | jy
			fresh = append(fresh, e.id)
		}
	}
	if ww != k || !slices.Equal(wc, want) || !slices.Equal(wt[:wa], fresh) {
		t.Fatalf("case %d %+v: the Go loop walked %d, counts %v, new %v; want %d, %v, %v", i, w, ww, wc, wt[:wa], k, want, fresh)
	}
}

// FuzzWalkPairs: the kernel and the Go loop agree on any pair walk.
func FuzzWalkPairs(f *testing.F) {
	f.Add(uint64(3), uint64(4))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		comparePairWalks(t, 0, randomPairWalk(rand.New(rand.NewPCG(a, b))))
	})
}

// filterCase is a probe's candidates before the bounds.
type filterCase struct {
	ids, cnt             []uint32
	cands                []cand
	info                 []unitInfo
	bits, xbits          []uint64
	words                int
	need, pfx, idxPrefix []uint32
	xr                   []uint32
	a                    uint32
	positional           bool
}

func randomFilter(rng *rand.Rand) filterCase {
	units := 1 + rng.IntN(200)
	f := filterCase{words: []int{1, 2, 4, 8}[rng.IntN(4)], a: uint32(1 + rng.IntN(40)), positional: rng.IntN(2) == 0}
	sizes := int(f.a) + 1 + rng.IntN(40)
	f.xr = make([]uint32, f.a)
	for i := range f.xr {
		f.xr[i] = uint32(rng.IntN(100))
	}
	f.need, f.pfx, f.idxPrefix = make([]uint32, sizes), make([]uint32, sizes), make([]uint32, sizes)
	for b := range sizes {
		f.need[b] = uint32(rng.IntN(b/2 + 2))
		f.pfx[b] = uint32(1 + rng.IntN(int(f.a)))
		f.idxPrefix[b] = uint32(rng.IntN(b + 1))
	}
	f.cnt, f.cands, f.info = make([]uint32, units), make([]cand, units), make([]unitInfo, units)
	f.bits = make([]uint64, units*f.words)
	for y := range units {
		b := uint32(1 + rng.IntN(sizes-1))
		f.info[y] = unitInfo{uint32(rng.IntN(1000)), b, uint32(rng.IntN(100))}
		f.cands[y] = cand{uint32(rng.IntN(int(f.a))), uint32(rng.IntN(int(b)))}
		f.cnt[y] = uint32(rng.IntN(int(b) + 1))
		if rng.IntN(5) == 0 {
			f.cnt[y] |= pruned
		}
		for i := range f.words {
			f.bits[y*f.words+i] = rng.Uint64() & rng.Uint64()
		}
	}
	f.xbits = make([]uint64, f.words)
	for i := range f.xbits {
		f.xbits[i] = rng.Uint64() & rng.Uint64()
	}
	for _, y := range rng.Perm(units)[:rng.IntN(units+1)] {
		f.ids = append(f.ids, uint32(y))
	}
	return f
}

func (f filterCase) run(fn func(ids, cnt []uint32, cands []cand, info []unitInfo, bits []uint64, words int, need, pfx, idxPrefix, xr []uint32, a uint32, positional bool, xbits []uint64, out []survivor) int) ([]survivor, []uint32) {
	cnt := slices.Clone(f.cnt)
	out := make([]survivor, len(f.ids))
	m := fn(f.ids, cnt, f.cands, f.info, f.bits, f.words, f.need, f.pfx, f.idxPrefix, f.xr, f.a, f.positional, f.xbits, out)
	return out[:m], cnt
}

// TestFilterCands checks the filter in use (the kernels where there are)
// against the Go loop, and the Go loop against probe's rules.
func TestFilterCands(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for i := range 20000 {
		compareFilters(t, i, randomFilter(rng))
	}
}

func compareFilters(t *testing.T, i int, f filterCase) {
	t.Helper()
	got, gc := f.run(filterCands)
	want, wc := f.run(filterCandsGeneric)
	if !slices.Equal(got, want) || !slices.Equal(gc, wc) {
		t.Fatalf("case %d (%d words, positional %v): got %v\nwant %v", i, f.words, f.positional, got, want)
	}
	var rule []survivor
	for _, y := range f.ids {
		c := f.cnt[y]
		if c&pruned != 0 {
			continue
		}
		yi := f.info[y]
		b := yi.size
		xs, ys := f.pfx[b], c
		if f.positional {
			ys = f.cands[y].j + 1
		}
		if f.xr[f.pfx[b]-1] > yi.last {
			xs, ys = f.cands[y].q+1, f.idxPrefix[b]
		}
		d := 0
		for w := range f.words {
			d += bits.OnesCount64(f.xbits[w] ^ f.bits[int(y)*f.words+w])
		}
		if c+min(f.a-xs, b-ys) >= f.need[b] && (f.a+b-uint32(d))/2 >= f.need[b] {
			rule = append(rule, survivor{y, c, xs, ys})
		}
	}
	if !slices.Equal(want, rule) {
		t.Fatalf("case %d: the Go loop %v; the rules %v", i, want, rule)
	}
	for _, y := range f.ids {
		if wc[y] != 0 {
			t.Fatalf("case %d: the count of candidate %d is left at %d", i, y, wc[y])
		}
	}
}

// FuzzFilterCands: the kernels and the Go loop agree on any candidates.
func FuzzFilterCands(f *testing.F) {
	f.Add(uint64(5), uint64(6))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		compareFilters(t, 0, randomFilter(rand.New(rand.NewPCG(a, b))))
	})
}

// pairFilterCase is a probe's PairJoin candidates before the bounds.
type pairFilterCase struct {
	ids, pcnt, need []uint32
	base, a         uint32
	exact           bool
	info            []unitInfo
	bits, xbits     []uint64
	words           int
}

func randomPairFilter(rng *rand.Rand) pairFilterCase {
	n := 1 + rng.IntN(200)
	f := pairFilterCase{base: uint32(rng.IntN(50)), a: uint32(2 + rng.IntN(40)), exact: rng.IntN(4) == 0, words: []int{1, 2, 4, 8}[rng.IntN(4)]}
	units := int(f.base) + n
	f.info = make([]unitInfo, units)
	f.bits = make([]uint64, units*f.words)
	f.need = make([]uint32, 256)
	for b := range f.need {
		f.need[b] = uint32(rng.IntN(b/2 + 3))
	}
	f.pcnt = make([]uint32, n)
	for i := range n {
		y := int(f.base) + i
		b := uint32(2 + rng.IntN(254))
		f.info[y] = unitInfo{0, b, 0}
		f.pcnt[i] = uint32(1+rng.IntN(40))<<16 | uint32(rng.IntN(1<<16))
		for w := range f.words {
			f.bits[y*f.words+w] = rng.Uint64() & rng.Uint64()
		}
	}
	f.xbits = make([]uint64, f.words)
	for w := range f.xbits {
		f.xbits[w] = rng.Uint64() & rng.Uint64()
	}
	for _, i := range rng.Perm(n)[:rng.IntN(n+1)] {
		f.ids = append(f.ids, f.base+uint32(i))
	}
	return f
}

func (f pairFilterCase) run(fn func(ids, pcnt []uint32, base uint32, info []unitInfo, bits []uint64, words int, need []uint32, a uint32, exact bool, xbits []uint64, out []pairSurvivor) int) ([]pairSurvivor, []uint32) {
	pcnt := slices.Clone(f.pcnt)
	out := make([]pairSurvivor, len(f.ids))
	m := fn(f.ids, pcnt, f.base, f.info, f.bits, f.words, f.need, f.a, f.exact, f.xbits, out)
	return out[:m], pcnt
}

// TestFilterPairs checks the PairJoin filter in use (the kernels where
// there are) against the Go loop, and the Go loop against verifyPairs'
// rules.
func TestFilterPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for i := range 20000 {
		comparePairFilters(t, i, randomPairFilter(rng))
	}
}

func comparePairFilters(t *testing.T, i int, f pairFilterCase) {
	t.Helper()
	got, gc := f.run(filterPairs)
	want, wc := f.run(filterPairsGeneric)
	if !slices.Equal(got, want) || !slices.Equal(gc, wc) {
		t.Fatalf("case %d (%d words, exact %v): got %v\nwant %v", i, f.words, f.exact, got, want)
	}
	var rule []pairSurvivor
	for _, y := range f.ids {
		c := f.pcnt[y-f.base]
		b := f.info[y].size
		nd := f.need[b]
		hits, m := c>>16, uint32(2)
		for (m+1)*m/2 <= hits {
			m++
		}
		d := 0
		for w := range f.words {
			d += bits.OnesCount64(f.xbits[w] ^ f.bits[int(y)*f.words+w])
		}
		switch {
		case !f.exact && m >= nd:
			rule = append(rule, pairSurvivor{y: y, c: c, direct: 1})
		case (f.a+b-uint32(d))/2 >= nd:
			rule = append(rule, pairSurvivor{y: y, c: c})
		}
		if wc[y-f.base] != 0 {
			t.Fatalf("case %d: the count of candidate %d is left at %d", i, y, wc[y-f.base])
		}
	}
	if !slices.Equal(want, rule) {
		t.Fatalf("case %d: the Go loop %v; the rules %v", i, want, rule)
	}
}

// FuzzFilterPairs: the kernels and the Go loop agree on any candidates.
func FuzzFilterPairs(f *testing.F) {
	f.Add(uint64(7), uint64(8))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		comparePairFilters(t, 0, randomPairFilter(rand.New(rand.NewPCG(a, b))))
	})
}
