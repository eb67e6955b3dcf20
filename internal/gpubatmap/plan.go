package gpubatmap

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/xsect/xsect/internal/gpurt"
)

// The kernel's shape (kernels/batmap.cu must agree): a block of 256
// threads owns a tile of tileSide × tileSide pairs, each thread an 8 × 8
// register micro-tile; batmaps are staged chunkWords 32-bit words at a
// time.
const (
	tileSide   = 128
	chunkWords = 16
)

// mode is what a run delivers.
type mode uint32

// Modes; the kernel's mode argument takes these values.
const (
	modeDense mode = iota // every count of the upper triangle, dense
	modePairs             // the pairs whose count may reach their threshold, compacted
	modeCount             // the number of qualifying pairs; pairs with failed elements compacted
)

// group is a run of at most tileSide batmaps of one width, consecutive
// in position order; tiles are pairs of groups.
type group struct {
	start, len int    // positions start .. start+len-1
	width      int    // 32-bit words of each batmap
	base       uint64 // word offset of the first batmap
}

// tile is a block of pairs: rows of group g, columns of group h, g <= h,
// so that every row batmap is at most as wide as every column batmap.
type tile struct{ g, h uint32 }

// batch is a range of row groups [g0, g1) and the tiles that have them as
// rows; one kernel launch computes it.
type batch struct {
	g0, g1     int
	rows       [2]int // positions rows[0] .. rows[1]-1
	tiles      []tile // heaviest first
	pairs      int64  // pairs (p, q), p < q, with p among the rows
	entries    int64  // the most entries the kernel may write (dense: cells)
	wordPairs  float64
	firstTile  int // index of tiles[0] in plan.tiles
	totalTiles int
}

// plan is a run's shape: groups, tiles in launch order, batches, device
// memory.
type plan struct {
	n       int // batmaps
	mode    mode
	groups  []group
	tiles   []tile // all batches' tiles, batch after batch
	batches []batch
	wide    bool  // 8-byte entries: counts may reach 2^18
	words   int64 // 32-bit words of all batmaps
	// Device bytes: resident (batmaps, per-position arrays, groups,
	// tiles) and per slot (counters, runs, output), for slots slots.
	resident, perSlot int64
	slots             int
	maxTiles          int   // tiles of the largest batch
	maxEntries        int64 // entries of the largest batch
	wordPairs         float64
}

// memory is the plan's device bytes.
func (pl *plan) memory() int64 { return pl.resident + int64(pl.slots)*pl.perSlot }

