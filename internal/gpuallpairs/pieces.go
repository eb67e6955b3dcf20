package gpuallpairs

import (
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

// Collections larger than the device's memory are processed in pieces:
// runs of consecutive sets of R and of S, cut at super-tile boundaries so
// that every super-tile lies in one piece of each. The planner keeps S in
// one piece when R's pieces then fit twice beside it; otherwise S is cut
// too. Blocks of super-tiles run S piece by S piece, and within one, R
// piece by R piece: two R pieces share the device in turns, the next one
// uploaded in chunks between the super-tiles of the current one, so that
// the copies overlap the kernels. Changing S's piece waits for the device.

// span is the sets [lo, hi) of a collection.
type span struct{ lo, hi int }

func (s span) len() int { return s.hi - s.lo }

// Roles of a piece: the rows' side, the columns' side, or both (the whole
// collection of a self-join that fits).
const (
	roleR = 1 << iota
	roleS
)

// csrBytes is the device memory of sets sp of c: elements and offsets.
func csrBytes(c *sets.Collection, sp span) int64 {
	return 4*int64(c.Offsets[sp.hi]-c.Offsets[sp.lo]) + 8*int64(sp.len()+1)
}

// cutPieces cuts [0, k) into pieces of whole groups of step sets, as few
// as possible, each of at most limit bytes; ok is false if one group alone
// is over limit.
func cutPieces(k, step int, limit int64, bytes func(span) int64) (out []span, ok bool) {
	step = max(step, 1)
	for lo := 0; lo < k; {
		hi := min(k, lo+step)
		if bytes(span{lo, hi}) > limit {
			return nil, false
		}
		// Grow by doubling, then back off by halving: O(log) probes.
		n := 1
		for hi < k && bytes(span{lo, min(k, hi+n*step)}) <= limit {
			hi = min(k, hi+n*step)
			n *= 2
		}
		for n > 0 {
			if hi < k && bytes(span{lo, min(k, hi+n*step)}) <= limit {
				hi = min(k, hi+n*step)
			}
			n /= 2
		}
		out = append(out, span{lo, hi})
		lo = hi
	}
	if k == 0 {
		out = []span{{0, 0}}
	}
	return out, true
}

// pieceCap is what a piece buffer must hold: sets, elements and the
// technique's structure.
type pieceCap struct {
	sets  int
	elems int64
	aux   int64
}

// parts returns the bytes of the elements and of the offsets, each
// rounded up to keep the next part aligned; aux follows them.
func (c pieceCap) parts() (elems, offs int64) {
	return (4*c.elems + 255) &^ 255, (8*int64(c.sets+1) + 255) &^ 255
}

func (c pieceCap) bytes() int64 {
	e, o := c.parts()
	return e + o + max(c.aux, 0)
}

// piece is a device buffer holding sets set0 .. set0+n of R or S: their
// elements and offsets (from 0), and aux, the technique's structure over
// them (matrix rows, bitmaps, or inverted lists).
type piece struct {
	role        int
	loaded      bool
	sp          span
	buf         gpurt.Buffer // holds elems, offs and aux, cut for each piece
	elems, offs gpurt.Buffer
	aux         gpurt.Buffer
	ev          *gpurt.Event // recorded once it is built
	lastUse     int          // the last super-tile queued on it
}

// Uploads from Go memory go through a ring of pinned slots (gpurt.Stager):
// goroutines fill half of it while the device copies the other half. Small
// slots: a run pins them at its start, on its critical path, and 16 MiB in
// 1 MiB slots uploads within 15% of 64 MiB in 4 MiB ones once pinned
// (BenchmarkStager, docs/GPU.md).
const (
	stageSlots = 16
	stageBytes = 1 << 20
)

// piecePlan cuts p into pieces that fit in left bytes (after the fixed
// structures and the slots), with bytesR and bytesS the device bytes of a
// piece of R and of S.
func piecePlan(p *allpairs.Problem, g grid, left int64, bytesR, bytesS func(span) int64) (rp, sp []span, rBufs int, ok bool) {
	kr, ks := p.R.Len(), p.S.Len()
	if whole := bytesS(span{0, ks}); whole <= left {
		if rp, ok = cutPieces(kr, g.sr, (left-whole)/2, bytesR); ok {
			return rp, []span{{0, ks}}, min(2, len(rp)), true
		}
	}
	if sp, ok = cutPieces(ks, g.sc, left/2, bytesS); !ok {
		return nil, nil, 0, false
	}
	if rp, ok = cutPieces(kr, g.sr, left/4, bytesR); !ok {
		return nil, nil, 0, false
	}
	return rp, sp, min(2, len(rp)), true
}
