package gpurt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/cuda"
)

// fakeGPU stands in for a device, to test the Stager's pipeline without
// one. Device memory is a byte slice; each stream is a queue of
// operations that run in order, as late as the Stager allows (lazy), at
// once (eager), or at random points between (random). A copy from a slot
// reads the slot when it runs, so a slot refilled too early sends the new
// data: the final contents catch it. A copy from Go memory (not a slot)
// takes its data when queued, as the driver stages pageable memory.
type fakeGPU struct {
	t       *testing.T
	mode    fakeMode
	rng     *rand.Rand
	mem     []byte
	streams map[int]*fakeStream
	slots   [][]byte // the live slots' memory, in order of allocation
	allocs  int
	frees   int

	// Calls that fail: the failAt-th call (1-based) of those counted in
	// calls returns errInjected.
	calls, failAt int

	log    []string // the copies: "up 2" (from slot 2), "up direct", "down 1", "down direct"
	events map[int]fakeEvent
	ahead  []int // for each wait, the copies queued after the waited event
}

type fakeMode int

const (
	lazy fakeMode = iota
	eager
	random
)

func (m fakeMode) String() string { return [...]string{"lazy", "eager", "random"}[m] }

type fakeStream struct {
	ops    []func() // queued, not run
	queued int      // ops queued in all (ops holds the last len(ops))
}

type fakeEvent struct {
	stream int
	at     int // the stream's queued count at the record
	copies int // copies queued on any stream before the record
}

// fakeBase is the device address of mem[0].
const fakeBase = 1 << 20

var errInjected = errors.New("injected failure")

func newFakeGPU(t *testing.T, mode fakeMode, memBytes int, seed uint64) *fakeGPU {
	return &fakeGPU{t: t, mode: mode, rng: rand.New(rand.NewPCG(seed, 1)), mem: make([]byte, memBytes),
		streams: map[int]*fakeStream{}, events: map[int]fakeEvent{}}
}

// buffer returns device memory [off, off+n).
func (g *fakeGPU) buffer(off, n int) Buffer { return Buffer{ptr: cuda.DevPtr(fakeBase + off), n: n} }

func (g *fakeGPU) bytes(b Buffer) []byte {
	off := int(b.ptr) - fakeBase
	return g.mem[off : off+b.n]
}

// stream returns the stager's view of stream id.
func (g *fakeGPU) stream(id int) *fakeDev {
	if g.streams[id] == nil {
		g.streams[id] = &fakeStream{}
	}
	return &fakeDev{g: g, id: id}
}

func (g *fakeGPU) fail() error {
	g.calls++
	if g.calls == g.failAt {
		return errInjected
	}
	return nil
}

// slotOf returns the slot that b lies in, or -1.
func (g *fakeGPU) slotOf(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for i, s := range g.slots {
		lo := uintptr(unsafe.Pointer(&s[0]))
		if p >= lo && p < lo+uintptr(len(s)) {
			return i
		}
	}
	return -1
}

func (g *fakeGPU) copies() int { return len(g.log) }

// run runs stream id's first n queued operations.
func (g *fakeGPU) run(id, n int) {
	s := g.streams[id]
	for _, op := range s.ops[:n] {
		op()
	}
	s.ops = s.ops[n:]
}

// runAll runs every queued operation.
func (g *fakeGPU) runAll() {
	for id, s := range g.streams {
		g.run(id, len(s.ops))
	}
}

func (g *fakeGPU) enqueue(id int, op func()) {
	s := g.streams[id]
	s.ops = append(s.ops, op)
	s.queued++
	switch g.mode {
	case eager:
		g.run(id, len(s.ops))
	case random:
		for sid, s := range g.streams {
			g.run(sid, g.rng.IntN(len(s.ops)+1))
		}
	}
}

// fakeDev is one stream of a fakeGPU, as a stageDev.
type fakeDev struct {
	g  *fakeGPU
	id int
}

func (d *fakeDev) alloc(n int) (stageSlot, error) {
	if err := d.g.fail(); err != nil {
		return stageSlot{}, err
	}
	mem := make([]byte, n)
	d.g.slots = append(d.g.slots, mem)
	d.g.allocs++
	return stageSlot{mem: mem}, nil
}

