package gpuallpairs

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
)

// mmjoinEngine is MMJoin across devices (Bellas & Gounaris, section 4.1): the split
// of allpairs.PlanMMJoin, optimised for the GPU's product, with the heavy
// sets × heavy elements multiplied by cuBLAS (int8 inputs, int32 sums:
// exact) while the CPU's threads run the rest through the inverted index
// (allpairs.RunMMJoin). Both run at once: the light probes, which need no
// product, go first on the CPU while the device builds the matrices and
// computes bands of the product ahead of the heavy probes. With several
// owners (Problem.GPUs), each builds the matrices and the bands are shared
// among them: an owner with a free slot takes the next band.
type mmjoinEngine struct{ tune tuning }

func (mmjoinEngine) Name() string { return "mmjoin" }

func (mmjoinEngine) Kind() allpairs.DeviceKind { return allpairs.GPU }

// Opening is engine.Opening, as for the other techniques.
func (mmjoinEngine) Opening() bool { return gpurt.DefaultStarted() }

func (mmjoinEngine) Device() (allpairs.Device, error) { return gpuDevice(nil, true) }

func (mmjoinEngine) DeviceFor(p *allpairs.Problem) (allpairs.Device, error) {
	startAnalysis(p)
	return gpuDevice(p.GPUs, true)
}

// mmjoinCosts returns the GPU product's costs in allpairs.PlanMMJoin's
// units: nanoseconds per pair of 64-column words (64 int8 multiply-adds)
// and per pair (its count copied to the host), times the CPU threads,
// since the optimiser divides its estimates by them.
func mmjoinCosts(p *allpairs.Problem, info gpurt.Info, tu tuning) (wordNS, pairNS float64) {
	t := float64(max(p.Threads, 1))
	wordNS = t * 2 * 64 / ratesFor(info).int8 * 1e9
	if tu.mmjoinWordNS > 0 {
		wordNS = tu.mmjoinWordNS
	}
	return wordNS, t * 4 / downloadRate * 1e9
}

func mmjoinSplit(p *allpairs.Problem, info gpurt.Info, tu tuning) *allpairs.MMJoinSplit {
	w, pr := mmjoinCosts(p, info, tu)
	sp := allpairs.PlanMMJoin(p, w, pr)
	if tu.layout != layoutAuto {
		sp = sp.WithElementMajor(tu.layout == layoutElement)
	}
	return sp
}

// mjPlan is a run of the split, the same on every owner.
type mjPlan struct {
	sp        *allpairs.MMJoinSplit
	hr, hs    int // heavy sets of R and S: the product's rows and columns
	kp        int // heavy elements, rounded up to 16: the matrices' width
	es        int // bytes per matrix entry: 1 (int8) or 2 (float16)
	bandRows  int
	hostBands int // bands held in host memory at once
	slots     int
	memory    int64
	cpu, gpu  float64 // seconds of the two parts
	transfers float64
	seconds   float64
	// The GPU part and the transfers are made of what every GPU does once
	// (building the matrices, uploading their lists) and the bands, which
	// the GPUs share: spread is how many GPUs the bands' time divides by.
	build, bandsSec, upload, download float64
	spread                            int
}

