package batmap

import (
	"cmp"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/xsect/xsect/sets"
)

// Batmaps is a collection of batmaps sharing one Layout, stored flat in
// the order a GPU kernel wants them: sorted by width (then by set id), one
// array of 32-bit words, with offsets. Batmaps are addressed by their
// position k in that order; IDs maps positions to the sets' ids.
//
// Elements whose insertion failed (section III-C) are not in the batmap of
// their set but in its failed list; Count and AllPairs correct for them,
// so their counts are always exact.
type Batmaps struct {
	// Layout is the layout every batmap was built with: its ranges,
	// entries and permutations.
	Layout *Layout
	// Words holds every batmap; batmap k is Words[Offsets[k]:Offsets[k+1]],
	// 3·r_k entries packed 32/EntryBits a word. Every batmap starts on a
	// 64-bit boundary and is a whole number of 64-bit words.
	Words []uint32
	// Offsets are the batmaps' bounds in Words: Len()+1 of them, from 0.
	Offsets []uint64
	// IDs[k] is the id (position in the input collection) of batmap k's set.
	IDs []uint32
	// Sizes[k] is the number of elements of batmap k's set.
	Sizes []uint32
	// Failed[FailOffsets[k]:FailOffsets[k+1]] are the elements of batmap
	// k's set that it does not hold, increasing.
	FailOffsets []uint64
	// Failed holds every batmap's failed elements, batmap after batmap.
	Failed []uint32

	pos   []uint32 // set id -> position
	words []uint64 // Words viewed as 64-bit words
}

// Len returns the number of batmaps.
func (b *Batmaps) Len() int { return len(b.IDs) }

// Batmap returns the words of batmap k (by position).
func (b *Batmaps) Batmap(k int) []uint32 { return b.Words[b.Offsets[k]:b.Offsets[k+1]] }

// batmap64 returns batmap k as 64-bit words.
func (b *Batmaps) batmap64(k int) []uint64 { return b.words[b.Offsets[k]/2 : b.Offsets[k+1]/2] }

// Position returns the position of set id's batmap.
func (b *Batmaps) Position(id int) int { return int(b.pos[id]) }

// FailedAt returns the failed elements of batmap k (by position).
func (b *Batmaps) FailedAt(k int) []uint32 { return b.Failed[b.FailOffsets[k]:b.FailOffsets[k+1]] }

// Failures returns the number of failed insertions of the whole collection.
func (b *Batmaps) Failures() int { return len(b.Failed) }

// Build stores every set of c as a batmap. The sets must lie below
// cfg.Universe (or it is taken from the data).
func Build(c *sets.Collection, cfg Config) (*Batmaps, error) {
	k := c.Len()
	sizes := make([]int, k)
	var maxElem int64 = -1
	for i := range sizes {
		s := c.Set(i)
		sizes[i] = len(s)
		if len(s) > 0 {
			maxElem = max(maxElem, int64(s[len(s)-1]))
		}
	}
	universe := cfg.Universe
	if universe == 0 {
		universe = uint64(maxElem + 1)
	} else if maxElem >= 0 && uint64(maxElem) >= universe {
		return nil, fmt.Errorf("batmap: element %d outside the universe [0, %d)", maxElem, universe)
	}
	l, err := NewLayout(universe, sizes, cfg)
	if err != nil {
		return nil, err
	}
	return l.build(c, sizes, cfg.threads(), cfg.Progress)
}

