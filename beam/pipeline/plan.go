package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// Limits size the tiles. A tile covers at most TilePairs pairs and is
// expected to write at most TileOutput lines (by the output's upper bound
// spread evenly over the tiles), unless Blocks fixes the number of blocks
// each side of the pair space is cut into. A zero TilePairs or TileOutput
// is DefaultLimits' (the zero Limits are the defaults); +Inf sets no limit.
type Limits struct {
	Blocks     int
	TilePairs  float64
	TileOutput float64
}

// DefaultLimits are the limits when none are given: 2^32 pairs (seconds to
// a minute of one machine's engines on small sets) and 2^26 lines (about a
// gigabyte of text) a tile.
var DefaultLimits = Limits{TilePairs: 1 << 32, TileOutput: 1 << 26}

// maxTiles bounds the number of tiles: past it, per-tile costs dominate.
const maxTiles = 100_000

// Grid is the cut Plan made, and the statistics it made it from.
type Grid struct {
	// Rows and Cols are the blocks of ids (set ids, or item ids for
	// pairs) of each side; in a self-join Cols equals Rows and only the
	// tiles with the row block at or before the column block exist.
	Rows, Cols []sets.Range
	// Self reports whether the pairs are those of one collection: a
	// self-join (no With), or frequent pairs.
	Self bool
	// Sets are the numbers of sets (transactions for pairs) of the input
	// ([0]) and of With ([1], 0 in a self-join); Kept the numbers of sets the
	// workload keeps (or of the frequent items).
	Sets, Kept [2]int
	// Elements are the collections' numbers of elements (the sums of their
	// sets' sizes), indexed like Sets.
	Elements [2]int64
	// Pairs is the size of the pair space; Output an upper bound on the
	// lines written (Σ over elements of the pairs of sets holding it,
	// over the overlap every reported pair needs), Pairs at most.
	Pairs, Output float64
	// Tiles is the number of tiles.
	Tiles int
}

// String describes the grid for --explain.
func (g *Grid) String() string {
	var b strings.Builder
	side := func(name string, i int) {
		fmt.Fprintf(&b, "%-9s %d sets, %d elements, %d kept\n", name, g.Sets[i], g.Elements[i], g.Kept[i])
	}
	side("input", 0)
	if !g.Self {
		side("with", 1)
	}
	fmt.Fprintf(&b, "pairs     %.4g, output at most %.4g lines\n", g.Pairs, g.Output)
	blocks := func(rs []sets.Range) string {
		var parts []string
		for i, r := range rs {
			if i == 3 && len(rs) > 5 {
				parts = append(parts, "...")
				i = len(rs) - 1
				r = rs[i]
			} else if i > 3 && len(rs) > 5 {
				continue
			}
			parts = append(parts, r.String())
		}
		return strings.Join(parts, " ")
	}
	fmt.Fprintf(&b, "rows      %d blocks: %s\n", len(g.Rows), blocks(g.Rows))
	if !g.Self {
		fmt.Fprintf(&b, "cols      %d blocks: %s\n", len(g.Cols), blocks(g.Cols))
	}
	fmt.Fprintf(&b, "tiles     %d\n", g.Tiles)
	return b.String()
}