func (d *fakeDev) free(sl *stageSlot) error {
	g := d.g
	for _, s := range g.streams {
		if len(s.ops) > 0 {
			g.t.Errorf("slot freed with %d operations queued", len(s.ops))
		}
	}
	i := g.slotOf(sl.mem)
	if i < 0 {
		g.t.Fatalf("freeing memory that is not a live slot")
	}
	g.slots = slices.Delete(g.slots, i, i+1)
	g.frees++
	return nil
}

func (d *fakeDev) toDevice(dst Buffer, src []byte) error {
	if err := d.g.fail(); err != nil {
		return err
	}
	if dst.n != len(src) {
		return fmt.Errorf("toDevice: %d bytes into %d", len(src), dst.n)
	}
	g := d.g
	out := g.bytes(dst)
	if k := g.slotOf(src); k >= 0 {
		g.log = append(g.log, fmt.Sprintf("up %d", k))
		g.enqueue(d.id, func() { copy(out, src) })
	} else {
		g.log = append(g.log, "up direct")
		staged := slices.Clone(src)
		g.enqueue(d.id, func() { copy(out, staged) })
	}
	return nil
}

func (d *fakeDev) toHost(dst []byte, src Buffer) error {
	if err := d.g.fail(); err != nil {
		return err
	}
	if len(dst) != src.n {
		return fmt.Errorf("toHost: %d bytes into %d", src.n, len(dst))
	}
	g := d.g
	in := g.bytes(src)
	if k := g.slotOf(dst); k >= 0 {
		g.log = append(g.log, fmt.Sprintf("down %d", k))
	} else {
		g.log = append(g.log, "down direct")
	}
	g.enqueue(d.id, func() { copy(dst, in) })
	return nil
}

func (d *fakeDev) record(sl *stageSlot) error {
	if err := d.g.fail(); err != nil {
		return err
	}
	g := d.g
	g.enqueue(d.id, func() {})
	g.events[sl.id] = fakeEvent{stream: d.id, at: g.streams[d.id].queued, copies: g.copies()}
	return nil
}

func (d *fakeDev) wait(sl *stageSlot) error {
	if err := d.g.fail(); err != nil {
		return err
	}
	g := d.g
	ev, ok := g.events[sl.id]
	if !ok {
		g.t.Errorf("waiting for slot %d's event, never recorded", sl.id)
		return nil
	}
	s := g.streams[ev.stream]
	if n := len(s.ops) - (s.queued - ev.at); n > 0 {
		g.run(ev.stream, n)
	}
	g.ahead = append(g.ahead, g.copies()-ev.copies)
	return nil
}

func (d *fakeDev) sync() error {
	if err := d.g.fail(); err != nil {
		return err
	}
	d.g.run(d.id, len(d.g.streams[d.id].ops))
	return nil
}

func (d *fakeDev) syncAll() error {
	if err := d.g.fail(); err != nil {
		return err
	}
	d.g.runAll()
	return nil
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// upload uploads src to device offset off through st on d.
func upload(st *Stager, d stageDev, dst Buffer, src []byte) error {
	u := st.Uploads(nil)
	if err := u.Add(dst, src); err != nil {
		return err
	}
	return u.flush(d)
}

// TestStagerRoundTrip uploads and downloads every length around the slot
// size and the ring's size, in every mode of the fake device, and checks
// which copies went direct and which through the slots.
func TestStagerRoundTrip(t *testing.T) {
	for _, mode := range []fakeMode{lazy, eager, random} {
		for _, slots := range []int{2, 3, 5} {
			for _, b := range []int{1, 7, 64} {
				lengths := []int{0, 1, b - 1, b, b + 1, 2 * b, slots*b - 1, slots * b, slots*b + 1, 5*slots*b + 3}
				for _, n := range lengths {
					if n < 0 {
						continue
					}
					t.Run(fmt.Sprintf("%v/%dx%d/%d", mode, slots, b, n), func(t *testing.T) {
						g := newFakeGPU(t, mode, 2*n+100, uint64(n))
						d := g.stream(0)
						st := NewStager(slots, b)
						rng := rand.New(rand.NewPCG(uint64(n), uint64(b)))
						src := randomBytes(rng, n)
						dst := g.buffer(13, n)
						if err := upload(st, d, dst, src); err != nil {
							t.Fatal(err)
						}
						g.runAll()
						if !bytes.Equal(g.bytes(dst), src) {
							t.Fatalf("device holds %v, want %v", g.bytes(dst), src)
						}
						chunks := (n + b - 1) / b
						switch {
						case n == 0 && len(g.log) != 0:
							t.Errorf("empty upload made copies %v", g.log)
						case n > 0 && n <= b && !slices.Equal(g.log, []string{"up direct"}):
							t.Errorf("upload of %d bytes, slots of %d: copies %v, want one direct", n, b, g.log)
						case n > b && len(g.log) != chunks:
							t.Errorf("upload of %d bytes, slots of %d: %d copies, want %d", n, b, len(g.log), chunks)
						}
						if n <= b && g.allocs != 0 {
							t.Errorf("direct copies allocated %d slots", g.allocs)
						}
						// And back, into a fresh host slice.
						g.log = nil
						back := make([]byte, n)
						if err := st.download(d, back, dst); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(back, src) {
							t.Fatalf("downloaded %v, want %v", back, src)
						}
						for _, s := range g.streams {
							if len(s.ops) != 0 {
								t.Errorf("download returned with %d operations queued", len(s.ops))
							}
						}
						if n > b && len(g.log) != chunks {
							t.Errorf("download of %d bytes: %d copies, want %d", n, len(g.log), chunks)
						}
						if g.allocs != 0 && g.allocs != slots {
							t.Errorf("allocated %d slots, want %d", g.allocs, slots)
						}
						if err := st.free(d); err != nil {
							t.Fatal(err)
						}
						if g.frees != g.allocs {
							t.Errorf("freed %d slots of %d", g.frees, g.allocs)
						}
					})
				}
			}
		}
	}
}

// TestStagerSlotOrder checks that copies take the ring's slots in turn,
// from one call to the next, and that a slot freed starts the ring again.
func TestStagerSlotOrder(t *testing.T) {
	g := newFakeGPU(t, lazy, 1000, 1)
	d := g.stream(0)
	st := NewStager(3, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	step := func(what string, f func() error, want ...string) {
		t.Helper()
		g.log = nil
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.log, want) {
			t.Errorf("%s: copies %q, want %q", what, g.log, want)
		}
	}
	a, b := randomBytes(rng, 8), randomBytes(rng, 16)
	step("8 bytes", func() error { return upload(st, d, g.buffer(0, 8), a) }, "up 0", "up 1")
	step("16 bytes", func() error { return upload(st, d, g.buffer(100, 16), b) }, "up 2", "up 0", "up 1", "up 2")
	back := make([]byte, 12)
	step("download 12 bytes", func() error { return st.download(d, back, g.buffer(100, 12)) }, "down 0", "down 1", "down 2")
	if !bytes.Equal(back, b[:12]) {
		t.Errorf("downloaded %v, want %v", back, b[:12])
	}
	step("4 bytes", func() error { return upload(st, d, g.buffer(0, 4), a[:4]) }, "up direct")
	if err := st.free(d); err != nil {
		t.Fatal(err)
	}
	step("after Free", func() error { return upload(st, d, g.buffer(0, 8), a) }, "up 0", "up 1")
	if g.allocs != 6 || g.frees != 3 {
		t.Errorf("%d slots allocated and %d freed, want 6 and 3", g.allocs, g.frees)
	}
	g.runAll()
	if !bytes.Equal(g.bytes(g.buffer(0, 8)), a) || !bytes.Equal(g.bytes(g.buffer(100, 16)), b) {
		t.Error("device memory differs")
	}
}

// TestStagerCopyAhead checks that an upload refills a slot only with the
// next chunk already queued: the device always has a copy to run.
func TestStagerCopyAhead(t *testing.T) {
	for _, slots := range []int{2, 3, 8} {
		g := newFakeGPU(t, lazy, 1000, 2)
		d := g.stream(0)
		st := NewStager(slots, 10)
		src := randomBytes(rand.New(rand.NewPCG(3, 4)), 333)
		if err := upload(st, d, g.buffer(0, len(src)), src); err != nil {
			t.Fatal(err)
		}
		// 34 chunks: every one past the ring's first fill waits for a
		// slot.
		if len(g.ahead) != 34-slots {
			t.Errorf("%d slots: %d waits, want %d", slots, len(g.ahead), 34-slots)
		}
		for i, a := range g.ahead {
			if a < 1 {
				t.Errorf("%d slots: wait %d with no copy queued after the awaited one", slots, i)
			}
		}
		g.runAll()
		if !bytes.Equal(g.bytes(g.buffer(0, len(src))), src) {
			t.Errorf("%d slots: device memory differs", slots)
		}
	}
}

// TestStagerStreams checks that a slot last copied on one stream is
// refilled for another only after that copy: the events, not the
// streams' order, guard the slots.
func TestStagerStreams(t *testing.T) {
	for _, mode := range []fakeMode{lazy, random} {
		g := newFakeGPU(t, mode, 4000, 5)
		st := NewStager(3, 16)
		rng := rand.New(rand.NewPCG(5, 6))
		var want [][]byte
		var dsts []Buffer
		for k := range 12 {
			src := randomBytes(rng, 20+rng.IntN(100))
			dst := g.buffer(300*k, len(src))
			if err := upload(st, g.stream(k%3), dst, src); err != nil {
				t.Fatal(err)
			}
			want, dsts = append(want, src), append(dsts, dst)
		}
		g.runAll()
		for k := range want {
			if !bytes.Equal(g.bytes(dsts[k]), want[k]) {
				t.Errorf("%v: upload %d differs", mode, k)
			}
		}
		// Downloads on a fourth stream reuse the slots too.
		for k := range want {
			back := make([]byte, len(want[k]))
			if err := st.download(g.stream(3), back, dsts[k]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, want[k]) {
				t.Errorf("%v: download %d differs", mode, k)
			}
		}
	}
}

// TestUploadsTake checks how Step cuts a list of copies: whole small
// copies direct, large ones in slots' worth, at least one chunk, about the
// bytes asked, at most the staged chunks allowed.
func TestUploadsTake(t *testing.T) {
	g := newFakeGPU(t, lazy, 1000, 7)
	st := NewStager(4, 10)
	u := st.Uploads(nil)
	rng := rand.New(rand.NewPCG(7, 8))
	srcs := [][]byte{randomBytes(rng, 5), randomBytes(rng, 35), randomBytes(rng, 10), randomBytes(rng, 25)}
	offs := []int{0, 100, 200, 300}
	for i, s := range srcs {
		if err := u.Add(g.buffer(offs[i], len(s)), s); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Add(g.buffer(0, 0), nil); err != nil || u.Left() != 75 {
		t.Fatalf("after an empty copy: %v, %d bytes left, want 75", err, u.Left())
	}
	if err := u.Add(g.buffer(0, 3), make([]byte, 4)); err == nil {
		t.Error("Add accepted 4 bytes for a buffer of 3")
	}
	describe := func(cs []stageChunk) string {
		var s []string
		for _, c := range cs {
			s = append(s, fmt.Sprintf("%d+%d", int(c.dst.ptr)-fakeBase, len(c.src)))
		}
		return fmt.Sprint(s)
	}
	for _, c := range []struct {
		n, max         int
		direct, staged string
		left           int
	}{
		{1, 2, "[0+5]", "[]", 70},                          // one copy, though n is small
		{12, 2, "[]", "[100+10 110+10]", 50},               // about n bytes
		{math.MaxInt, 2, "[]", "[120+10 130+5]", 35},       // at most two staged
		{math.MaxInt, 2, "[200+10]", "[300+10 310+10]", 5}, // direct ones do not count
		{0, 2, "[]", "[320+5]", 0},
	} {
		direct, staged := u.take(c.n, c.max)
		if describe(direct) != c.direct || describe(staged) != c.staged || u.Left() != c.left {
			t.Errorf("take(%d, %d) = %s, %s, %d left; want %s, %s, %d left",
				c.n, c.max, describe(direct), describe(staged), u.Left(), c.direct, c.staged, c.left)
		}
	}
	if !u.Done() {
		t.Error("not done after every chunk")
	}
	// The same copies through Step, spread over several calls.
	u = st.Uploads(nil)
	for i, s := range srcs {
		u.Add(g.buffer(offs[i], len(s)), s)
	}
	d := g.stream(0)
	steps := 0
	for !u.Done() {
		if err := u.step(d, 8, 2); err != nil {
			t.Fatal(err)
		}
		steps++
	}
	if steps != 7 {
		t.Errorf("%d steps of about 8 bytes, want 7", steps)
	}
	g.runAll()
	for i, s := range srcs {
		if got := g.bytes(g.buffer(offs[i], len(s))); !bytes.Equal(got, s) {
			t.Errorf("copy %d: %v, want %v", i, got, s)
		}
	}
}

// TestStagerErrors fails each device call of an upload and of a download
// in turn: the error comes back, and the Stager then works again (slots
// whose events may be missing are not reused before the device is done).
func TestStagerErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src := randomBytes(rng, 70)
	for _, mode := range []fakeMode{lazy, random} {
		for failAt := 1; ; failAt++ {
			g := newFakeGPU(t, mode, 1000, uint64(failAt))
			d := g.stream(0)
			st := NewStager(3, 10)
			dst := g.buffer(0, len(src))
			g.failAt = failAt
			err := upload(st, d, dst, src)
			if err == nil {
				back := make([]byte, len(src))
				err = st.download(d, back, dst)
				if err == nil && !bytes.Equal(back, src) {
					t.Errorf("%v: no failure at call %d, yet the data differs", mode, failAt)
				}
			}
			if err == nil {
				if failAt < 20 {
					t.Errorf("%v: only %d device calls", mode, failAt-1)
				}
				break
			}
			if !errors.Is(err, errInjected) {
				t.Fatalf("%v, call %d: %v, want the injected failure", mode, failAt, err)
			}
			// Recovery: a whole upload and download again.
			g.failAt = 0
			other := randomBytes(rng, len(src))
			if err := upload(st, d, dst, other); err != nil {
				t.Fatalf("%v, after failing call %d: %v", mode, failAt, err)
			}
			back := make([]byte, len(src))
			if err := st.download(d, back, dst); err != nil {
				t.Fatalf("%v, after failing call %d: %v", mode, failAt, err)
			}
			if !bytes.Equal(back, other) {
				t.Errorf("%v, after failing call %d: data differs", mode, failAt)
			}
			if err := st.free(d); err != nil {
				t.Fatal(err)
			}
			if g.frees != g.allocs {
				t.Errorf("%v, after failing call %d: %d slots allocated, %d freed", mode, failAt, g.allocs, g.frees)
			}
		}
	}
}

func TestNewStagerChecks(t *testing.T) {
	for _, c := range [][2]int{{1, 10}, {0, 10}, {2, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewStager(%d, %d) did not panic", c[0], c[1])
				}
			}()
			NewStager(c[0], c[1])
		}()
	}
}