func (cfg Config) threads() int {
	if cfg.Threads > 0 {
		return cfg.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Build stores every set of c as a batmap of layout l; every element must
// be below l.Universe.
func (l *Layout) Build(c *sets.Collection, threads int, progress func(done, total int64)) (*Batmaps, error) {
	sizes := make([]int, c.Len())
	for i := range sizes {
		s := c.Set(i)
		sizes[i] = len(s)
		if len(s) > 0 && uint64(s[len(s)-1]) >= l.Universe {
			return nil, fmt.Errorf("batmap: set %d has element %d outside the universe [0, %d)", i, s[len(s)-1], l.Universe)
		}
	}
	return l.build(c, sizes, max(threads, 1), progress)
}

func (l *Layout) build(c *sets.Collection, sizes []int, threads int, progress func(done, total int64)) (*Batmaps, error) {
	k := len(sizes)
	if uint64(k) > 1<<32-1 {
		return nil, fmt.Errorf("batmap: %d sets, at most 2^32-1", k)
	}
	b := &Batmaps{Layout: l, IDs: make([]uint32, k), Sizes: make([]uint32, k), Offsets: make([]uint64, k+1), pos: make([]uint32, k)}
	widths := make([]int, k)
	for i := range b.IDs {
		b.IDs[i] = uint32(i)
		widths[i] = l.Words(sizes[i])
	}
	slices.SortFunc(b.IDs, func(x, y uint32) int {
		return cmp.Or(cmp.Compare(widths[x], widths[y]), cmp.Compare(x, y))
	})
	for p, id := range b.IDs {
		b.pos[id] = uint32(p)
		b.Sizes[p] = uint32(sizes[id])
		b.Offsets[p+1] = b.Offsets[p] + uint64(widths[id])
	}
	total := b.Offsets[k]
	b.words = make([]uint64, total/2)
	if len(b.words) > 0 {
		b.Words = unsafe.Slice((*uint32)(unsafe.Pointer(&b.words[0])), total)
	} else {
		b.Words = []uint32{}
	}
	if l.tabulates(sizes) && l.perms.table[0] == nil {
		l.perms.tabulate(threads)
	}

	// Workers take chunks of consecutive positions of about equal work.
	type chunk struct{ lo, hi int }
	var chunks []chunk
	const grain = 1 << 15 // words
	for lo := 0; lo < k; {
		hi, w := lo, uint64(0)
		for hi < k && (hi == lo || w < grain) {
			w += b.Offsets[hi+1] - b.Offsets[hi] + uint64(b.Sizes[hi])
			hi++
		}
		chunks = append(chunks, chunk{lo, hi})
		lo = hi
	}
	// The failed insertions of each worker, by position: few, mostly
	// none, so not an entry for every set.
	type failure struct {
		p     int
		elems []uint32
	}
	workers := min(threads, len(chunks))
	failures := make([][]failure, workers)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bd := &builder{l: l}
			for {
				ci := int(next.Add(1) - 1)
				if ci >= len(chunks) {
					return
				}
				ch := chunks[ci]
				for p := ch.lo; p < ch.hi; p++ {
					set := c.Set(int(b.IDs[p]))
					r := l.R(len(set))
					if f := bd.build(set, r, b.Batmap(p)); len(f) > 0 {
						failures[w] = append(failures[w], failure{p, f})
					}
				}
				d := done.Add(int64(ch.hi - ch.lo))
				if progress != nil {
					progress(d, int64(k))
				}
			}
		}()
	}
	wg.Wait()
	var all []failure
	for _, fs := range failures {
		all = append(all, fs...)
	}
	slices.SortFunc(all, func(x, y failure) int { return cmp.Compare(x.p, y.p) })
	b.FailOffsets = make([]uint64, k+1)
	p := 0
	for _, f := range all {
		for ; p < f.p; p++ {
			b.FailOffsets[p+1] = uint64(len(b.Failed))
		}
		b.Failed = append(b.Failed, f.elems...)
	}
	for ; p < k; p++ {
		b.FailOffsets[p+1] = uint64(len(b.Failed))
	}
	return b, nil
}

// builder inserts the sets of one worker, reusing its scratch space.
type builder struct {
	l     *Layout
	slots []uint32 // table t at [t·r, (t+1)·r): local index + 1, 0 if empty
	pis   []uint32 // π_1, π_2, π_3 of each element
	hv    []uint32 // the same modulo r: the element's positions
	fail  []uint32 // local indices + 1 of failed elements
}

// fastmod returns x mod d given m = ^uint64(0)/d + 1 (Lemire, Kaser and
// Kurz): a multiplication instead of a division.
func fastmod(x uint32, m, d uint64) uint32 {
	hi, _ := bits.Mul64(m*uint64(x), d)
	return uint32(hi)
}

