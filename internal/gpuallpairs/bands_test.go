package gpuallpairs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/sets"
)

// fakeBands is a bandDevice on the CPU: each band is computed by a
// goroutine after a random delay, from the product computed naively, so
// that the scheduling runs as it does with a GPU.
type fakeBands struct {
	hr, hs  int
	prod    []uint32 // hr × hs
	nslots  int
	inSlot  []chan error
	rng     *rand.Rand
	rngMu   sync.Mutex
	held    atomic.Int64
	maxHeld atomic.Int64
	queued  atomic.Int64
	directs atomic.Int64
	failAt  int64 // queue fails at this band (counted from 1), if positive

	// Bands queued and not yet finished: a buffer given back while its
	// device still writes it is counted in early.
	flyMu  sync.Mutex
	flying map[*band]bool
	early  atomic.Int64
}

func newFakeBands(p *allpairs.Problem, sp *allpairs.MMJoinSplit, slots int) *fakeBands {
	f := &fakeBands{hr: len(sp.HeavyR), hs: len(sp.HeavyS), nslots: slots, rng: rand.New(rand.NewPCG(1, uint64(slots)))}
	f.prod = naiveHeavyProduct(p, sp)
	f.inSlot = make([]chan error, slots)
	return f
}

// naiveHeavyProduct is |HeavyR[x] ∩ HeavyS[y] ∩ Columns| for every x, y.
func naiveHeavyProduct(p *allpairs.Problem, sp *allpairs.MMJoinSplit) []uint32 {
	heavy := map[uint32]bool{}
	for _, e := range sp.Columns {
		heavy[e] = true
	}
	hr, hs := len(sp.HeavyR), len(sp.HeavyS)
	prod := make([]uint32, hr*hs)
	for x, i := range sp.HeavyR {
		in := map[uint32]bool{}
		for _, e := range p.R.Set(int(i)) {
			if heavy[e] {
				in[e] = true
			}
		}
		for y, j := range sp.HeavyS {
			var n uint32
			for _, e := range p.S.Set(int(j)) {
				if in[e] {
					n++
				}
			}
			prod[x*hs+y] = n
		}
	}
	return prod
}

// twin returns another fake device with f's product and slots, its own
// counters and random delays: one per owner of a run.
func (f *fakeBands) twin(seed uint64) *fakeBands {
	g := &fakeBands{hr: f.hr, hs: f.hs, prod: f.prod, nslots: f.nslots, rng: rand.New(rand.NewPCG(seed, uint64(f.nslots))), failAt: f.failAt}
	g.inSlot = make([]chan error, f.nslots)
	return g
}

// fakeDevices returns f and n-1 twins of it, as band devices.
func fakeDevices(f *fakeBands, n int) ([]*fakeBands, []bandDevice) {
	fs := []*fakeBands{f}
	for i := 1; i < n; i++ {
		fs = append(fs, f.twin(uint64(1000+i)))
	}
	devs := make([]bandDevice, n)
	for i, g := range fs {
		devs[i] = g
	}
	return fs, devs
}

func (f *fakeBands) slots() int   { return f.nslots }
func (f *fakeBands) float() bool  { return false }
func (f *fakeBands) delay() int64 { f.rngMu.Lock(); defer f.rngMu.Unlock(); return f.rng.Int64N(200) }

func (f *fakeBands) queue(b *band, slot int) error {
	if f.inSlot[slot] != nil {
		return fmt.Errorf("slot %d queued twice", slot)
	}
	if n := f.queued.Add(1); f.failAt > 0 && n == f.failAt {
		return errors.New("fake device failure")
	}
	b.buf = make([]uint32, b.rows*b.ld)
	b.host = b.buf
	if h := f.held.Add(1); h > f.maxHeld.Load() {
		f.maxHeld.Store(h)
	}
	done := make(chan error, 1)
	f.inSlot[slot] = done
	f.flyMu.Lock()
	if f.flying == nil {
		f.flying = map[*band]bool{}
	}
	f.flying[b] = true
	f.flyMu.Unlock()
	d := time.Duration(f.delay()) * time.Microsecond
	buf, r0, c0, rows, cols, ld := b.buf, b.r0, b.c0, b.rows, b.cols, b.ld
	go func() {
		time.Sleep(d)
		for x := range rows {
			for y := range ld {
				v := uint32(0xDEAD) // padding columns: never read
				if y < cols {
					v = f.prod[(r0+x)*f.hs+c0+y]
				}
				buf[x*ld+y] = v
			}
		}
		done <- nil
	}()
	return nil
}