// planMMJoin sizes a run of sp on p with budget bytes of device memory on
// each of owners owners of devices distinct GPUs: the bands' time divides
// by the GPUs (never by more than there are bands), what each does once
// does not, and the host holds bands ahead for every owner's slots.
func planMMJoin(p *allpairs.Problem, sp *allpairs.MMJoinSplit, info gpurt.Info, tu tuning, budget int64, half bool, devices, owners int) (*mjPlan, error) {
	if len(sp.Columns) == 0 {
		return nil, cannot("nothing is heavy: MMJoin's split is scan-count on the CPU")
	}
	m := &mjPlan{sp: sp, hr: len(sp.HeavyR), hs: len(sp.HeavyS), kp: roundUp(len(sp.Columns), 16), es: 1, slots: 2}
	if half {
		m.es = 2
		if len(sp.Columns) >= 1<<24 {
			return nil, cannot("float16 products are exact below 2^24 only, and %d elements are heavy", len(sp.Columns))
		}
	}
	ldMax := roundUp(m.hs, 16)
	m.bandRows = clamp(int(tu.bandCounts/int64(ldMax)), 1, max(m.hr, 1))
	bandBytes := 4 * int64(m.bandRows) * int64(ldMax)
	bands := ceilDiv(m.hr, m.bandRows)
	ahead := 2 * m.slots * max(owners, 1)
	m.hostBands = clamp(int(min(tu.bandHostBytes, p.Memory/4)/bandBytes), ahead, max(bands, ahead))

	// Device memory: the matrices, the heavy sets' column lists while they
	// are expanded, and each slot's band of counts.
	var heavyElems int64
	rows := int64(matrixRows(m.hr))
	for _, i := range sp.HeavyR {
		heavyElems += int64(p.R.SetLen(int(i)))
	}
	if !p.Self {
		rows += int64(matrixRows(m.hs))
		for _, j := range sp.HeavyS {
			heavyElems += int64(p.S.SetLen(int(j)))
		}
	}
	matrices := rows * int64(m.kp) * int64(m.es)
	lists := 4*heavyElems + 8*int64(m.hr+m.hs+2)
	m.memory = matrices + lists + int64(m.slots)*bandBytes
	if m.memory > budget {
		return nil, cannot("the heavy matrices (%d sets x %d elements) need %s with their bands, the device has %s to plan in",
			m.hr+m.hs, len(sp.Columns), gpurt.FormatBytes(uint64(m.memory)), gpurt.FormatBytes(uint64(max(budget, 0))))
	}

	// The two parts. PlanMMJoin's estimate is the index part on the CPU
	// plus the product at the costs it was given; take the product out.
	wordNS, pairNS := mmjoinCosts(p, info, tu)
	pairsHH := int64(m.hr) * int64(m.hs)
	if p.Self {
		pairsHH = int64(m.hr) * int64(m.hr-1) / 2
	}
	words := float64((len(sp.Columns) + 63) / 64)
	m.cpu = max(sp.Seconds-(wordNS*words+pairNS)*float64(pairsHH)/float64(max(p.Threads, 1))/1e9, 0)
	var entries float64 // counts computed: whole bands, a self-join's on the side of the diagonal read
	for r0 := 0; r0 < m.hr; r0 += m.bandRows {
		rows := min(m.bandRows, m.hr-r0)
		_, w := bandCols(m.hs, p.Self, sp.ReadsAfterDiagonal(), r0, rows)
		entries += float64(rows) * float64(roundUp(w, 16))
	}
	r := ratesFor(info)
	rate := r.int8
	if half {
		rate = r.half
	}
	m.build, m.bandsSec = float64(heavyElems)/r.build, 2*entries*float64(m.kp)/rate+superSetup*float64(bands)
	m.upload, m.download = runSetup+float64(lists)/uploadRate, 4*entries/downloadRate
	m.spread = max(1, min(devices, bands))
	n := float64(m.spread)
	m.gpu = m.build + m.bandsSec/n
	m.transfers = m.upload + m.download/n
	m.seconds = max(m.cpu, m.gpu) + m.transfers
	return m, nil
}

// mmjoinCannot says why MMJoin cannot run p, or returns nil.
func mmjoinCannot(p *allpairs.Problem) error {
	if _, _, ok := p.Tiled(); ok {
		return cannot("reports pairs, not dense tiles")
	}
	if p.Stats.R.Elements+p.Stats.S.Elements >= math.MaxUint32 {
		return cannot("over 2^32 elements")
	}
	return nil
}

func (e mmjoinEngine) Estimate(p *allpairs.Problem) (allpairs.Estimate, error) {
	if err := mmjoinCannot(p); err != nil {
		return allpairs.Estimate{}, err
	}
	return weighed(p, e.key(), func(list []int) (allpairs.Estimate, error) {
		// Before openSet, which opens the GPUs.
		startup := gpurt.StartupLeftOn(list).Seconds()
		set, free, err := openSet(gpurt.PlanningGPUs(list))
		if err != nil {
			return allpairs.Estimate{}, err
		}
		info := set.Owner(0).Info()
		sp := mmjoinSplit(p, info, e.tune)
		devices, owners, name := gpurt.Spreading(list, set)
		m, err := planMMJoin(p, sp, info, e.tune, e.tune.budget(free), false, devices, owners)
		if err != nil {
			return allpairs.Estimate{}, err
		}
		detail := fmt.Sprintf("heavy: sets >= %d elements (%d", sp.Delta1, m.hr)
		if !p.Self {
			detail += fmt.Sprintf(" x %d", m.hs)
		}
		detail += fmt.Sprintf("), %d elements on the GPU; CPU part %.3g s, GPU part %.3g s, transfers %.3g s", len(sp.Columns), m.cpu, m.gpu, m.transfers)
		if m.spread > 1 {
			detail += fmt.Sprintf(", bands spread over %s", name)
		}
		return allpairs.Estimate{Seconds: startup + m.seconds, Memory: m.memory, Detail: detail, DeviceName: name}, nil
	})
}