func TestOpenWait(t *testing.T) {
	now := time.Unix(100, 0)
	const opening = 200 * time.Millisecond
	for _, c := range []struct {
		start int64
		done  bool
		want  time.Duration
	}{
		{0, false, opening},
		{now.Add(-50 * time.Millisecond).UnixNano(), false, 150 * time.Millisecond},
		{now.Add(-time.Second).UnixNano(), false, 0},
		{now.Add(-50 * time.Millisecond).UnixNano(), true, 0},
	} {
		if got := openWait(opening, c.start, c.done, now); got != c.want {
			t.Errorf("openWait(%v, %d, %v) = %v, want %v", opening, c.start, c.done, got, c.want)
		}
	}
}

func TestUint32s(t *testing.T) {
	xs := []uint32{1, 0xdeadbeef, 7}
	b := Bytes(xs)
	if got := Uint32s(b); !slices.Equal(got, xs) {
		t.Errorf("Uint32s(Bytes(%v)) = %v", xs, got)
	}
	if got := Uint32s(b[:11]); !slices.Equal(got, xs[:2]) {
		t.Errorf("Uint32s of 11 bytes = %v, want %v", got, xs[:2])
	}
	if got := Uint32s(b[:3]); got != nil {
		t.Errorf("Uint32s of 3 bytes = %v, want nil", got)
	}
}

