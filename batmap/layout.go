package batmap

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Defaults for Config's zero fields.
const (
	// DefaultLoad is the default ratio r_i / |S_i| before rounding up to a
	// power of two. The paper's analysis asks for 2+ε; docs/BATMAP.md
	// shows the failure rates measured at each ratio, and why 2 is kept.
	DefaultLoad = 2.0
	// DefaultMaxLoop bounds one insertion to 32 rounds of three moves.
	DefaultMaxLoop = 32
	// DefaultSeed is the seed of the permutations when Config.Seed is 0.
	DefaultSeed = 0x5eed
)

// Config chooses a collection's layout. The zero value picks everything.
type Config struct {
	// Universe bounds the elements: every element is below it. 0 means one
	// more than the largest element of the collection. At most 2^32.
	Universe uint64
	// EntryBits is the width of a batmap entry: 8 (the paper's compressed
	// layout: 7 bits of π_t(x) and the indicator bit, 4 entries a word),
	// 16, or 32 (uncompressed, for sparse sets over large universes, where
	// compression would force huge minimum widths). 0 picks the width
	// with the least all-pairs work (see Layout.PairWords).
	EntryBits int
	// Load sets each set's hash range: r_i is the least power of two at
	// least Load·|S_i| (and at least the layout's MinR). 0 means
	// DefaultLoad.
	Load float64
	// Base is the odd factor of every hash range: r_i = Base·2^k. The
	// paper uses powers of two (Base 1); since ranges only need to divide
	// one another, any odd Base works, and one of 3, 5 or 7 often rounds
	// sizes up much less (a set of 625 at load 2 gets r = 1280 instead of
	// 2048). 0 picks, among 1, 3, 5 and 7, the one with the least
	// all-pairs work.
	Base int
	// MaxLoop bounds an insertion to MaxLoop rounds of three moves, after
	// which the element is recorded as failed (section III-C). 0 means
	// DefaultMaxLoop.
	MaxLoop int
	// Seed selects the permutations; 0 means DefaultSeed.
	Seed uint64
	// Threads is the number of goroutines that build; 0 means GOMAXPROCS.
	Threads int
	// Progress, if set, is called now and then with the number of sets
	// built so far and the total, from any goroutine.
	Progress func(done, total int64)
}

// Layout is what every batmap of a collection shares: the permutations
// π_1, π_2, π_3 of the universe, the entry width, and the block structure
// of Figure 4. A batmap of range r (Base times a power of two, that power
// at least MinR) is 3·r entries, in r/R0 blocks of 3·R0 entries; block q
// holds tables 1, 2 and 3 side by side, R0 entries each. Element x is
// stored in two of its three positions
//
//	h_t(x) = 3·R0·⌊(π_t(x) mod r)/R0⌋ + (t-1)·R0 + (π_t(x) mod R0)
//
// as the entry indicator<<(EntryBits-1) | (π_t(x)>>Shift + 1). The
// position gives the low Shift bits of π_t(x) (R0 divides r), the entry
// the rest, so equal entries at one position mean equal elements; 0 is the
// empty entry, which never counts. Because r_i divides r_j, entry e of a
// batmap of range r_j corresponds to entry e mod 3·r_i of one of range
// r_i: the narrower batmap is simply repeated (wrapped).
//
// Entries are packed little-endian into 32-bit words, 32/EntryBits a
// word, and every batmap is a whole number of 64-bit words.
type Layout struct {
	// Universe is the number of possible elements: they lie in
	// [0, Universe).
	Universe uint64
	// EntryBits is 8, 16 or 32.
	EntryBits int
	// Shift is s: entries keep the bits of π_t(x) above the low s.
	Shift uint
	// R0 is 2^Shift, the size of one table within a block.
	R0 int
	// MinR is the least power of two in a range: R0, and at least enough
	// for a whole 64-bit word per table.
	MinR int
	// Base is the odd factor of every range: 1 (the paper's powers of
	// two), 3, 5 or 7.
	Base int
	// Load and MaxLoop are the configuration's, defaults applied.
	Load    float64
	MaxLoop int
	// Seed selects the permutations.
	Seed uint64

	perms *perms
}

