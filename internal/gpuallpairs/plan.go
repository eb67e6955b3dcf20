package gpuallpairs

import "github.com/xsect/xsect/internal/allpairs"

// grid is how a run covers the counts: super-tiles of at most sr × sc
// counts, each computed in one go on the device and copied to the host in
// one transfer, cut into the caller's tiles of rows × cols (for pair plans,
// a super-tile is one tile). sr is a multiple of rows and sc of cols.
type grid struct {
	kr, ks     int
	self       bool
	rows, cols int
	sr, sc     int
}

// super is one super-tile: rows r0.. and columns c0.. of the counts.
type super struct{ r0, c0, rows, cols int }

// part is one of the caller's tiles inside a super-tile, and where its
// counts start in the super-tile's packed output.
type part struct {
	row0, col0, rows, cols int
	off                    int
}

// newGrid plans the super-tiles of p: at most maxCounts counts each, about
// prefCols columns wide (the technique's preference), on the caller's grid
// for tile plans.
func newGrid(p *allpairs.Problem, maxCounts int64, prefCols int) grid {
	g := grid{kr: p.R.Len(), ks: p.S.Len(), self: p.Self}
	return g.shape(p, maxCounts, prefCols)
}

func (g grid) shape(p *allpairs.Problem, maxCounts int64, prefCols int) grid {
	prefCols = max(prefCols, 1)
	maxCounts = max(maxCounts, 1)
	if rows, cols, ok := p.Tiled(); ok {
		g.rows, g.cols = rows, cols
		nc := clamp(prefCols/cols, 1, ceilDiv(g.ks, cols))
		g.sc = nc * cols
		nr := clamp(int(maxCounts/int64(g.sc)/int64(rows)), 1, ceilDiv(g.kr, rows))
		g.sr = nr * rows
		return g
	}
	g.sc = clamp(prefCols, 1, max(g.ks, 1))
	g.sr = clamp(int(maxCounts/int64(g.sc)), 1, max(g.kr, 1))
	g.rows, g.cols = g.sr, g.sc
	return g
}

func clamp(x, lo, hi int) int { return max(lo, min(x, hi)) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// supers returns the super-tiles in row-major order; in a self-join only
// those with an entry above the diagonal.
func (g grid) supers() []super {
	var out []super
	for r0 := 0; r0 < g.kr; r0 += g.sr {
		for c0 := 0; c0 < g.ks; c0 += g.sc {
			s := super{r0, c0, min(g.sr, g.kr-r0), min(g.sc, g.ks-c0)}
			if g.self && s.r0 >= s.c0+s.cols-1 {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// parts returns the caller's tiles of s that have a pair to report, with
// their offsets in the packed layout of the repack kernel: tiles one after
// another in row-major order of tiles, each row-major.
func (g grid) parts(s super) []part {
	var out []part
	for a := 0; a*g.rows < s.rows; a++ {
		h := min(g.rows, s.rows-a*g.rows)
		for b := 0; b*g.cols < s.cols; b++ {
			w := min(g.cols, s.cols-b*g.cols)
			t := part{row0: s.r0 + a*g.rows, col0: s.c0 + b*g.cols, rows: h, cols: w}
			t.off = a*g.rows*s.cols + b*g.cols*h
			if g.self && t.row0 >= t.col0+t.cols-1 {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// packedIndex is the repack kernel's placement of entry (x, y) of a
// super-tile of sr × sc counts cut into tiles of rows × cols; tests check
// the kernel's arithmetic against parts with it.
func packedIndex(x, y, sr, sc, rows, cols int) int {
	a, xr, b, yr := x/rows, x%rows, y/cols, y%cols
	h, w := min(rows, sr-a*rows), min(cols, sc-b*cols)
	return a*rows*sc + b*cols*h + xr*w + yr
}

// pairsIn returns the number of pairs of a tile: all of them, or in a
// self-join those above the diagonal.
func pairsIn(self bool, row0, col0, rows, cols int) int64 {
	if !self {
		return int64(rows) * int64(cols)
	}
	var n int64
	for i := row0; i < row0+rows; i++ {
		n += int64(max(0, col0+cols-max(i+1, col0)))
	}
	return n
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }
