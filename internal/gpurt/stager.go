package gpurt

import (
	"errors"
	"fmt"
	"math"
)

// Stager copies between Go memory and device memory through a ring of
// pinned host buffers, its slots, each with an event recorded after its
// last copy. Copies from and to ordinary (pageable) Go memory run well
// below the bus's speed; through the slots, goroutines fill or empty
// several at once while the device copies others. Copies of at most one
// slot go direct: one copy through the driver's own staging costs less
// than the pipeline.
//
// The slots are allocated at the first copy that needs them and kept until
// Free. A slot is written again only once its event says the device is
// done with it, so one Stager may serve several streams. Its methods run
// inside Do, one at a time.
type Stager struct {
	slots, slotBytes int
	ring             []stageSlot
	next             int  // the slot the next staged copy takes
	stale            bool // a copy may be queued without its event: wait for the device before reusing a slot
}

// stageSlot is one pinned buffer of the ring and the event that marks the
// end of its last copy.
type stageSlot struct {
	id   int // its place in the ring
	host *HostBuffer
	ev   *Event
	mem  []byte
	used bool // ev marks a copy not waited for yet
}

// NewStager returns a Stager of slots pinned buffers of slotBytes bytes
// each; it allocates nothing until a copy needs them. It needs at least
// two slots: one filled or emptied while the device copies another.
func NewStager(slots, slotBytes int) *Stager {
	if slots < 2 || slotBytes < 1 {
		panic(fmt.Sprintf("gpu: NewStager(%d, %d): needs 2 slots or more, of 1 byte or more", slots, slotBytes))
	}
	return &Stager{slots: slots, slotBytes: slotBytes}
}

// Upload queues the copy of src into dst, which must be as long, on s. It
// returns once src may change again; the device may still be copying.
func (st *Stager) Upload(c *Ctx, s *Stream, dst Buffer, src []byte) error {
	u := st.Uploads(s)
	if err := u.Add(dst, src); err != nil {
		return err
	}
	return u.Flush(c)
}

// Download copies src into dst, which must be as long, after the work
// queued on s, and waits for it: the device fills slots while goroutines
// empty others into dst.
func (st *Stager) Download(c *Ctx, s *Stream, dst []byte, src Buffer) error {
	return st.download(ctxStage{c, s}, dst, src)
}

// Free waits for all the device's work, then frees the slots. The Stager
// allocates them again if it is used after.
func (st *Stager) Free(c *Ctx) error { return st.free(ctxStage{c: c}) }

// Uploads is a list of copies from Go memory to device memory on one
// stream, queued through a Stager at once (Flush) or a step at a time
// (Step), so that an upload can be spread between other work.
type Uploads struct {
	st   *Stager
	s    *Stream
	jobs []upJob
	left int // bytes not queued yet
}

type upJob struct {
	dst Buffer
	src []byte
	off int // bytes of src queued already
}

// Uploads returns an empty list of copies to queue on s.
func (st *Stager) Uploads(s *Stream) *Uploads { return &Uploads{st: st, s: s} }

// Add adds the copy of src into dst, which must be as long. src must not
// change until the list is done (Done).
func (u *Uploads) Add(dst Buffer, src []byte) error {
	if err := checkCopy("Stager upload", dst.n, len(src)); err != nil {
		return err
	}
	if len(src) > 0 {
		u.jobs = append(u.jobs, upJob{dst: dst, src: src})
		u.left += len(src)
	}
	return nil
}

// Done reports whether every copy has been queued.
func (u *Uploads) Done() bool { return len(u.jobs) == 0 }

// Left returns the bytes not queued yet.
func (u *Uploads) Left() int { return u.left }

// Step queues at least one copy and about n bytes: whole copies of at
// most a slot, direct, and slots' worth of the larger ones, at most half
// the ring, so that goroutines fill one half while the device copies the
// other.
func (u *Uploads) Step(c *Ctx, n int) error {
	return u.step(ctxStage{c, u.s}, n, max(1, u.st.slots/2))
}

// Flush queues every copy left.
func (u *Uploads) Flush(c *Ctx) error { return u.flush(ctxStage{c, u.s}) }

func (u *Uploads) flush(d stageDev) error {
	for !u.Done() {
		if err := u.step(d, math.MaxInt, math.MaxInt); err != nil {
			return err
		}
	}
	return nil
}