// Plan reads the job's collections (Load), checks the job, fills in what
// the workers need (the collections' fingerprints, pairs' absolute
// support from support, the --min-support text) and cuts the pair space
// into tiles within lim. The tiles depend only on the collections, the job
// and lim.
func Plan(ctx context.Context, job *Job, support string, lim Limits) ([]Tile, *Grid, error) {
	if job.Workload == "pairs" && support == "" {
		return nil, nil, badJob("--min-support is required")
	}
	if err := job.Check(); err != nil {
		return nil, nil, err
	}
	if err := lim.check(job.With == ""); err != nil {
		return nil, nil, err
	}
	if lim.TilePairs == 0 {
		lim.TilePairs = DefaultLimits.TilePairs
	}
	if lim.TileOutput == 0 {
		lim.TileOutput = DefaultLimits.TileOutput
	}
	r, sum, err := Load(ctx, job.Input)
	if err != nil {
		return nil, nil, err
	}
	job.InputSum = sum
	var s *sets.Collection
	if job.With != "" {
		if s, job.WithSum, err = Load(ctx, job.With); err != nil {
			return nil, nil, err
		}
	}
	var g *Grid
	if job.Workload == "pairs" {
		if job.MinSupport, err = pairs.ParseSupport(support, r.Len()); err != nil {
			return nil, nil, badJob("--min-support: %v", err)
		}
		g = itemGrid(r, job.MinSupport, lim)
	} else {
		g, err = setGrid(job, r, s, lim)
		if err != nil {
			return nil, nil, err
		}
	}
	// Refused before the list is made: a grid over too many tiles would
	// take gigabytes to list.
	if n := gridTiles(len(g.Rows), len(g.Cols), g.Self); n > maxTiles {
		return nil, nil, badJob("%.0f tiles, over %d: raise --tile-pairs or --tile-output", n, maxTiles)
	}
	var tiles []Tile
	for a, rg := range g.Rows {
		for b, cg := range g.Cols {
			if g.Self && b < a {
				continue
			}
			tiles = append(tiles, Tile{Index: len(tiles), RowLo: rg.Lo, RowHi: rg.Hi, ColLo: cg.Lo, ColHi: cg.Hi})
		}
	}
	for i := range tiles {
		tiles[i].Tiles = len(tiles)
	}
	g.Tiles = len(tiles)
	return tiles, g, nil
}

// check refuses limits that mean nothing (NaN, negative), and a --tiles
// whose grid has more than maxTiles tiles whatever the collection: that is
// found before the collection is read, and before a list of billions of
// tiles is made.
func (lim Limits) check(self bool) error {
	if lim.Blocks < 0 {
		return badJob("--tiles %d is negative", lim.Blocks)
	}
	for _, l := range []struct {
		flag string
		v    float64
	}{{"--tile-pairs", lim.TilePairs}, {"--tile-output", lim.TileOutput}} {
		if !(l.v >= 0) {
			return badJob("%s %v: want a positive number (0: the default)", l.flag, l.v)
		}
	}
	if n := gridTiles(lim.Blocks, lim.Blocks, self); n > maxTiles {
		most := math.Sqrt(maxTiles)
		if self {
			most = (math.Sqrt(8*maxTiles+1) - 1) / 2
		}
		return badJob("--tiles %d: over %d tiles: at most %d blocks a side", lim.Blocks, maxTiles, int(most))
	}
	return nil
}

// gridTiles is the number of tiles of a grid of rows by cols blocks (in a
// self-join, rows = cols, the tiles on and above the diagonal), as a
// float64: it must not overflow when the blocks are many.
func gridTiles(rows, cols int, self bool) float64 {
	if self {
		return float64(rows) * float64(rows+1) / 2
	}
	return float64(rows) * float64(cols)
}