// build writes the batmap of set, of range r, into dst (zeroed), and
// returns the elements it failed to insert, increasing (a new slice), or
// nil.
func (bd *builder) build(set []uint32, r int, dst []uint32) []uint32 {
	l := bd.l
	n := len(set)
	if cap(bd.slots) < 3*r {
		bd.slots = make([]uint32, 3*r)
	}
	bd.slots = bd.slots[:3*r]
	clear(bd.slots)
	if cap(bd.pis) < 3*n {
		bd.pis = make([]uint32, 3*n)
		bd.hv = make([]uint32, 3*n)
	}
	bd.pis, bd.hv = bd.pis[:3*n], bd.hv[:3*n]
	pis, hv := bd.pis, bd.hv
	for t := range 3 {
		if tab := l.perms.table[t]; tab != nil {
			for i, x := range set {
				pis[3*i+t] = tab[x]
			}
		} else {
			for i, x := range set {
				pis[3*i+t] = l.perms.compute(t, uint64(x))
			}
		}
	}
	if r&(r-1) == 0 {
		for i, p := range pis {
			hv[i] = p & uint32(r-1)
		}
	} else {
		d := uint64(r)
		m := ^uint64(0)/d + 1
		for i, p := range pis {
			hv[i] = fastmod(p, m, d)
		}
	}
	bd.fail = bd.fail[:0]
	for i := range n {
		bd.insert(uint32(i+1), r)
	}
	// Encode: each stored copy becomes code | indicator, where the
	// indicator marks the copy that comes second in the circular order of
	// the tables (1, 2, 3, 1): the copy in table t is second when the
	// other copy is in table t-1. Elements are visited in order (most
	// slots are empty), and their tables found by looking.
	eb := uint(l.EntryBits)
	ind := uint32(1) << (eb - 1)
	slots := bd.slots
	for i := range n {
		e := uint32(i + 1)
		p, v := bd.pis[3*i:3*i+3], bd.hv[3*i:3*i+3]
		in0 := slots[v[0]] == e
		in1 := slots[r+int(v[1])] == e
		// Stored in {0, 1}: copy 1 second; {1, 2}: copy 2; {2, 0}: copy 0.
		switch {
		case in0 && in1:
			bd.put(dst, 0, p[0], v[0], 0)
			bd.put(dst, 1, p[1], v[1], ind)
		case in1:
			bd.put(dst, 1, p[1], v[1], 0)
			bd.put(dst, 2, p[2], v[2], ind)
		case in0:
			bd.put(dst, 2, p[2], v[2], 0)
			bd.put(dst, 0, p[0], v[0], ind)
		}
		// Neither: failed (a copy in table 2 alone cannot be).
	}
	if len(bd.fail) == 0 {
		return nil
	}
	f := make([]uint32, len(bd.fail))
	for i, e := range bd.fail {
		f[i] = set[e-1]
	}
	slices.Sort(f)
	return f
}

// put writes the entry of π value p, at position v, into table t of dst.
func (bd *builder) put(dst []uint32, t int, p, v, ind uint32) {
	l := bd.l
	entry := l.code(p) | ind
	i := l.index(t, v)
	switch l.EntryBits {
	case 8:
		dst[i>>2] |= entry << (8 * (i & 3))
	case 16:
		dst[i>>1] |= entry << (16 * (i & 1))
	default:
		dst[i] = entry
	}
}

// insert stores two copies of element e (local index + 1), calling the
// paper's INSERT twice. When a call gives up with a nestless element z,
// the element being inserted loses all its copies and is recorded as
// failed; unless it was z itself, z is then short of one copy and is
// inserted once more, and so on until nothing is nestless.
func (bd *builder) insert(e uint32, r int) {
	z := bd.insertCopy(e, r)
	if z == 0 {
		z = bd.insertCopy(e, r)
	}
	for z != 0 {
		bd.remove(e, r)
		bd.fail = append(bd.fail, e)
		if z == e {
			return
		}
		e = z
		z = bd.insertCopy(e, r)
	}
}

// insertCopy is INSERT(τ) of section II-A: τ is swapped into tables 1, 2,
// 3, 1, ... at its positions until an empty slot takes it, at most MaxLoop
// rounds. It returns 0, or the element left nestless.
func (bd *builder) insertCopy(tau uint32, r int) uint32 {
	slots, hv := bd.slots, bd.hv
	for range bd.l.MaxLoop {
		for t := range 3 {
			pos := t*r + int(hv[3*(tau-1)+uint32(t)])
			tau, slots[pos] = slots[pos], tau
			if tau == 0 {
				return 0
			}
		}
	}
	return tau
}

// remove deletes every copy of e.
func (bd *builder) remove(e uint32, r int) {
	for t := range 3 {
		pos := t*r + int(bd.hv[3*(e-1)+uint32(t)])
		if bd.slots[pos] == e {
			bd.slots[pos] = 0
		}
	}
}
