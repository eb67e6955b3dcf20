package gpuintersect

import (
	"fmt"
	"slices"
)

// Sizes of the kernels' work units; they must match the defaults in
// kernels/sisi.cu.
const (
	threads     = 256
	ipItems     = 15 // merge steps per thread in ip-obs and ip-hi blocks
	probeItems  = 8
	probeChunk  = threads * probeItems // lookups per probe-family unit
	bmWords     = 8
	bmChunk     = threads * bmWords // bitmap words per naive-bitmap unit
	obsSplitter = 4096              // OBS: splitters cached in shared memory
)

// trim returns the parts of a and b inside the value range they share:
// nothing outside it can be in the intersection, and nothing there needs to
// reach the device.
func trim(a, b []uint32) ([]uint32, []uint32) {
	if len(a) == 0 || len(b) == 0 {
		return nil, nil
	}
	lo, hi := max(a[0], b[0]), min(a[len(a)-1], b[len(b)-1])
	if lo > hi {
		return nil, nil
	}
	return window(a, lo, hi), window(b, lo, hi)
}

// window returns the elements of s in [lo, hi].
func window(s []uint32, lo, hi uint32) []uint32 {
	i, _ := slices.BinarySearch(s, lo)
	j := upperBound(s, hi)
	return s[i:j]
}

// upperBound returns the index of the first element > x.
func upperBound(s []uint32, x uint32) int {
	if x == ^uint32(0) {
		return len(s)
	}
	i, _ := slices.BinarySearch(s, x+1)
	return i
}

// tile is one piece of a pairwise problem that fits on the device: the
// elements of a and b with values in [lo, hi].
type tile struct {
	lo, hi uint32
	a0, a1 int // a[a0:a1]
	b0, b1 int // b[b0:b1]
}

func (t tile) elems() int { return t.a1 - t.a0 + t.b1 - t.b0 }

// planTiles splits the intersection of a and b (both trimmed to their
// shared range, non-empty) into value ranges, each holding at most
// maxElems elements of a and b together and, if maxSpan > 0, spanning at
// most maxSpan values. Splitting by value, not by position, keeps every
// match inside one tile. Tiles that miss a or b entirely are left out.
func planTiles(a, b []uint32, maxElems int, maxSpan uint64) ([]tile, error) {
	if maxElems < 2 {
		return nil, fmt.Errorf("gpuintersect: too little device memory for any work (%d elements per tile)", maxElems)
	}
	if len(a) == 0 || len(b) == 0 {
		return nil, nil
	}
	lo, hi := uint64(max(a[0], b[0])), uint64(min(a[len(a)-1], b[len(b)-1]))
	var tiles []tile
	// The first elements >= v. (Trimming is not idempotent: a trimmed set
	// may still start below the other's first element.)
	ia, _ := slices.BinarySearch(a, uint32(lo))
	ib, _ := slices.BinarySearch(b, uint32(lo))
	for v := lo; v <= hi; {
		// The largest end e in [v, limit] whose tile holds <= maxElems.
		limit := hi
		if maxSpan > 0 && v+maxSpan-1 < limit {
			limit = v + maxSpan - 1
		}
		fits := func(e uint64) bool {
			return upperBound(a, uint32(e))-ia+upperBound(b, uint32(e))-ib <= maxElems
		}
		e := limit
		if !fits(limit) {
			// Binary search for the last e that fits; e = v always fits,
			// since one value is at most one element of each set.
			l, h := v, limit // fits(l), !fits(h)
			for h-l > 1 {
				m := l + (h-l)/2
				if fits(m) {
					l = m
				} else {
					h = m
				}
			}
			e = l
		}
		ja, jb := upperBound(a, uint32(e)), upperBound(b, uint32(e))
		if ja > ia && jb > ib {
			tiles = append(tiles, tile{lo: uint32(v), hi: uint32(e), a0: ia, a1: ja, b0: ib, b1: jb})
		}
		ia, ib = ja, jb
		v = e + 1
		if ia == len(a) || ib == len(b) {
			break
		}
		// Skip values where neither set has elements: start at the next
		// element of either.
		v = max(v, uint64(min(a[ia], b[ib])))
	}
	return tiles, nil
}

// memoryNeed is what a method needs on the device beyond fixed overheads:
// bytes per input element, and for the bitmap methods, bitmaps per value
// of the shared range (1/8 byte each).
type memoryNeed struct {
	perElem float64
	bitmaps int
}

func (m Method) need(materialise bool) memoryNeed {
	n := memoryNeed{perElem: 4.05} // inputs, splits, counts and offsets
	switch m {
	case HI:
		n.perElem += 8 // a table of up to 4x the smaller set, which is at most half
	case Bitmap:
		n.bitmaps = 2
	case BitmapDynamic:
		n.bitmaps = 1
	}
	if materialise {
		n.perElem += 2 // the output: at most the smaller set
	}
	return n
}

// limits turns a memory budget in bytes into tile limits for planTiles.
func (n memoryNeed) limits(budget uint64) (maxElems int, maxSpan uint64) {
	if n.bitmaps == 0 {
		return int(min(float64(budget)/n.perElem, 1<<40)), 0
	}
	// Half for the elements, half for the bitmaps.
	maxElems = int(min(float64(budget/2)/n.perElem, 1<<40))
	maxSpan = budget / 2 / uint64(n.bitmaps) * 8 / 1024 * 1024 // whole words
	return maxElems, min(maxSpan, 1<<32)
}
