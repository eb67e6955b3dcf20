package gpubatmap

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

// This file checks, without a GPU, everything but the hardware: a Go twin
// of the kernel (stepRef, the slice loop with wrapping and zero padding,
// the epilogue's filters and output formats) produces each batch's output
// as the kernel would, in a random order, and the host side (plan,
// spans, decoder, corrections) must turn it into exact results.

// stepRef is the kernel's step: the match mask of words x and y, counted
// as the CUDA code counts it (cnt 0: DP4A of the mask, 128 per match;
// 1: POPC; 2: shift).
func stepRef(eb, cnt int, acc, x, y uint32) uint32 {
	var H uint32
	switch eb {
	case 8:
		H = 0x80808080
	case 16:
		H = 0x80008000
	default:
		H = 0x80000000
	}
	L := ^H
	t := ((x ^ y) & L) + L
	z := ^t & (x | y) & H
	switch cnt {
	case 0:
		return acc + z&0xff + z>>8&0xff + z>>16&0xff + z>>24
	case 1:
		return acc + uint32(bits.OnesCount32(z))
	}
	return acc + z>>31
}

func finishRef(cnt int, acc uint32) uint32 {
	if cnt == 0 {
		return acc >> 7
	}
	return acc
}

func cntOf(name string) int {
	switch name {
	case "batmap8":
		return 0
	case "batmap32":
		return 2
	}
	return 1
}