// entryBytes is the size of one output entry: a dense count, or a
// compacted pair (4 bytes: row, column and count below 2^18; 8 when counts
// may be larger).
func (pl *plan) entryBytes() int64 {
	if pl.mode != modeDense && pl.wide {
		return 8
	}
	return 4
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groupsOf splits positions into groups: runs of equal width (positions
// are sorted by width), cut every tileSide.
func groupsOf(offsets []uint64) []group {
	n := len(offsets) - 1
	var gs []group
	for p := 0; p < n; {
		w := int(offsets[p+1] - offsets[p])
		q := p + 1
		for q < n && q-p < tileSide && int(offsets[q+1]-offsets[q]) == w {
			q++
		}
		gs = append(gs, group{start: p, len: q - p, width: w, base: offsets[p]})
		p = q
	}
	return gs
}

// tileWordPairs is the work of a tile as the kernel does it: every pair of
// the full tile over the column width rounded up to whole chunks.
func tileWordPairs(w int) float64 {
	return float64(tileSide) * tileSide * float64(roundUp(w, chunkWords))
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// planInput is what planning needs from the batmaps.
type planInput struct {
	offsets []uint64 // word offsets by position, n+1
	maxSize int      // largest set
}

// newPlan plans a run in mode m: tiles, batches of at most maxEntries
// entries (dense cells, or pairs that may be written; none in modeCount),
// and the device memory, which must fit in budget bytes (it halves the
// batches until it does, down to one row group each).
func newPlan(in planInput, m mode, maxEntries int64, budget int64) (*plan, error) {
	return newPlanFailed(in, m, maxEntries, budget, 0)
}

// newPlanFailed is newPlan with failBytes more resident bytes: the failed
// elements, their hashes and offsets.
func newPlanFailed(in planInput, m mode, maxEntries, budget, failBytes int64) (*plan, error) {
	return newPlanShared(in, m, maxEntries, budget, failBytes, 0)
}

// newPlanShared is newPlanFailed cut into at least about minBatches
// batches (as many as there are row groups at most), of about equal work,
// for owners that share them.
func newPlanShared(in planInput, m mode, maxEntries, budget, failBytes int64, minBatches int) (*plan, error) {
	n := len(in.offsets) - 1
	pl := &plan{n: n, mode: m, groups: groupsOf(in.offsets), wide: in.maxSize >= 1<<18, slots: 2}
	pl.words = int64(in.offsets[n])
	// Per row group: pairs, entries that may be written, work.
	G := len(pl.groups)
	gPairs := make([]int64, G)
	gEntries := make([]int64, G)
	gWork := make([]float64, G)
	var suffixWork float64 // Σ over column groups h >= g of their tile work
	for g := G - 1; g >= 0; g-- {
		gr := pl.groups[g]
		suffixWork += tileWordPairs(gr.width)
		gWork[g] = suffixWork
		for p := gr.start; p < gr.start+gr.len; p++ {
			pairs := int64(n - 1 - p)
			gPairs[g] += pairs
			if m == modePairs {
				gEntries[g] += pairs // every pair may qualify
			}
		}
	}
	fixed := 4*pl.words + 8*int64(n) + 24*int64(G) + failBytes
	maxWork := math.Inf(1)
	if minBatches > 1 {
		var all float64
		for _, w := range gWork {
			all += w
		}
		maxWork = all / float64(minBatches)
	}
	for {
		pl.batches = pl.batches[:0]
		pl.maxTiles, pl.maxEntries = 0, 0
		for g0 := 0; g0 < G; {
			b := batch{g0: g0}
			for g := g0; g < G; g++ {
				e := gEntries[g]
				if m == modeDense {
					// Dense rows span the columns from the batch's first
					// row to the last.
					e = int64(pl.groups[g].len) * int64(n-pl.groups[g0].start)
				}
				if g > g0 && (b.entries+e > maxEntries || b.wordPairs+gWork[g] > maxWork) {
					break
				}
				b.entries += e
				b.pairs += gPairs[g]
				b.wordPairs += gWork[g]
				b.g1 = g + 1
			}
			b.rows = [2]int{pl.groups[b.g0].start, pl.groups[b.g1-1].start + pl.groups[b.g1-1].len}
			b.totalTiles = 0
			for g := b.g0; g < b.g1; g++ {
				b.totalTiles += G - g
			}
			pl.maxTiles = max(pl.maxTiles, b.totalTiles)
			pl.maxEntries = max(pl.maxEntries, b.entries)
			pl.batches = append(pl.batches, b)
			g0 = b.g1
		}
		pl.resident = fixed + 8*int64(G)*int64(G+1)/2
		pl.perSlot = 16 + 8*int64(pl.maxTiles) + pl.entryBytes()*max(pl.maxEntries, 1)
		if pl.memory() <= budget {
			break
		}
		if maxEntries <= 1 || len(pl.batches) == G {
			return nil, fmt.Errorf("%w: needs %s of device memory (batmaps %s), %s available",
				errTooLarge, gpurt.FormatBytes(uint64(pl.memory())), gpurt.FormatBytes(uint64(4*pl.words)), gpurt.FormatBytes(uint64(max(budget, 0))))
		}
		maxEntries /= 2
	}
	// The tiles, batch by batch, heaviest first within a batch (the block
	// scheduler then ends a launch with the light ones).
	total := 0
	for i := range pl.batches {
		total += pl.batches[i].totalTiles
	}
	pl.tiles = make([]tile, 0, total)
	for i := range pl.batches {
		b := &pl.batches[i]
		b.firstTile = len(pl.tiles)
		for g := b.g0; g < b.g1; g++ {
			for h := g; h < G; h++ {
				pl.tiles = append(pl.tiles, tile{uint32(g), uint32(h)})
			}
		}
		b.tiles = pl.tiles[b.firstTile:len(pl.tiles):len(pl.tiles)]
		slices.SortStableFunc(b.tiles, func(x, y tile) int {
			return cmp.Compare(pl.groups[y.h].width, pl.groups[x.h].width)
		})
		pl.wordPairs += b.wordPairs
	}
	return pl, nil
}