func (u *Uploads) step(d stageDev, n, maxStaged int) error {
	direct, staged := u.take(n, maxStaged)
	for _, ch := range direct {
		// From pageable memory the call returns once the driver has
		// staged src.
		if err := d.toDevice(ch.dst, ch.src); err != nil {
			return err
		}
	}
	return u.st.upload(d, staged)
}

// stageChunk is a copy of at most a slot.
type stageChunk struct {
	dst Buffer
	src []byte
}

// take removes the copies of one step from the list: at least one chunk,
// about n bytes, at most maxStaged of them through the slots. direct holds
// whole copies of at most a slot, in order, staged slots' worth of larger
// ones, in order.
func (u *Uploads) take(n, maxStaged int) (direct, staged []stageChunk) {
	b := u.st.slotBytes
	for len(u.jobs) > 0 && (len(direct)+len(staged) == 0 || n > 0) && len(staged) < maxStaged {
		j := &u.jobs[0]
		if j.off == 0 && len(j.src) <= b {
			direct = append(direct, stageChunk{j.dst, j.src})
			n -= len(j.src)
			u.left -= len(j.src)
			u.jobs = u.jobs[1:]
			continue
		}
		m := min(b, len(j.src)-j.off)
		staged = append(staged, stageChunk{j.dst.Slice(j.off, m), j.src[j.off : j.off+m]})
		j.off += m
		n -= m
		u.left -= m
		if j.off == len(j.src) {
			u.jobs = u.jobs[1:]
		}
	}
	return direct, staged
}

// upload queues chunks through the slots, in order: goroutines fill the
// slots in parallel, each chunk is queued once its slot is filled, and a
// slot is refilled once the device has copied it, with the next chunk
// already queued, so that the device always has a copy ahead.
func (st *Stager) upload(d stageDev, chunks []stageChunk) error {
	m := len(chunks)
	if m == 0 {
		return nil
	}
	if err := st.alloc(d); err != nil {
		return err
	}
	s, base := len(st.ring), st.next
	st.next = (base + m) % s
	slot := func(k int) *stageSlot { return &st.ring[(base+k)%s] }
	ready := make([]chan struct{}, m)
	fill := func(k int) {
		ch := make(chan struct{})
		ready[k] = ch
		sl, src := slot(k), chunks[k].src
		go func() {
			copy(sl.mem, src)
			close(ch)
		}()
	}
	var err error
	for k := range min(m, s) {
		if err = st.ready(d, slot(k)); err != nil {
			break
		}
		fill(k)
	}
	for i := 0; i < m && err == nil; i++ {
		<-ready[i]
		sl := slot(i)
		if err = st.send(d, sl, chunks[i]); err != nil {
			break
		}
		// Refill the previous slot once its copy is done: chunk i is
		// queued behind it.
		if prev := i - 1; prev >= 0 && prev+s < m {
			if err = st.ready(d, slot(prev)); err != nil {
				break
			}
			fill(prev + s)
		}
	}
	if err != nil {
		// Let every fill finish, so that no goroutine writes a slot after
		// we return.
		for _, r := range ready {
			if r != nil {
				<-r
			}
		}
	}
	// The last chunks may still be copying out of their slots; their
	// events guard them.
	return err
}

// send queues the copy of ch, staged in sl, and records sl's event.
func (st *Stager) send(d stageDev, sl *stageSlot, ch stageChunk) error {
	if err := d.toDevice(ch.dst, sl.mem[:len(ch.src)]); err != nil {
		st.stale = true
		return err
	}
	return st.mark(d, sl)
}