// TestStep checks the word comparison against package batmap's formula:
// every pair of 8-bit entries in every lane, and random words of every
// width.
func TestStep(t *testing.T) {
	for _, cnt := range []int{0, 1} {
		for x := range 256 {
			for y := range 256 {
				for lane := range 4 {
					xs, ys := uint32(x)<<(8*lane), uint32(y)<<(8*lane)
					got := finishRef(cnt, stepRef(8, cnt, 0, xs, ys))
					want := batmap.CountWords([]uint32{xs, 0}, []uint32{ys, 0}, 8)
					if int(got) != want {
						t.Fatalf("cnt %d: %#x vs %#x: %d, want %d", cnt, xs, ys, got, want)
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, eb := range []int{8, 16, 32} {
		for _, cnt := range []int{0, 1, 2} {
			if (cnt == 0 && eb != 8) || (cnt == 2 && eb != 32) {
				continue
			}
			for range 20000 {
				// Codes from a small alphabet, so that many match.
				var x, y uint32
				for e := 0; e < 32; e += eb {
					x |= uint32(r.IntN(4)) << e
					y |= uint32(r.IntN(4)) << e
					if r.IntN(2) == 0 {
						x |= 1 << (e + eb - 1)
					}
					if r.IntN(2) == 0 {
						y |= 1 << (e + eb - 1)
					}
				}
				got := finishRef(cnt, stepRef(eb, cnt, 0, x, y))
				want := batmap.CountWords([]uint32{x, 0}, []uint32{y, 0}, eb)
				if int(got) != want {
					t.Fatalf("%d-bit, cnt %d: %#x vs %#x: %d, want %d", eb, cnt, x, y, got, want)
				}
			}
		}
	}
}

// holdsRef is the kernel's holds: whether the batmap of w words at word
// offset base stores the element of hashes h0, h1.
func holdsRef(b *batmap.Batmaps, base uint64, w int, h0, h1 uint32) bool {
	eb := b.Layout.EntryBits
	per := uint64(32 / eb)
	r := uint64(w) * per / 3
	shift, r0 := b.Layout.Shift, uint64(b.Layout.R0)
	codeMask := uint32(1)<<(eb-1) - 1
	for t, hv := range []uint32{h0, h1} {
		v := uint64(hv) % r
		idx := 3*r0*(v>>shift) + uint64(t)*r0 + v&(r0-1)
		e := b.Words[base+idx/per] >> (uint32(idx%per) * uint32(eb))
		if e&codeMask == hv>>shift+1 {
			return true
		}
	}
	return false
}

// correctionRef is the kernel's correction for positions p and q.
func correctionRef(b *batmap.Batmaps, p, q int) uint32 {
	var n uint32
	width := func(k int) int { return int(b.Offsets[k+1] - b.Offsets[k]) }
	for _, x := range b.FailedAt(p) {
		if holdsRef(b, b.Offsets[q], width(q), b.Layout.Hash(0, x), b.Layout.Hash(1, x)) {
			n++
		}
	}
	for _, x := range b.FailedAt(q) {
		if holdsRef(b, b.Offsets[p], width(p), b.Layout.Hash(0, x), b.Layout.Hash(1, x)) {
			n++
		}
	}
	fp, fq := b.FailedAt(p), b.FailedAt(q)
	for i, j := 0, 0; i < len(fp) && j < len(fq); {
		x, y := fp[i], fq[j]
		if x == y {
			n++
		}
		if x <= y {
			i++
		}
		if y <= x {
			j++
		}
	}
	return n
}

// TestCorrectionRef checks the kernel's corrections against package
// batmap's on the cases with failed insertions.
func TestCorrectionRef(t *testing.T) {
	for _, c := range refCases() {
		if c.cfg.MaxLoop == 0 {
			continue
		}
		b := build(t, c)
		for p := range b.Len() {
			for q := p + 1; q < b.Len(); q++ {
				if got, want := correctionRef(b, p, q), b.Correction(p, q); int(got) != want {
					t.Fatalf("%s: (%d, %d): %d, want %d", c.name, p, q, got, want)
				}
			}
		}
	}
}

// emulated is one batch's output as the kernel leaves it.
type emulated struct {
	counters [3]uint64
	runs     []uint32 // start, length per tile
	out      []uint32
}

// emulateBatch computes batch bi the kernel's way: tiles in a random
// order (blocks finish in any order), each tile's entries shuffled, the
// corrections for failed insertions added as the kernel adds them.
func emulateBatch(r *rand.Rand, b *batmap.Batmaps, pl *plan, bi int, need []uint32) *emulated {
	bt := &pl.batches[bi]
	cnt := cntOf(kernelName(b, Options{}))
	eb := b.Layout.EntryBits
	em := &emulated{runs: make([]uint32, 2*len(bt.tiles))}
	if pl.mode == modeDense {
		em.out = make([]uint32, bt.entries)
	}
	ldo := pl.n - bt.rows[0]
	order := r.Perm(len(bt.tiles))
	for _, ti := range order {
		tl := bt.tiles[ti]
		gr, gc := pl.groups[tl.g], pl.groups[tl.h]
		wr, wc := gr.width, gc.width
		slicesN := (wc + chunkWords - 1) / chunkWords
		var entries [][2]uint32 // packed words
		var clean uint64
		for x := range gr.len {
			for y := range gc.len {
				p, q := gr.start+x, gc.start+y
				if p >= q {
					continue
				}
				var acc uint32
				for k := 0; k < slicesN*chunkWords; k++ {
					var xw, yw uint32
					if k < wc {
						kr := k
						if k >= wr {
							kr = k % wr
						}
						xw = b.Words[gr.base+uint64(x*wr+kr)]
						yw = b.Words[gc.base+uint64(y*wc+k)]
					}
					acc = stepRef(eb, cnt, acc, xw, yw)
				}
				n := finishRef(cnt, acc)
				if len(b.FailedAt(p))+len(b.FailedAt(q)) > 0 {
					n += correctionRef(b, p, q)
				}
				if pl.mode == modeDense {
					em.out[(p-bt.rows[0])*ldo+q-bt.rows[0]] = n
					continue
				}
				if n < min(need[p], need[q]) {
					continue
				}
				if pl.mode == modeCount {
					clean++
					continue
				}
				if pl.wide {
					entries = append(entries, [2]uint32{uint32(x)<<16 | uint32(y), n})
				} else {
					if n >= 1<<18 {
						panic("narrow entry with a count of 2^18")
					}
					entries = append(entries, [2]uint32{uint32(x)<<25 | uint32(y)<<18 | n})
				}
			}
		}
		em.counters[1] += clean
		r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
		start := em.counters[0]
		if start+uint64(len(entries)) > uint64(bt.entries) {
			em.counters[2] = 1
			continue
		}
		em.counters[0] += uint64(len(entries))
		if len(entries) > 0 {
			em.runs[2*ti], em.runs[2*ti+1] = uint32(start), uint32(len(entries))
		}
		for _, e := range entries {
			em.out = append(em.out, e[0])
			if pl.wide {
				em.out = append(em.out, e[1])
			}
		}
	}
	return em
}

// emulatedRun is run with the kernel emulated: the same plan and decoder,
// the output cut into pieces of random sizes.
func emulatedRun(t *testing.T, seed uint64, b *batmap.Batmaps, opt Options, m mode,
	emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) int64 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	if b.Len() < 2 {
		return 0
	}
	pl, err := planFor(b, m, 1<<40, opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(b, pl, opt)
	d.emit, d.tileFn = emit, tileFn
	if m == modePairs {
		d.start()
		defer func() {
			if err := d.stop(); err != nil {
				t.Fatal(err)
			}
		}()
	}
	need := d.deviceNeed()
	var clean int64
	for bi := range pl.batches {
		bt := &pl.batches[bi]
		em := emulateBatch(r, b, pl, bi, need)
		if em.counters[2] != 0 {
			t.Fatalf("batch %d overflowed", bi)
		}
		if m == modeDense {
			cols := pl.n - bt.rows[0]
			rows := bt.rows[1] - bt.rows[0]
			for x := 0; x < rows; {
				h := 1 + r.IntN(rows-x)
				if err := d.dense(bt.rows[0]+x, bt.rows[0], h, em.out[x*cols:(x+h)*cols]); err != nil {
					t.Fatal(err)
				}
				x += h
			}
			continue
		}
		clean += int64(em.counters[1])
		spans := spansOf(bt, em.runs)
		per := 1
		if pl.wide {
			per = 2
		}
		n := int(em.counters[0])
		for off := 0; off < n; {
			k := 1 + r.IntN(n-off)
			if r.IntN(3) == 0 {
				k = n - off
			}
			if err := d.pairs(spans, em.out[off*per:(off+k)*per], int64(off)); err != nil {
				t.Fatal(err)
			}
			off += k
		}
	}
	return clean
}

// collection returns k sets over [0, m) of sizes spread over several
// batmap widths.
func collection(r *rand.Rand, k, m, maxSize int) *sets.Collection {
	c := sets.New()
	var s []uint32
	for range k {
		n := 0
		if maxSize > 0 {
			n = int(float64(maxSize) * r.Float64() * r.Float64())
		}
		s = s[:0]
		for range n {
			s = append(s, uint32(r.IntN(m)))
		}
		c.AddUnsorted(s)
	}
	return c
}

type refCase struct {
	name string
	c    *sets.Collection
	cfg  batmap.Config
}

func refCases() []refCase {
	r := rand.New(rand.NewPCG(3, 4))
	var cs []refCase
	add := func(name string, c *sets.Collection, cfg batmap.Config) {
		cs = append(cs, refCase{name, c, cfg})
	}
	add("k=0", sets.New(), batmap.Config{})
	one := sets.New()
	one.Add([]uint32{1, 2, 3})
	add("k=1", one, batmap.Config{})
	two := sets.New()
	two.Add([]uint32{1, 2, 3, 9})
	two.Add([]uint32{2, 3, 9, 10})
	add("k=2", two, batmap.Config{})
	for _, eb := range []int{8, 16, 32} {
		add(fmt.Sprintf("mixed-%dbit", eb), collection(r, 300, 3000, 400), batmap.Config{EntryBits: eb})
	}
	add("uniform-widths-8bit", collection(r, 260, 5000, 0), batmap.Config{EntryBits: 8})
	// Forced failures: tiny MaxLoop and load.
	add("failures-8bit", collection(r, 200, 2000, 300), batmap.Config{EntryBits: 8, MaxLoop: 1, Load: 0.8})
	add("failures-16bit", collection(r, 150, 2000, 300), batmap.Config{EntryBits: 16, MaxLoop: 2, Load: 1})
	add("failures-32bit", collection(r, 140, 1000, 200), batmap.Config{EntryBits: 32, MaxLoop: 1, Load: 0.6})
	add("base1", collection(r, 270, 4000, 600), batmap.Config{Base: 1})
	// Dense sets: equal, overlapping, with narrow ones that wrap a lot.
	dense := sets.New()
	for i := range 140 {
		var s []uint32
		for x := range 600 {
			if (x+i)%(1+i%5) == 0 {
				s = append(s, uint32(x))
			}
		}
		dense.Add(s)
	}
	add("dense", dense, batmap.Config{})
	return cs
}

func build(t testing.TB, c refCase) *batmap.Batmaps {
	t.Helper()
	b, err := batmap.Build(c.c, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCounts returns every pair's count by positions, from the sets.
func wantCounts(b *batmap.Batmaps, c *sets.Collection) [][]uint32 {
	n := b.Len()
	w := make([][]uint32, n)
	for p := range n {
		w[p] = make([]uint32, n)
		for q := p + 1; q < n; q++ {
			w[p][q] = uint32(settest.Count(c.Set(int(b.IDs[p])), c.Set(int(b.IDs[q]))))
		}
	}
	return w
}

// checkResults runs the three modes through run (emulated or on a GPU)
// and compares them with the sets' counts.
func checkResults(t *testing.T, c refCase, b *batmap.Batmaps, runFn func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error)) {
	t.Helper()
	n := b.Len()
	want := wantCounts(b, c.c)
	// Dense.
	got := make([][]uint32, n)
	for p := range got {
		got[p] = make([]uint32, n)
	}
	seen := 0
	if _, err := runFn(Options{}, modeDense, nil, func(tl *batmap.Tile) error {
		if tl.Col0 > tl.Row0 {
			return fmt.Errorf("tile at (%d, %d): columns should start at its batch's first row", tl.Row0, tl.Col0)
		}
		for x := range tl.Rows {
			for y := range tl.Cols {
				p, q := tl.Row0+x, tl.Col0+y
				if v := tl.At(x, y); p >= q && v != 0 {
					return fmt.Errorf("count %d at (%d, %d), on or below the diagonal", v, p, q)
				} else if p < q {
					got[p][q] = v
					seen++
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != n*(n-1)/2 {
		t.Fatalf("dense: %d pairs delivered, want %d", seen, n*(n-1)/2)
	}
	for p := range n {
		for q := p + 1; q < n; q++ {
			if got[p][q] != want[p][q] {
				t.Fatalf("dense: pair (%d, %d): %d, want %d", p, q, got[p][q], want[p][q])
			}
		}
	}
	// Thresholds: constant ones, and per position.
	r := rand.New(rand.NewPCG(uint64(n), 5))
	perPos := make([]uint32, n)
	for i := range perPos {
		perPos[i] = uint32(r.IntN(20))
	}
	for _, opt := range []Options{{MinCount: 0}, {MinCount: 1}, {MinCount: 3}, {MinCount: 40}, {MinCount: 1 << 31}, {Need: perPos}, {MinCount: 2, Threads: 3}} {
		need := func(p, q int) uint32 {
			if opt.Need != nil {
				return min(opt.Need[p], opt.Need[q])
			}
			return opt.MinCount
		}
		var wantN int64
		for p := range n {
			for q := p + 1; q < n; q++ {
				if want[p][q] >= need(p, q) {
					wantN++
				}
			}
		}
		var mu sync.Mutex
		var pairs []Pair
		if _, err := runFn(opt, modePairs, func(w int, ps []Pair) error {
			if w < 0 || w >= opt.threads() {
				return fmt.Errorf("worker %d", w)
			}
			mu.Lock()
			pairs = append(pairs, ps...)
			mu.Unlock()
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
		if int64(len(pairs)) != wantN {
			t.Fatalf("pairs, need %v/%v: %d pairs, want %d", opt.MinCount, opt.Need != nil, len(pairs), wantN)
		}
		slices.SortFunc(pairs, func(x, y Pair) int {
			if x.I != y.I {
				return int(x.I) - int(y.I)
			}
			return int(x.J) - int(y.J)
		})
		for i, pr := range pairs {
			if pr.I >= pr.J || (i > 0 && pairs[i-1].I == pr.I && pairs[i-1].J == pr.J) {
				t.Fatalf("pair (%d, %d) out of order or twice", pr.I, pr.J)
			}
			if w := want[pr.I][pr.J]; pr.Count != w || w < need(int(pr.I), int(pr.J)) {
				t.Fatalf("pair (%d, %d): %d, want %d (need %d)", pr.I, pr.J, pr.Count, w, need(int(pr.I), int(pr.J)))
			}
		}
		cnt, err := runFn(opt, modeCount, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cnt != wantN {
			t.Fatalf("count, need %v/%v: %d, want %d", opt.MinCount, opt.Need != nil, cnt, wantN)
		}
	}
}

// TestEmulated runs every case through the emulated kernel, with small
// batches (many launches) and with one; with -short, with small batches
// only.
func TestEmulated(t *testing.T) {
	batches := []int64{1 << 24, 3000}
	if testing.Short() {
		batches = batches[1:]
	}
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, c)
			if c.cfg.MaxLoop == 1 && b.Failures() == 0 {
				t.Fatal("no insertion failed: the case does not test corrections")
			}
			for _, batchEntries := range batches {
				checkResults(t, c, b, func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
					opt.maxEntries = batchEntries
					return emulatedRun(t, uint64(batchEntries), b, opt, m, emit, tileFn), nil
				})
			}
		})
	}
}

// TestEmulatedWide forces 8-byte entries (counts of 2^18 and more).
func TestEmulatedWide(t *testing.T) {
	c := refCase{name: "wide", c: collection(rand.New(rand.NewPCG(9, 9)), 130, 1000, 300), cfg: batmap.Config{EntryBits: 16}}
	b := build(t, c)
	b.Sizes[0] = 1 << 18 // only the plan reads Sizes here
	defer func() { b.Sizes[0] = uint32(c.c.SetLen(int(b.IDs[0]))) }()
	checkResults(t, c, b, func(opt Options, m mode, emit func(int, []Pair) error, tileFn func(*batmap.Tile) error) (int64, error) {
		return emulatedRun(t, 1, b, opt, m, emit, tileFn), nil
	})
}

func TestPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{2, 127, 128, 129, 300, 1000} {
		b := build(t, refCase{c: collection(r, k, 5000, 800)})
		for _, m := range []mode{modeDense, modePairs, modeCount} {
			for _, limit := range []int64{1, 5000, 1 << 30} {
				// minBatches as for 1 owner (none) and for 4 (minBatches(4)).
				for _, mb := range []int{0, minBatches(4)} {
					pl, err := newPlanShared(planInput{offsets: b.Offsets, maxSize: maxSize(b)}, m, limit, 1<<40, 0, mb)
					if err != nil {
						t.Fatal(err)
					}
					if mb > 0 {
						// Batches of more than one row group stay within an
						// even share of the work.
						for _, bt := range pl.batches {
							if bt.g1-bt.g0 > 1 && bt.wordPairs > pl.wordPairs/float64(mb)*(1+1e-9) {
								t.Fatalf("k %d: batch of %.3g word pairs, over 1/%d of %.3g", k, bt.wordPairs, mb, pl.wordPairs)
							}
						}
					}
					// Groups: consecutive, one width, at most tileSide.
					next := 0
					for _, g := range pl.groups {
						if g.start != next || g.len < 1 || g.len > tileSide || g.base != b.Offsets[g.start] {
							t.Fatalf("k %d: bad group %+v", k, g)
						}
						for p := g.start; p < g.start+g.len; p++ {
							if int(b.Offsets[p+1]-b.Offsets[p]) != g.width {
								t.Fatalf("k %d: group %+v mixes widths", k, g)
							}
						}
						next += g.len
					}
					if next != k {
						t.Fatalf("k %d: groups cover %d batmaps", k, next)
					}
					// Every tile (g <= h) exactly once; batches cover the row
					// groups in order.
					G := len(pl.groups)
					seen := map[tile]bool{}
					g0 := 0
					var pairs int64
					for _, bt := range pl.batches {
						if bt.g0 != g0 || bt.g1 <= bt.g0 {
							t.Fatalf("k %d: batch %+v after row group %d", k, bt, g0)
						}
						g0 = bt.g1
						pairs += bt.pairs
						if m != modeCount && bt.g1-bt.g0 > 1 && bt.entries > limit {
							t.Fatalf("k %d: batch of %d entries over the limit %d", k, bt.entries, limit)
						}
						for _, tl := range bt.tiles {
							if seen[tl] || tl.g > tl.h || int(tl.g) < bt.g0 || int(tl.g) >= bt.g1 {
								t.Fatalf("k %d: tile %v", k, tl)
							}
							seen[tl] = true
						}
					}
					if len(seen) != G*(G+1)/2 || pairs != int64(k)*int64(k-1)/2 || g0 != G {
						t.Fatalf("k %d: %d tiles, %d pairs", k, len(seen), pairs)
					}
				}
			}
		}
	}
	// A budget below the batmaps themselves is refused, saying so.
	b := build(t, refCase{c: collection(r, 300, 5000, 800)})
	if _, err := newPlan(planInput{offsets: b.Offsets, maxSize: maxSize(b)}, modePairs, 1<<24, 1000); err == nil {
		t.Fatal("a plan fit in 1000 bytes")
	}
}

// TestSmallNoDevice checks that fewer than two batmaps need no device.
func TestSmallNoDevice(t *testing.T) {
	b := build(t, refCases()[1])
	n, err := run(context.Background(), nil, b, Options{}, modeCount, nil, nil)
	if n != 0 || err != nil {
		t.Fatalf("one batmap: %d, %v", n, err)
	}
}
