package gpuallpairs

import (
	"sync"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/overlap"
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

// Upload from Go memory goes through pinned staging buffers in two banks:
// goroutines fill one bank while the device copies the other.
const (
	stageBytes = 4 << 20
	stageBank  = 8
)

type stageSlot struct {
	buf  *gpurt.HostBuffer
	ev   *gpurt.Event
	used bool
}

// uploader copies Go memory to device buffers on one stream, a few chunks
// at a time, so that an upload can be spread between other work.
type uploader struct {
	st   *state
	s    *gpurt.Stream
	jobs []upJob
	left int // bytes not queued yet
}

type upJob struct {
	dst gpurt.Buffer
	src []byte
	off int
}

// add queues the copy of src to dst; src must not change until the
// uploader is done.
func (u *uploader) add(dst gpurt.Buffer, src []byte) {
	if len(src) > 0 {
		u.jobs = append(u.jobs, upJob{dst: dst, src: src})
		u.left += len(src)
	}
}

func (u *uploader) done() bool { return len(u.jobs) == 0 }

// flush queues everything left.
func (u *uploader) flush(c *gpurt.Ctx) error {
	for !u.done() {
		if err := u.step(c, 1<<62); err != nil {
			return err
		}
	}
	return nil
}

// step queues at least one chunk and about n bytes. Small copies go
// straight from Go memory (the driver stages them before returning);
// large ones through the staging banks, filled by goroutines in parallel.
func (u *uploader) step(c *gpurt.Ctx, n int) error {
	type chunk struct {
		dst  gpurt.Buffer
		src  []byte
		slot *stageSlot
	}
	var batch []chunk
	for len(u.jobs) > 0 && (len(batch) == 0 || n > 0) && len(batch) < stageBank {
		j := &u.jobs[0]
		if len(j.src) <= stageBytes && j.off == 0 {
			if err := c.CopyToDeviceAsync(j.dst, j.src, u.s); err != nil {
				return err
			}
			n -= len(j.src)
			u.left -= len(j.src)
			u.jobs = u.jobs[1:]
			if len(batch) == 0 && n <= 0 {
				return nil
			}
			continue
		}
		m := min(stageBytes, len(j.src)-j.off)
		sl, err := u.st.stageSlot(c)
		if err != nil {
			return err
		}
		batch = append(batch, chunk{dst: j.dst.Slice(j.off, m), src: j.src[j.off : j.off+m], slot: sl})
		j.off += m
		n -= m
		u.left -= m
		if j.off == len(j.src) {
			u.jobs = u.jobs[1:]
		}
	}
	var wg sync.WaitGroup
	for _, ch := range batch {
		wg.Go(func() { copy(ch.slot.buf.Bytes(), ch.src) })
	}
	wg.Wait()
	for _, ch := range batch {
		if err := c.CopyToDeviceAsync(ch.dst, ch.slot.buf.Bytes()[:len(ch.src)], u.s); err != nil {
			return err
		}
		if err := c.Record(ch.slot.ev, u.s); err != nil {
			return err
		}
		ch.slot.used = true
	}
	return nil
}

// stageSlot returns the next staging buffer, once the device has read
// what it held.
func (st *state) stageSlot(c *gpurt.Ctx) (*stageSlot, error) {
	if st.stage == nil {
		for range 2 * stageBank {
			h, err := c.AllocHost(stageBytes)
			if err != nil {
				return nil, err
			}
			ev, err := c.NewEvent()
			if err != nil {
				c.FreeHost(h)
				return nil, err
			}
			st.stage = append(st.stage, stageSlot{buf: h, ev: ev})
		}
	}
	sl := &st.stage[st.stageNext]
	st.stageNext = (st.stageNext + 1) % len(st.stage)
	if sl.used {
		if err := c.Wait(sl.ev); err != nil {
			return nil, err
		}
		sl.used = false
	}
	return sl, nil
}

// upload queues the copy of src to dst on s; src may change once it
// returns.
func (st *state) upload(c *gpurt.Ctx, s *gpurt.Stream, dst gpurt.Buffer, src []byte) error {
	u := uploader{st: st, s: s}
	u.add(dst, src)
	return u.flush(c)
}

// piecePlan cuts p into pieces that fit in left bytes (after the fixed
// structures and the slots), with bytesR and bytesS the device bytes of a
// piece of R and of S.
func piecePlan(p *overlap.Problem, g grid, left int64, bytesR, bytesS func(span) int64) (rp, sp []span, rBufs int, ok bool) {
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