// setGrid cuts the sets of r (and s) into blocks for allpairs,
// containment and simjoin.
func setGrid(job *Job, r, s *sets.Collection, lim Limits) (*Grid, error) {
	g := &Grid{Self: s == nil}
	// need is the overlap every reported pair has at least.
	need := 1
	dropEmpty := true
	switch job.Workload {
	case "allpairs":
		need, dropEmpty = job.MinOverlap, false
	case "containment":
		d, _ := allpairs.ParseRatio(job.MinDegree)
		if d.Num == 0 {
			need, dropEmpty = 0, true
		}
	case "simjoin":
		th, _ := job.simThreshold()
		if th.Measure == simjoin.Overlap {
			need = int(min(th.Num/max(th.Den, 1), math.MaxInt32))
		}
	}
	largest := 0
	if job.Workload != "simjoin" {
		largest = job.Largest
	}
	kr := kept(r, dropEmpty, largest)
	g.Sets[0], g.Elements[0], g.Kept[0] = r.Len(), int64(len(r.Elements)), count(kr)
	ks := kr
	if s != nil {
		ks = kept(s, dropEmpty, largest)
		g.Sets[1], g.Elements[1], g.Kept[1] = s.Len(), int64(len(s.Elements)), count(ks)
	}
	nr, ns := float64(g.Kept[0]), float64(g.Kept[1])
	if g.Self {
		g.Pairs = nr * (nr - 1) / 2
	} else {
		g.Pairs = nr * ns
	}
	g.Output = g.Pairs
	if need > 0 {
		g.Output = min(g.Pairs, scanWork(r, kr, s, ks)/float64(need))
	}
	tiles := max(g.Pairs/lim.TilePairs, g.Output/lim.TileOutput)
	if g.Self {
		blocks := lim.Blocks
		if blocks == 0 {
			blocks = selfBlocks(tiles, r.Len())
		}
		g.Rows = cut(weights(r, kr), blocks)
		g.Cols = g.Rows
		return g, nil
	}
	br, bs := lim.Blocks, lim.Blocks
	if lim.Blocks == 0 {
		// Cut the larger side more: tiles of about equal sides.
		tiles = max(tiles, 1)
		br = blocksOf(math.Sqrt(tiles*max(nr, 1)/max(ns, 1)), int(nr))
		bs = blocksOf(tiles/float64(br), int(ns))
	}
	g.Rows = cut(weights(r, kr), br)
	g.Cols = cut(weights(s, ks), bs)
	return g, nil
}

// selfBlocks is the number of blocks that cuts a self-join's pair space
// of n ids into tiles of at most 1/tiles of it: with g blocks a tile off
// the diagonal holds about 2/g² of the pairs (and of the output), one on
// it half that.
func selfBlocks(tiles float64, n int) int {
	return blocksOf(math.Sqrt(2*tiles), n)
}

// blocksOf rounds a number of blocks up, to between 1 and the n ids there
// are to cut. It clamps before converting: tiny limits make it huge, or
// +Inf, which no int holds.
func blocksOf(blocks float64, n int) int {
	return int(max(1, min(math.Ceil(blocks), float64(n))))
}

// kept marks the sets a workload joins: without empty sets when dropEmpty,
// and only the largest (ties to the lower id) when largest > 0.
func kept(c *sets.Collection, dropEmpty bool, largest int) []bool {
	k := make([]bool, c.Len())
	var ids []int
	for i := range k {
		if !dropEmpty || c.SetLen(i) > 0 {
			k[i] = true
			ids = append(ids, i)
		}
	}
	if largest > 0 && largest < len(ids) {
		slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(c.SetLen(b), c.SetLen(a)) })
		for _, i := range ids[largest:] {
			k[i] = false
		}
	}
	return k
}

func count(k []bool) int {
	n := 0
	for _, b := range k {
		if b {
			n++
		}
	}
	return n
}

// weights are what the blocks balance: a kept set weighs its size plus
// the average size, so that blocks hold about as many elements (the work
// of counting by inverted lists) and as many sets (the pairs) as one
// another.
func weights(c *sets.Collection, k []bool) []float64 {
	w := make([]float64, c.Len())
	avg := float64(len(c.Elements)) / float64(max(c.Len(), 1))
	for i := range w {
		if k[i] {
			w[i] = float64(c.SetLen(i)) + avg
		}
	}
	return w
}

// cut divides ids [0, len(w)) into at most blocks ranges of about equal
// weight, leaving out the empty ones; the last ends at len(w).
func cut(w []float64, blocks int) []sets.Range {
	n := len(w)
	blocks = min(max(blocks, 1), max(n, 1))
	total := 0.0
	for _, x := range w {
		total += x
	}
	var out []sets.Range
	lo, acc := 0, 0.0
	for i, x := range w {
		acc += x
		if b := len(out) + 1; b < blocks && acc >= total*float64(b)/float64(blocks) {
			out = append(out, sets.Range{Lo: lo, Hi: i + 1})
			lo = i + 1
		}
	}
	if lo < n || len(out) == 0 {
		out = append(out, sets.Range{Lo: lo, Hi: n})
	}
	if len(out) == 1 {
		out[0] = sets.Range{} // one block: every id
	}
	return out
}

// scanWork is Σ over elements of the pairs of kept sets holding it: of r
// (s nil), or of one set of r and one of s.
func scanWork(r *sets.Collection, kr []bool, s *sets.Collection, ks []bool) float64 {
	dfr := frequencies(r, kr)
	if s == nil {
		w := 0.0
		for _, f := range dfr {
			w += float64(f.n) * float64(f.n-1) / 2
		}
		return w
	}
	dfs := frequencies(s, ks)
	w, j := 0.0, 0
	for _, f := range dfr {
		for j < len(dfs) && dfs[j].v < f.v {
			j++
		}
		if j < len(dfs) && dfs[j].v == f.v {
			w += float64(f.n) * float64(dfs[j].n)
		}
	}
	return w
}

type freq struct {
	v uint32
	n int64
}

// frequencies returns each element of c's kept sets with the number of
// those sets holding it, by increasing element.
func frequencies(c *sets.Collection, k []bool) []freq {
	var maxV uint32
	for _, v := range c.Elements {
		maxV = max(maxV, v)
	}
	var out []freq
	if int64(maxV) < max(1<<24, 2*int64(len(c.Elements))) {
		n := make([]int64, int(maxV)+1)
		for i := range c.Len() {
			if k[i] {
				for _, v := range c.Set(i) {
					n[v]++
				}
			}
		}
		for v, x := range n {
			if x > 0 {
				out = append(out, freq{uint32(v), x})
			}
		}
		return out
	}
	var all []uint32
	for i := range c.Len() {
		if k[i] {
			all = append(all, c.Set(i)...)
		}
	}
	slices.Sort(all)
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j] == all[i] {
			j++
		}
		out = append(out, freq{all[i], int64(j - i)})
		i = j
	}
	return out
}

// itemGrid cuts the frequent items of the transactions tx into blocks of
// item ids for pairs: items by increasing id, blocks of about equal
// support, so that the tiles' tidlists are of about equal length.
func itemGrid(tx *sets.Collection, support int, lim Limits) *Grid {
	g := &Grid{Self: true, Sets: [2]int{tx.Len()}, Elements: [2]int64{int64(len(tx.Elements))}}
	all := make([]bool, tx.Len())
	for i := range all {
		all[i] = true
	}
	var items []freq
	for _, f := range frequencies(tx, all) {
		if f.n >= int64(support) {
			items = append(items, f)
		}
	}
	g.Kept[0] = len(items)
	f := float64(len(items))
	g.Pairs = f * (f - 1) / 2
	// Every frequent pair occurs in support transactions or more: the
	// pairs of frequent items of the transactions bound their number.
	steps := 0.0
	for i := range tx.Len() {
		n := 0.0
		for _, x := range tx.Set(i) {
			if _, ok := slices.BinarySearchFunc(items, x, func(f freq, x uint32) int { return cmp.Compare(f.v, x) }); ok {
				n++
			}
		}
		steps += n * (n - 1) / 2
	}
	g.Output = min(g.Pairs, steps/float64(max(support, 1)))
	blocks := lim.Blocks
	if blocks == 0 {
		blocks = selfBlocks(max(g.Pairs/lim.TilePairs, g.Output/lim.TileOutput), len(items))
	}
	w := make([]float64, len(items))
	for i, it := range items {
		w[i] = float64(it.n)
	}
	// Blocks of ranks become ranges of item ids: from the block's first
	// item to the next block's, the first from 0 and the last unbounded.
	for _, rg := range cut(w, blocks) {
		if rg.All() {
			g.Rows = []sets.Range{{}}
			break
		}
		lo := 0
		if rg.Lo > 0 {
			lo = int(items[rg.Lo].v)
		}
		hi := 0
		if rg.Hi < len(items) {
			hi = int(items[rg.Hi].v)
		}
		g.Rows = append(g.Rows, sets.Range{Lo: lo, Hi: hi})
	}
	g.Cols = g.Rows
	return g
}