// entryShift returns the Shift that entries of the given width need for a
// universe of m elements: codes π>>s + 1 must stay below 2^(bits-1).
func entryShift(m uint64, entryBits int) uint {
	maxCode := uint64(1)<<(entryBits-1) - 1 // codes 1..maxCode; 0 is empty
	var s uint
	for maxCode<<s < m {
		s++
	}
	return s
}

// NewLayout returns the layout for sets of the given sizes over a universe
// of the given size (cfg.Universe is ignored). With cfg.EntryBits 0 it
// picks the entry width that minimises PairWords for these sizes.
func NewLayout(universe uint64, sizes []int, cfg Config) (*Layout, error) {
	if universe > 1<<32 {
		return nil, fmt.Errorf("batmap: universe %d above 2^32", universe)
	}
	load := cfg.Load
	if load == 0 {
		load = DefaultLoad
	}
	if !(load > 0 && load <= 64) {
		return nil, fmt.Errorf("batmap: load %v outside (0, 64]", cfg.Load)
	}
	maxLoop := cfg.MaxLoop
	if maxLoop == 0 {
		maxLoop = DefaultMaxLoop
	}
	if maxLoop < 0 {
		return nil, fmt.Errorf("batmap: negative MaxLoop %d", maxLoop)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = DefaultSeed
	}
	for _, n := range sizes {
		if n < 0 || uint64(n) > max(universe, 1) {
			return nil, fmt.Errorf("batmap: set size %d outside [0, universe %d]", n, universe)
		}
	}
	mk := func(eb, base int) *Layout {
		s := entryShift(max(universe, 1), eb)
		r0 := 1 << s
		return &Layout{Universe: universe, EntryBits: eb, Shift: s, R0: r0, MinR: max(r0, 64/eb), Base: base,
			Load: load, MaxLoop: maxLoop, Seed: seed}
	}
	widths := []int{8, 16, 32}
	switch cfg.EntryBits {
	case 8, 16, 32:
		widths = []int{cfg.EntryBits}
	case 0:
	default:
		return nil, fmt.Errorf("batmap: entry width %d bits: want 8, 16 or 32", cfg.EntryBits)
	}
	bases := []int{1, 3, 5, 7}
	switch cfg.Base {
	case 1, 3, 5, 7:
		bases = []int{cfg.Base}
	case 0:
	default:
		return nil, fmt.Errorf("batmap: base %d: want 1, 3, 5 or 7", cfg.Base)
	}
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	var l *Layout
	var best float64
	for _, eb := range widths {
		for _, base := range bases {
			c := mk(eb, base)
			if w := c.pairWordsSorted(sorted); l == nil || w < best {
				l, best = c, w
			}
		}
	}
	if len(sorted) > 0 && l.r64(sorted[len(sorted)-1]) > 1<<30 {
		return nil, fmt.Errorf("batmap: a set of %d elements at load %v needs a range above 2^30", sorted[len(sorted)-1], load)
	}
	l.perms = newPerms(universe, seed)
	return l, nil
}

// R returns the hash range r of a set of n elements: the least Base·2^k at
// least Load·n with 2^k at least MinR. NewLayout refuses layouts whose
// ranges would exceed 2^30.
func (l *Layout) R(n int) int { return int(l.r64(n)) }

func (l *Layout) r64(n int) uint64 {
	want := math.Ceil(l.Load * float64(n) / float64(l.Base))
	if want <= float64(l.MinR) {
		return uint64(l.Base * l.MinR)
	}
	want = min(want, 1<<40)
	return uint64(l.Base) << bits.Len64(uint64(want)-1)
}

// Words returns the number of 32-bit words of the batmap of a set of n
// elements: 3·R(n) entries.
func (l *Layout) Words(n int) int { return 3 * l.R(n) * l.EntryBits / 32 }