func (f *fakeBands) finish(b *band, slot int) error {
	err := <-f.inSlot[slot]
	f.inSlot[slot] = nil
	f.flyMu.Lock()
	delete(f.flying, b)
	f.flyMu.Unlock()
	return err
}

func (f *fakeBands) release(b *band) {
	f.flyMu.Lock()
	if f.flying[b] {
		f.early.Add(1)
	}
	f.flyMu.Unlock()
	f.held.Add(-1)
}

func (f *fakeBands) direct(ctx context.Context, row0, rows, col0, cols int, dst []uint32, stride int) error {
	f.directs.Add(1)
	for x := range rows {
		for y := range cols {
			dst[x*stride+y] = f.prod[(row0+x)*f.hs+col0+y]
		}
	}
	return nil
}

// fakeMMJoin is MMJoin with the product from fakeBands, registered for the
// tests as a CPU engine (never chosen unless forced). A test runs its own
// copy (tuned, then with) with its own configuration.
type fakeMMJoin struct {
	tune tuning
	cfg  *fakeConfig // nil: the registered engine, which never runs
}

// fakeConfig is the band cache and fake devices of one fakeMMJoin run.
type fakeConfig struct {
	slots, bandRows, budget int
	owners                  int          // fake devices sharing the bands (0: one)
	failAt                  int64        // the band that fails on each device (0: none)
	last                    []*fakeBands // the fake devices of the last run
	report                  gpurt.Report // the last run's account
}

// queued, held and directs sum the devices' counters of the last run.
func (fc *fakeConfig) queued() (n int64) {
	for _, f := range fc.last {
		n += f.queued.Load()
	}
	return n
}

func (fc *fakeConfig) held() (n int64) {
	for _, f := range fc.last {
		n += f.held.Load()
	}
	return n
}

func (fc *fakeConfig) early() (n int64) {
	for _, f := range fc.last {
		n += f.early.Load()
	}
	return n
}

func (fc *fakeConfig) directs() (n int64) {
	for _, f := range fc.last {
		n += f.directs.Load()
	}
	return n
}

func init() { allpairs.Register(fakeMMJoin{tune: defaultTuning()}) }

// with returns e run with cfg.
func (e fakeMMJoin) with(cfg *fakeConfig) fakeMMJoin {
	e.cfg = cfg
	return e
}

func (fakeMMJoin) Name() string              { return "gpuallpairs-test-mmjoin" }
func (fakeMMJoin) Kind() allpairs.DeviceKind { return allpairs.CPU }
func (fakeMMJoin) Device() (allpairs.Device, error) {
	return allpairs.Device{Kind: allpairs.CPU, Name: "test"}, nil
}
func (fakeMMJoin) Estimate(p *allpairs.Problem) (allpairs.Estimate, error) {
	return allpairs.Estimate{Seconds: 1e9}, nil
}

func (e fakeMMJoin) Run(ctx context.Context, p *allpairs.Problem, out *allpairs.Output) error {
	if e.cfg == nil {
		return errors.New("the registered test engine runs only through with")
	}
	sp := mmjoinSplit(p, gpurt.ReferenceH100(), e.tune)
	f := newFakeBands(p, sp, e.cfg.slots)
	f.failAt = e.cfg.failAt
	owners := max(e.cfg.owners, 1)
	var devs []bandDevice
	e.cfg.last, devs = fakeDevices(f, owners)
	c := newBandCache(devs, len(sp.HeavyR), len(sp.HeavyS), p.Self, sp.ReadsAfterDiagonal(), e.cfg.bandRows, e.cfg.budget)
	c.start()
	err := allpairs.RunMMJoin(ctx, p, out, sp, c.product)
	c.stop()
	c.releaseAll()
	e.cfg.report = c.report(make([]int, owners))
	return err
}