func (st *Stager) download(d stageDev, dst []byte, src Buffer) error {
	if err := checkCopy("Stager download", len(dst), src.n); err != nil {
		return err
	}
	b := st.slotBytes
	if len(dst) <= b {
		if err := d.toHost(dst, src); err != nil {
			return err
		}
		return d.sync()
	}
	if err := st.alloc(d); err != nil {
		return err
	}
	m := (len(dst) + b - 1) / b
	s, base := len(st.ring), st.next
	st.next = (base + m) % s
	slot := func(k int) *stageSlot { return &st.ring[(base+k)%s] }
	part := func(k int) []byte { return dst[k*b : min((k+1)*b, len(dst))] }
	issue := func(k int) error {
		sl, p := slot(k), part(k)
		if err := d.toHost(sl.mem[:len(p)], src.Slice(k*b, len(p))); err != nil {
			st.stale = true
			return err
		}
		return st.mark(d, sl)
	}
	done := make([]chan struct{}, m)
	var err error
	for k := range min(m, s) {
		if err = st.ready(d, slot(k)); err != nil {
			break
		}
		if err = issue(k); err != nil {
			break
		}
	}
	for i := 0; i < m && err == nil; i++ {
		sl := slot(i)
		if err = st.ready(d, sl); err != nil {
			break
		}
		ch := make(chan struct{})
		done[i] = ch
		p := part(i)
		go func() {
			copy(p, sl.mem)
			close(ch)
		}()
		// Reuse the previous slot once it has been emptied.
		if prev := i - 1; prev >= 0 && prev+s < m {
			<-done[prev]
			err = issue(prev + s)
		}
	}
	if err == nil {
		err = d.sync()
	}
	for _, ch := range done {
		if ch != nil {
			<-ch
		}
	}
	return err
}

// alloc allocates the ring at first use.
func (st *Stager) alloc(d stageDev) error {
	if st.ring != nil {
		return nil
	}
	ring := make([]stageSlot, 0, st.slots)
	for i := range st.slots {
		sl, err := d.alloc(st.slotBytes)
		if err != nil {
			for k := range ring {
				d.free(&ring[k])
			}
			return err
		}
		sl.id = i
		ring = append(ring, sl)
	}
	st.ring, st.next, st.stale = ring, 0, false
	return nil
}

// ready waits until the device is done with sl, so that it may be
// written.
func (st *Stager) ready(d stageDev, sl *stageSlot) error {
	if st.stale {
		if err := d.syncAll(); err != nil {
			return err
		}
		st.stale = false
		for i := range st.ring {
			st.ring[i].used = false
		}
	}
	if sl.used {
		if err := d.wait(sl); err != nil {
			return err
		}
		sl.used = false
	}
	return nil
}

// mark records sl's event after a copy from or into it.
func (st *Stager) mark(d stageDev, sl *stageSlot) error {
	if err := d.record(sl); err != nil {
		st.stale = true
		return err
	}
	sl.used = true
	return nil
}

func (st *Stager) free(d stageDev) error {
	if st.ring == nil {
		return nil
	}
	if err := d.syncAll(); err != nil {
		return err
	}
	var errs []error
	for i := range st.ring {
		errs = append(errs, d.free(&st.ring[i]))
	}
	st.ring, st.next, st.stale = nil, 0, false
	return errors.Join(errs...)
}

// stageDev is what a Stager needs of the device, on one stream: a seam
// that lets its tests run the pipeline without one.
type stageDev interface {
	alloc(n int) (stageSlot, error) // a slot of n bytes and its event
	free(sl *stageSlot) error
	toDevice(dst Buffer, src []byte) error // queued on the stream
	toHost(dst []byte, src Buffer) error   // queued on the stream
	record(sl *stageSlot) error            // sl's event, at the stream's end
	wait(sl *stageSlot) error              // until sl's event
	sync() error                           // until the stream's work is done
	syncAll() error                        // until all the device's work is done
}

// ctxStage is the device's context and a stream.
type ctxStage struct {
	c *Ctx
	s *Stream
}

func (d ctxStage) alloc(n int) (stageSlot, error) {
	h, err := d.c.AllocHost(n)
	if err != nil {
		return stageSlot{}, err
	}
	ev, err := d.c.NewEvent()
	if err != nil {
		d.c.FreeHost(h)
		return stageSlot{}, err
	}
	return stageSlot{host: h, ev: ev, mem: h.Bytes()}, nil
}

func (d ctxStage) free(sl *stageSlot) error {
	return errors.Join(d.c.FreeHost(sl.host), d.c.DestroyEvent(sl.ev))
}

func (d ctxStage) toDevice(dst Buffer, src []byte) error {
	return d.c.CopyToDeviceAsync(dst, src, d.s)
}

func (d ctxStage) toHost(dst []byte, src Buffer) error { return d.c.CopyToHostAsync(dst, src, d.s) }

func (d ctxStage) record(sl *stageSlot) error { return d.c.Record(sl.ev, d.s) }

func (d ctxStage) wait(sl *stageSlot) error { return d.c.Wait(sl.ev) }

func (d ctxStage) sync() error { return d.c.Sync(d.s) }

func (d ctxStage) syncAll() error { return d.c.Synchronize() }