// TotalWords returns the words of the batmaps of sets of the given sizes.
func (l *Layout) TotalWords(sizes []int) int64 {
	var w int64
	for _, n := range sizes {
		w += int64(l.Words(n))
	}
	return w
}

// PairWords returns the number of 32-bit words compared to count every
// pair of sets of the given sizes: each pair reads the words of its wider
// batmap (and the narrower one wrapped alongside).
func (l *Layout) PairWords(sizes []int) float64 {
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	return l.pairWordsSorted(sorted)
}

func (l *Layout) pairWordsSorted(sorted []int) float64 {
	var w float64
	for rank, n := range sorted {
		w += float64(rank) * float64(l.Words(n))
	}
	return w
}

// Memory returns the bytes that Build allocates for sets of these sizes:
// the batmaps, their index arrays, the cached permutations and each
// worker's scratch space (the failed elements, usually few, not counted).
func (l *Layout) Memory(sizes []int, threads int) int64 {
	b := 4 * l.TotalWords(sizes)
	// Per set: the sizes Build reads, offsets, ids, sizes and positions
	// by position, widths, the offsets of failed insertions.
	b += int64(len(sizes)) * (8 + 8 + 4 + 4 + 4 + 8 + 8)
	if l.tabulates(sizes) {
		b += 12 * int64(max(l.Universe, 1))
	}
	maxN := 0
	for _, n := range sizes {
		maxN = max(maxN, n)
	}
	b += int64(max(threads, 1)) * (4*3*int64(l.R(maxN)) + 13*int64(maxN))
	return b
}

// tabulates reports whether Build caches the permutations in tables: when
// they are small next to the data.
func (l *Layout) tabulates(sizes []int) bool {
	var total int64
	for _, n := range sizes {
		total += int64(n)
	}
	m := int64(max(l.Universe, 1))
	return m <= 1<<16 || (m <= 1<<26 && m <= 2*total)
}

// String describes the layout in one line.
func (l *Layout) String() string {
	kind := "compressed"
	if l.Shift == 0 {
		kind = "uncompressed"
	}
	return fmt.Sprintf("%d-bit entries (%s, s=%d, r0=%d), ranges %d·2^k >= %d, load %.3g, MaxLoop %d, universe %d",
		l.EntryBits, kind, l.Shift, l.R0, l.Base, l.Base*l.MinR, l.Load, l.MaxLoop, l.Universe)
}

// Hash returns π_t(x) for table t in {0, 1, 2} (tables 1 to 3 of the
// paper): in a batmap of range r, x's position in table t is
// index(t, π_t(x) mod r) and its code π_t(x)>>Shift + 1 (see Layout). GPU
// kernels that probe batmaps for failed elements get it from here.
func (l *Layout) Hash(t int, x uint32) uint32 { return l.perms.pi(t, x) }

// code returns the entry of π value p without its indicator bit.
func (l *Layout) code(p uint32) uint32 { return p>>l.Shift + 1 }

// index returns the entry index of table t (0, 1, 2) at hash position v
// (already reduced modulo the batmap's range; R0 divides the range, so the
// low Shift bits of v are those of π_t(x)).
func (l *Layout) index(t int, v uint32) uint32 {
	return 3*uint32(l.R0)*(v>>l.Shift) + uint32(t)*uint32(l.R0) + v&uint32(l.R0-1)
}

// masks returns the SWAR constants of the count formula for 64-bit words:
// hi has the indicator bit of every entry, lo the lowest bit.
func masks(entryBits int) (hi, lo uint64) {
	switch entryBits {
	case 8:
		return 0x8080808080808080, 0x0101010101010101
	case 16:
		return 0x8000800080008000, 0x0001000100010001
	case 32:
		return 0x8000000080000000, 0x0000000100000001
	}
	panic(fmt.Sprintf("batmap: entry width %d", entryBits))
}