// skewedSets draws k sets whose sizes vary 1 to maxSize, with Zipf
// elements over universe: the shape MMJoin splits.
func skewedSets(rng *rand.Rand, k, universe, maxSize int) [][]uint32 {
	z := rand.NewZipf(rng, 1.3, 2, uint64(universe-1))
	out := make([][]uint32, k)
	for i := range out {
		n := 1 + rng.IntN(maxSize)
		if rng.IntN(3) == 0 {
			n = 1 + rng.IntN(4)
		}
		m := map[uint32]bool{}
		for tries := 0; len(m) < n && tries < 4*n; tries++ {
			m[uint32(z.Uint64())] = true
		}
		out[i] = slices.Sorted(maps.Keys(m))
	}
	return out
}

// cheapProduct is the default tuning with the product's cost per
// pair-word set to wordNS (if positive): a tiny one makes the product
// nearly free, so that many elements are heavy.
func cheapProduct(wordNS float64) tuning {
	tu := defaultTuning()
	tu.mmjoinWordNS = wordNS
	return tu
}

// TestBandCacheMMJoin runs MMJoin with the band scheduler over a fake
// device against the CPU's scan-count: both layouts of its index part,
// bands of every size, budgets down to one band (workers then wait for
// bands nobody prefetched), self-joins and joins, pair and containment
// queries, on one to three devices sharing the bands (the owners of a
// run), each device given back the buffers of the bands it computed.
// MMJoin reads only entries that the bands hold: none is computed on the
// side.
func TestBandCacheMMJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	r := collection(t, skewedSets(rng, 160, 400, 90))
	s := collection(t, skewedSets(rng, 130, 500, 70))
	queries := []allpairs.Query{{MinOverlap: 1}, {MinOverlap: 0}, {Containment: allpairs.Ratio{Num: 1, Den: 2}}}
	for _, other := range []*sets.Collection{nil, s} {
		for qi, q := range queries {
			want, err := allpairs.Collect(context.Background(), r, other, q, allpairs.Options{Device: "cpu", Technique: "scancount"})
			if err != nil {
				t.Fatal(err)
			}
			// slots, band rows, budget, devices
			for _, cfg := range [][4]int{{1, 1, 1, 1}, {2, 3, 1, 1}, {2, 7, 2, 1}, {3, 16, 4, 1}, {2, 1000, 100, 1},
				{1, 1, 1, 3}, {2, 3, 1, 2}, {2, 7, 4, 2}, {3, 16, 12, 3}, {1, 5, 30, 3}} {
				for _, run := range []struct{ threads, layout int }{{1, layoutProbe}, {4, layoutProbe}, {1, layoutElement}, {4, layoutElement}} {
					threads := run.threads
					tu := cheapProduct(1e-6)
					tu.layout = run.layout
					fake := tuned(t, "gpuallpairs-test-mmjoin", tu).(fakeMMJoin)
					name := fmt.Sprintf("self=%v/q%d/slots=%d/rows=%d/budget=%d/owners=%d/threads=%d/element-major=%v", other == nil, qi, cfg[0], cfg[1], cfg[2], cfg[3], threads, run.layout == layoutElement)
					t.Run(name, func(t *testing.T) {
						fc := &fakeConfig{slots: cfg[0], bandRows: cfg[1], budget: cfg[2], owners: cfg[3]}
						pl, err := planOn(fake.with(fc), r, other, q, 0, 0, allpairs.Options{Device: "cpu", Threads: threads})
						if err != nil {
							t.Fatal(err)
						}
						got, err := pl.Collect(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						if fc.last[0].hr == 0 || fc.queued() == 0 {
							t.Fatalf("no heavy product (%d heavy sets, %d bands queued)", fc.last[0].hr, fc.queued())
						}
						for i, f := range fc.last {
							if f.held.Load() != 0 {
								t.Fatalf("device %d: %d band buffers not given back", i, f.held.Load())
							}
						}
						if fc.early() != 0 {
							t.Fatalf("%d band buffers given back while their device wrote them", fc.early())
						}
						if fc.directs() != 0 {
							t.Fatalf("%d blocks read outside the bands", fc.directs())
						}
						checkBandReport(t, fc)
						if !slices.Equal(got, want) {
							t.Fatalf("%d pairs, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
						}
					})
				}
			}
		}
	}
}

// checkBandReport checks the account of a fake run: one entry per device,
// each with the bands it queued.
func checkBandReport(t *testing.T, fc *fakeConfig) {
	t.Helper()
	rep := fc.report
	if len(rep.Owners) != len(fc.last) {
		t.Fatalf("report of %d owners, want %d", len(rep.Owners), len(fc.last))
	}
	for i, u := range rep.Owners {
		if int64(u.Tiles) != fc.last[i].queued.Load() {
			t.Fatalf("report: device %d took %d bands, it queued %d", i, u.Tiles, fc.last[i].queued.Load())
		}
	}
	if s := rep.Describe("bands"); !strings.Contains(s, fmt.Sprintf("%d bands in", fc.queued())) {
		t.Fatalf("report %q does not count the %d bands", s, fc.queued())
	}
}

// TestBandCacheRequests reads a product through the cache in random blocks
// from many goroutines (rows once each, as MMJoin does, plus rereads and
// blocks beside a self-join's bands, on either side), with small budgets;
// in a self-join the entries on the side of the diagonal read.
func TestBandCacheRequests(t *testing.T) {
	for iter := range 40 {
		rng := rand.New(rand.NewPCG(uint64(iter), 99))
		hr := 1 + rng.IntN(90)
		self := rng.IntN(2) == 0
		after := rng.IntN(2) == 0
		hs := 1 + rng.IntN(90)
		if self {
			hs = hr
		}
		f := &fakeBands{hr: hr, hs: hs, nslots: 1 + rng.IntN(3), rng: rand.New(rand.NewPCG(uint64(iter), 7))}
		f.inSlot = make([]chan error, f.nslots)
		f.prod = make([]uint32, hr*hs)
		for i := range f.prod {
			f.prod[i] = rng.Uint32()
		}
		fs, devs := fakeDevices(f, 1+rng.IntN(3))
		c := newBandCache(devs, hr, hs, self, after, 1+rng.IntN(20), 1+rng.IntN(4))
		c.start()
		// Row blocks in a random order, each read by one of 4 workers.
		var blocks [][2]int
		for r := 0; r < hr; {
			n := 1 + rng.IntN(12)
			blocks = append(blocks, [2]int{r, min(n, hr-r)})
			r += n
		}
		rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
		reread := blocks[rng.IntN(len(blocks))]
		blocks = append(blocks, reread)
		work := make(chan [2]int)
		errs := make(chan error, len(blocks))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for bl := range work {
					if err := readBlock(c, f, self, after, iter, bl[0], bl[1]); err != nil {
						errs <- err // and take the next block: the sender never waits
					}
				}
			})
		}
		for _, bl := range blocks {
			work <- bl
		}
		close(work)
		wg.Wait()
		c.stop()
		c.releaseAll()
		close(errs)
		for err := range errs {
			t.Fatalf("iteration %d (hr %d, hs %d, self %v, after %v): %v", iter, hr, hs, self, after, err)
		}
		for i, g := range fs {
			if g.held.Load() != 0 || g.early.Load() != 0 {
				t.Fatalf("iteration %d: device %d: %d buffers not given back, %d given back while written", iter, i, g.held.Load(), g.early.Load())
			}
		}
	}
}