// key names the engine's weighing in a problem's memo (engine.key).
func (e mmjoinEngine) key() string { return fmt.Sprintf("gpuallpairs.mmjoin %+v", e.tune) }

func (e mmjoinEngine) Run(ctx context.Context, p *allpairs.Problem, out *allpairs.Output) error {
	set, err := gpurt.OpenSet(gpurt.RunGPUs(p, e.key(), p.GPUs))
	if err != nil {
		return err
	}
	sts := make([]*state, set.Len())
	for i := range sts {
		sts[i] = stateOf(set.Owner(i))
	}
	defer set.LockOwners(func(i int) *sync.Mutex { return &sts[i].mu })()
	// Kernels, cuBLAS's int8 products and memory, owner by owner: one plan
	// fits them all (every owner holds the matrices).
	half := e.tune.half
	frees, err := set.OwnerMemory(func(i int, c *gpurt.Ctx) error {
		if err := sts[i].load(c); err != nil {
			return err
		}
		if !half && !sts[i].int8Works(c) {
			half = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	info := set.Owner(0).Info()
	sp := mmjoinSplit(p, info, e.tune)
	m, err := planMMJoin(p, sp, info, e.tune, ownersBudget(e.tune, sts, frees), half, set.Devices(), set.Len())
	if err != nil {
		return err
	}
	heavy := &heavyInput{p: p, sp: sp}
	devs := make([]bandDevice, len(sts))
	gs := make([]*gpuBands, 0, len(sts))
	defer func() {
		// The owners free their state at once: each waits for its device.
		var wg sync.WaitGroup
		for _, g := range gs {
			wg.Go(g.close)
		}
		wg.Wait()
	}()
	for i, st := range sts {
		g := &gpuBands{st: st, p: p, sp: sp, m: m, heavy: heavy}
		devs[i] = g
		gs = append(gs, g)
		if e.tune.budget(frees[i]) < m.memory {
			// The pooled buffers may not fit beside the plan's.
			if err := st.dev.Do(func(c *gpurt.Ctx) error { return st.devPool.Drop(c) }); err != nil {
				return err
			}
		}
	}
	cache := newBandCache(devs, m.hr, m.hs, p.Self, sp.ReadsAfterDiagonal(), m.bandRows, m.hostBands)
	start := time.Now()
	cache.start()
	err = allpairs.RunMMJoin(ctx, p, out, sp, cache.product)
	cache.stop()
	wall := time.Since(start)
	// An honest account: the GPU computes only the heavy product; the
	// light part, the heavy probes and the output are the CPU's.
	out.Note("mmjoin: %v in all; on the GPU, the heavy product (%d x %d, %d bands of up to %d rows): busy for %v from its first band to its last",
		wall.Round(time.Millisecond), m.hr, m.hs, cache.queued.Load(), m.bandRows, cache.busy().Round(time.Millisecond))
	ordinals := make([]int, set.Len())
	for i := range ordinals {
		ordinals[i] = set.Owner(i).Info().Ordinal
	}
	out.Note("mmjoin on %s: %s", set, cache.report(ordinals).Describe("bands"))
	out.Note("mmjoin: on the CPU (%d threads), the light part, the heavy probes and the output: %v of thread time waiting for bands (%.0f%% of the threads' time)",
		p.Threads, time.Duration(cache.waited.Load()).Round(time.Millisecond), 100*float64(cache.waited.Load())/max(1, float64(wall)*float64(p.Threads)))
	if n := cache.outside.Load(); n > 0 {
		out.Note("mmjoin: %d blocks of the product read outside the bands, each computed at once on the GPU", n)
	}
	cache.releaseAll()
	if err == nil {
		cache.mu.Lock()
		err = cache.err
		cache.mu.Unlock()
	}
	return err
}

// load compiles or loads the kernels once.
func (st *state) load(c *gpurt.Ctx) error {
	if st.mod != nil {
		return nil
	}
	m, err := c.Load(source)
	if err != nil {
		return err
	}
	st.mod = m
	return nil
}

// gpuBands computes bands of the heavy product on the device: the 0/1
// matrices of the heavy sets over the heavy elements stay resident, and
// each band is one GEMM into a slot's buffer and one copy to pinned host
// memory, on the slot's stream.
type gpuBands struct {
	st    *state
	p     *allpairs.Problem
	sp    *allpairs.MMJoinSplit
	m     *mjPlan
	heavy *heavyInput // the matrices' column lists, shared by the owners

	// Owned by the device's goroutine.
	a, b    gpurt.Buffer // the matrices of R's and S's heavy sets (b == a in a self-join)
	owned   []gpurt.Buffer
	streams []*gpurt.Stream
	events  []*gpurt.Event
	outs    []gpurt.Buffer
	ready   bool
}

func (g *gpuBands) slots() int { return g.m.slots }

func (g *gpuBands) float() bool { return g.m.es == 2 }

func (g *gpuBands) alloc(c *gpurt.Ctx, n int64) (gpurt.Buffer, error) {
	b, err := c.Alloc(int(max(n, 4)))
	if err == nil {
		g.owned = append(g.owned, b)
	}
	return b, err
}

// heavyInput is the column lists of the heavy sets of R and S, made on
// the host once for every owner of a run.
type heavyInput struct {
	p    *allpairs.Problem
	sp   *allpairs.MMJoinSplit
	once sync.Once
	offs [2][]uint64
	cols [2][]uint32
}

// lists returns side's lists (0: R, 1: S), made at the first call.
func (h *heavyInput) lists(side int) ([]uint64, []uint32) {
	h.once.Do(func() {
		col := columnIndex(h.p, h.sp)
		h.offs[0], h.cols[0] = heavyLists(h.p, h.sp.HeavyR, 0, col)
		if !h.p.Self {
			h.offs[1], h.cols[1] = heavyLists(h.p, h.sp.HeavyS, 1, col)
		}
	})
	return h.offs[side], h.cols[side]
}

// setup builds the matrices and the slots; queue calls it first, so that
// it runs while the CPU starts on the light sets. An owner that gets no
// band builds nothing.
func (g *gpuBands) setup(c *gpurt.Ctx) error {
	m := g.m
	build := func(ids []uint32, side int) (gpurt.Buffer, error) {
		offs, cols := g.heavy.lists(side)
		mat, err := g.alloc(c, int64(matrixRows(len(ids)))*int64(m.kp)*int64(m.es))
		if err != nil {
			return mat, err
		}
		if err := c.Memset8(mat, 0, nil); err != nil {
			return mat, err
		}
		if len(cols) == 0 {
			return mat, nil
		}
		do, err := c.Alloc(8 * len(offs))
		if err != nil {
			return mat, err
		}
		defer c.Free(do)
		dc, err := c.Alloc(4 * len(cols))
		if err != nil {
			return mat, err
		}
		defer c.Free(dc)
		// The owners of one GPU share its link: one uploads at a time.
		mu := g.st.dev.UploadLock()
		mu.Lock()
		defer mu.Unlock()
		if err := g.st.stage.Upload(c, nil, do, gpurt.Bytes(offs)); err != nil {
			return mat, err
		}
		if err := g.st.stage.Upload(c, nil, dc, gpurt.Bytes(cols)); err != nil {
			return mat, err
		}
		k, err := g.st.mod.Kernel("set_ones")
		if err != nil {
			return mat, err
		}
		if err := c.Launch(k, blocks(len(ids)), threads, 0, nil, do, dc, uint32(len(ids)), uint64(m.kp), mat, b32(m.es == 2)); err != nil {
			return mat, err
		}
		// The lists are freed on return: wait for the kernel.
		return mat, c.Sync(nil)
	}
	var err error
	if g.a, err = build(g.sp.HeavyR, 0); err != nil {
		return err
	}
	g.b = g.a
	if !g.p.Self {
		if g.b, err = build(g.sp.HeavyS, 1); err != nil {
			return err
		}
	}
	for range m.slots {
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		g.streams = append(g.streams, s)
		ev, err := c.NewEvent()
		if err != nil {
			return err
		}
		g.events = append(g.events, ev)
		d, err := g.alloc(c, 4*int64(m.bandRows)*int64(roundUp(m.hs, 16)))
		if err != nil {
			return err
		}
		g.outs = append(g.outs, d)
	}
	g.ready = true
	return nil
}

func (g *gpuBands) typ() gpurt.GemmType {
	if g.m.es == 2 {
		return gpurt.GemmFloat16
	}
	return gpurt.GemmInt8
}

func (g *gpuBands) queue(b *band, slot int) error {
	return g.st.dev.Do(func(c *gpurt.Ctx) error {
		if !g.ready {
			if err := g.setup(c); err != nil {
				return err
			}
		}
		n := 4 * b.rows * b.ld
		h, err := g.st.hostPool.Get(c, n)
		if err != nil {
			return err
		}
		b.host, b.buf = h, gpurt.Uint32s(h.Bytes()[:n])
		bl, err := c.BLAS()
		if err != nil {
			return err
		}
		kp, es := g.m.kp, g.m.es
		s := g.streams[slot]
		a := g.a.Slice(b.r0*kp*es, b.rows*kp*es)
		// The band's columns: ld rows of S's matrix from c0 (within its
		// padding of 16 rows beyond the last).
		bm := g.b.Slice(b.c0*kp*es, b.ld*kp*es)
		if err := c.Gemm(bl, s, g.typ(), b.rows, b.ld, kp, a, kp, bm, kp, false, g.outs[slot], b.ld); err != nil {
			return err
		}
		if err := c.CopyToHostAsync(h.Bytes()[:n], g.outs[slot].Slice(0, n), s); err != nil {
			return err
		}
		return c.Record(g.events[slot], s)
	})
}

func (g *gpuBands) finish(b *band, slot int) error {
	return g.st.dev.Do(func(c *gpurt.Ctx) error { return c.Wait(g.events[slot]) })
}

func (g *gpuBands) release(b *band) {
	if h, ok := b.host.(*gpurt.HostBuffer); ok {
		g.st.hostPool.Put(h)
	}
}

func (g *gpuBands) direct(ctx context.Context, row0, rows, col0, cols int, dst []uint32, stride int) error {
	n := roundUp(cols, 16)
	tmp := make([]uint32, rows*n)
	err := g.st.dev.Do(func(c *gpurt.Ctx) error {
		if !g.ready {
			if err := g.setup(c); err != nil {
				return err
			}
		}
		d, err := c.Alloc(4 * rows * n)
		if err != nil {
			return err
		}
		defer c.Free(d)
		bl, err := c.BLAS()
		if err != nil {
			return err
		}
		kp, es := g.m.kp, g.m.es
		a := g.a.Slice(row0*kp*es, rows*kp*es)
		b := g.b.Slice(col0*kp*es, n*kp*es)
		if err := c.Gemm(bl, nil, g.typ(), rows, n, kp, a, kp, b, kp, false, d, n); err != nil {
			return err
		}
		return c.CopyToHost(gpurt.Bytes(tmp), d)
	})
	if err != nil {
		return err
	}
	for x := range rows {
		for y := range cols {
			v := tmp[x*n+y]
			if g.float() {
				v = uint32(math.Float32frombits(v))
			}
			dst[x*stride+y] = v
		}
	}
	return nil
}

// close frees the device state once the bands are done.
func (g *gpuBands) close() {
	g.st.dev.Do(func(c *gpurt.Ctx) error {
		c.Synchronize()
		for i := range g.streams {
			c.DestroyEvent(g.events[i])
			c.DestroyStream(g.streams[i])
		}
		for _, b := range g.owned {
			c.Free(b)
		}
		g.owned = nil
		return g.st.hostPool.Trim(c, hostKeep)
	})
}

// columnIndex maps the problem's elements to the split's columns plus one
// (0: not heavy).
func columnIndex(p *allpairs.Problem, sp *allpairs.MMJoinSplit) []int32 {
	col := make([]int32, p.Universe)
	for c, e := range sp.Columns {
		col[e] = int32(c + 1)
	}
	return col
}

// heavyLists returns the columns of the heavy elements of the sets ids of
// R (side 0) or S (side 1), as CSR: row x holds cols[offs[x]:offs[x+1]].
// The CPU's threads share the work.
func heavyLists(p *allpairs.Problem, ids []uint32, side int, col []int32) (offs []uint64, cols []uint32) {
	c := p.R
	if side == 1 {
		c = p.S
	}
	n := len(ids)
	offs = make([]uint64, n+1)
	workers := clamp(p.Threads, 1, max(1, n/16))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for x := w * n / workers; x < (w+1)*n/workers; x++ {
				var k uint64
				for _, e := range c.Set(int(ids[x])) {
					if col[e] != 0 {
						k++
					}
				}
				offs[x+1] = k
			}
		})
	}
	wg.Wait()
	for x := range n {
		offs[x+1] += offs[x]
	}
	cols = make([]uint32, offs[n])
	for w := range workers {
		wg.Go(func() {
			for x := w * n / workers; x < (w+1)*n/workers; x++ {
				q := offs[x]
				for _, e := range c.Set(int(ids[x])) {
					if k := col[e]; k != 0 {
						cols[q] = uint32(k - 1)
						q++
					}
				}
			}
		})
	}
	wg.Wait()
	return offs, cols
}

// hostKeep is how much pinned memory of bands stays allocated between
// runs: pinning costs about as much as copying.
const hostKeep = 512 << 20