// TestStagerGPU runs a Stager of small slots on the device: uploads and
// downloads of lengths around the slot and the ring, the source changed
// as soon as Upload returns, and lists of copies stepped on two streams
// that share the slots.
func TestStagerGPU(t *testing.T) {
	dev := openTest(t)
	rng := rand.New(rand.NewPCG(11, 12))
	const slot = 4096
	err := dev.Do(func(c *Ctx) error {
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		buf, err := c.Alloc(4 << 20)
		if err != nil {
			return err
		}
		defer c.Free(buf)
		st := NewStager(3, slot)
		for _, n := range []int{0, 1, slot - 1, slot, slot + 1, 3*slot - 5, 3 * slot, 3*slot + 1, 10*slot + 3, 1 << 20} {
			src := randomBytes(rng, n)
			want := slices.Clone(src)
			dst := buf.Slice(8, n)
			if err := st.Upload(c, s, dst, src); err != nil {
				return err
			}
			for i := range src {
				src[i] ^= 0xff
			}
			back := make([]byte, n)
			if err := st.Download(c, s, back, dst); err != nil {
				return err
			}
			if !bytes.Equal(back, want) {
				t.Errorf("%d bytes: downloaded data differs", n)
			}
			plain := make([]byte, n)
			if err := c.CopyToHost(plain, dst); err != nil {
				return err
			}
			if !bytes.Equal(plain, want) {
				t.Errorf("%d bytes: device holds other data", n)
			}
		}
		// Lists of copies, stepped a few kilobytes at a time, alternately
		// on the default stream and on s.
		var want [][]byte
		var dsts []Buffer
		lists := []*Uploads{st.Uploads(nil), st.Uploads(s)}
		off := 0
		for k := range 40 {
			src := randomBytes(rng, rng.IntN(5*slot))
			dst := buf.Slice(off, len(src))
			off += len(src) + 4
			if err := lists[k%2].Add(dst, src); err != nil {
				return err
			}
			want, dsts = append(want, src), append(dsts, dst)
		}
		for !lists[0].Done() || !lists[1].Done() {
			for _, u := range lists {
				if !u.Done() {
					if err := u.Step(c, 3*slot); err != nil {
						return err
					}
				}
			}
		}
		if err := c.Synchronize(); err != nil {
			return err
		}
		for k := range want {
			got := make([]byte, len(want[k]))
			if err := c.CopyToHost(got, dsts[k]); err != nil {
				return err
			}
			if !bytes.Equal(got, want[k]) {
				t.Errorf("stepped copy %d (%d bytes) differs", k, len(want[k]))
			}
		}
		if err := st.Upload(c, s, buf.Slice(0, 3), make([]byte, 4)); err == nil {
			t.Error("Upload of 4 bytes into 3 succeeded")
		}
		if err := st.Download(c, s, make([]byte, 4), buf.Slice(0, 3)); err == nil {
			t.Error("Download of 3 bytes into 4 succeeded")
		}
		return st.Free(c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPinnedGPU grows a pinned buffer while a copy out of it is queued,
// and takes buffers from a pool.
func TestPinnedGPU(t *testing.T) {
	dev := openTest(t)
	err := dev.Do(func(c *Ctx) error {
		var p Pinned
		if p.Len() != 0 || p.Bytes() != nil {
			t.Errorf("zero Pinned: %d bytes", p.Len())
		}
		if err := p.Grow(c, 100); err != nil {
			return err
		}
		if p.Len() != 100 {
			t.Errorf("Grow(100): %d bytes", p.Len())
		}
		for i := range p.Bytes() {
			p.Bytes()[i] = byte(i)
		}
		buf, err := c.Alloc(100)
		if err != nil {
			return err
		}
		defer c.Free(buf)
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		if err := c.CopyToDeviceAsync(buf, p.Bytes(), s); err != nil {
			return err
		}
		if err := p.Grow(c, 50); err != nil || p.Len() != 100 {
			t.Errorf("Grow(50) of 100 bytes: %d bytes, %v", p.Len(), err)
		}
		if err := p.Grow(c, 1<<20); err != nil {
			return err
		}
		if p.Len() != 1<<20 {
			t.Errorf("Grow(1 MiB): %d bytes", p.Len())
		}
		got := make([]byte, 100)
		if err := c.CopyToHost(got, buf); err != nil {
			return err
		}
		for i, v := range got {
			if v != byte(i) {
				t.Fatalf("byte %d copied from the old buffer: %d", i, v)
			}
		}
		if err := p.Free(c); err != nil || p.Len() != 0 {
			t.Errorf("Free: %d bytes left, %v", p.Len(), err)
		}

		var pool PinnedPool
		a, err := pool.Get(c, 1000)
		if err != nil {
			return err
		}
		b, err := pool.Get(c, 5000)
		if err != nil {
			return err
		}
		pool.Put(a)
		pool.Put(b)
		if h, err := pool.Get(c, 2000); err != nil || h != b {
			t.Errorf("Get(2000) did not reuse the 5000-byte buffer: %v", err)
		} else {
			pool.Put(h)
		}
		if err := pool.Trim(c, 5000); err != nil {
			return err
		}
		if h, err := pool.Get(c, 10); err != nil || h != b {
			t.Errorf("Trim(5000) kept the wrong buffer: %v", err)
		} else {
			c.FreeHost(h)
		}
		return pool.Trim(c, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
}