// readBlock reads rows [row0, row0+rows) of f's product through c, from a
// column and to a column that depend on the block, and checks them.
func readBlock(c *bandCache, f *fakeBands, self, after bool, iter, row0, rows int) error {
	hs := f.hs
	col0 := rng2(iter, row0) % hs
	cols := hs - col0
	if row0%2 == 1 {
		cols = 1 + rng2(row0, iter)%cols // ending anywhere: left of a band, in it
	}
	dst := make([]uint32, rows*cols)
	if err := c.product(context.Background(), row0, rows, col0, cols, dst); err != nil {
		return err
	}
	for x := range rows {
		for y := range cols {
			i, j := row0+x, col0+y
			if self && (after && j <= i || !after && j >= i) {
				continue // the side of the diagonal never read
			}
			if w := f.prod[i*hs+j]; dst[x*cols+y] != w {
				return fmt.Errorf("entry (%d, %d) = %d, want %d", i, j, dst[x*cols+y], w)
			}
		}
	}
	return nil
}

func rng2(a, b int) int { return (a*7919 + b*104729) & 0xffff }

// TestBandCacheFailure checks that a device error reaches the workers and
// the caller, that nothing hangs, on one to three devices, and that every
// band buffer is given back, none while its device still writes it (a
// worker that stops waiting for a band on the error must not free it).
func TestBandCacheFailure(t *testing.T) {
	fake := tuned(t, "gpuallpairs-test-mmjoin", cheapProduct(1e-6)).(fakeMMJoin)
	rng := rand.New(rand.NewPCG(23, 24))
	r := collection(t, skewedSets(rng, 150, 300, 80))
	for owners := 1; owners <= 3; owners++ {
		for failAt := int64(1); failAt <= 6; failAt++ {
			for _, threads := range []int{1, 3, 8} {
				fc := &fakeConfig{slots: 2, bandRows: 3, budget: 2 * owners, failAt: failAt, owners: owners}
				pl, err := planOn(fake.with(fc), r, nil, allpairs.Query{MinOverlap: 1}, 0, 0, allpairs.Options{Device: "cpu", Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				_, err = pl.Collect(context.Background())
				if err == nil || err.Error() != "fake device failure" {
					t.Fatalf("%d owners, band %d fails, %d threads: error %v, want the device's", owners, failAt, threads, err)
				}
				if fc.held() != 0 || fc.early() != 0 {
					t.Fatalf("%d owners, band %d fails, %d threads: %d band buffers not given back, %d given back while written",
						owners, failAt, threads, fc.held(), fc.early())
				}
			}
		}
	}
}

// TestMMJoinSpreadEstimate checks the planner's arithmetic for MMJoin on
// several GPUs: the bands' time (their products and downloads) divides by
// the GPUs, never by more than there are bands; building the matrices and
// uploading their lists does not; the host holds bands ahead for every
// owner's slots.
func TestMMJoinSpreadEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	p := problem(t, skewedSets(rng, 400, 2000, 300), nil, 0, 0)
	tu := cheapProduct(1e-6)
	tu.bandCounts = 2000
	info := gpurt.ReferenceH100()
	sp := mmjoinSplit(p, info, tu)
	one, err := planMMJoin(p, sp, info, tu, 1<<34, false, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	bands := ceilDiv(one.hr, one.bandRows)
	if bands < 8 || one.build <= 0 || one.bandsSec <= 0 || one.download <= 0 {
		t.Fatalf("plan of %d bands, %.3g s building, %.3g s of bands, %.3g s of downloads", bands, one.build, one.bandsSec, one.download)
	}
	if one.gpu != one.build+one.bandsSec || one.transfers != one.upload+one.download || one.spread != 1 {
		t.Fatalf("one GPU: gpu %.6g s, transfers %.6g s, spread %d", one.gpu, one.transfers, one.spread)
	}
	for _, c := range []struct{ devices, owners, spread int }{{1, 3, 1}, {4, 4, 4}, {2, 6, 2}, {bands + 100, bands + 100, bands}} {
		m, err := planMMJoin(p, sp, info, tu, 1<<34, false, c.devices, c.owners)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(c.spread)
		if m.spread != c.spread || m.gpu != one.build+one.bandsSec/n || m.transfers != one.upload+one.download/n ||
			m.seconds != max(m.cpu, m.gpu)+m.transfers || m.cpu != one.cpu || m.memory != one.memory {
			t.Errorf("%d GPUs, %d owners: spread %d, gpu %.6g s, transfers %.6g s; want spread %d, %.6g s, %.6g s",
				c.devices, c.owners, m.spread, m.gpu, m.transfers, c.spread, one.build+one.bandsSec/n, one.upload+one.download/n)
		}
		if m.hostBands < 2*m.slots*c.owners && m.hostBands < bands {
			t.Errorf("%d owners: %d bands held ahead, fewer than their %d slots twice", c.owners, m.hostBands, m.slots*c.owners)
		}
	}
}
