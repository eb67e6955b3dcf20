package gpuintersect

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

// Engine runs pairwise intersections on one device. It keeps the compiled
// kernels, a stream, pinned staging memory and scratch buffers that grow to
// the largest problem seen, so repeated calls allocate nothing; Close frees
// them. Its methods are safe for concurrent use (the device runs one at a
// time).
type Engine struct {
	dev     *gpurt.Device
	sms     int
	ipTile  uint64   // merge-path items per block of ip-obs and ip-hi
	ip      ipConfig // the ip method's block shape
	variant string   // ip's shape, for benchmarks

	// MemoryLimit, if non-zero, caps the device memory the engine plans
	// for, below what the device has free. Tests use it to force tiling.
	MemoryLimit uint64

	ipSrc gpurt.Source // the ip method's module: its block shape

	// Owned by the device's goroutine: touched only inside Do.
	mods    map[string]*gpurt.Module // by method family, loaded at first use
	kernels map[kernelKey]*gpurt.Kernel
	grids   map[string]int // persistent grid sizes, by kernel
	stream  *gpurt.Stream
	start   *gpurt.Event
	stop    *gpurt.Event
	scratch map[string]gpurt.Buffer
	stage   *gpurt.Stager // uploads and downloads
	total   []uint64      // host copy of the device's total counter

	closeOnce sync.Once
}

// New returns an engine for dev. A method's kernels are compiled (or loaded
// from the disk cache) the first time it runs.
func New(dev *gpurt.Device) (*Engine, error) {
	return newEngine(dev, defaultIP, gpurt.NewStager(stageSlots, stageBytes))
}

// ipConfig is the block shape of the ip method's own module, which
// benchmarks tune: threads per block, merge items per thread, and whether
// tiles load through registers instead of cp.async.
type ipConfig struct {
	threads, items int
	syncLoad       bool
	fast           bool // the sentinel walk (kernels ipf_*)
}

// defaultIP is the fastest shape measured on the H100 (docs/GPU.md).
var defaultIP = ipConfig{threads: 512, items: 23, fast: true}

func (c ipConfig) String() string {
	s := fmt.Sprintf("%dx%d", c.threads, c.items)
	if c.syncLoad {
		s += "s"
	}
	if c.fast {
		s += "f"
	}
	return s
}

func newEngine(dev *gpurt.Device, ip ipConfig, stage *gpurt.Stager) (*Engine, error) {
	if ip.items < 1 || ip.items > 31 || ip.threads%32 != 0 || ip.threads < 64 || ip.threads > 1024 {
		return nil, fmt.Errorf("gpuintersect: IP block shape %v out of range", ip)
	}
	ipSrc := ipSource(ip)
	e := &Engine{dev: dev, sms: dev.Info().SMs, ipTile: uint64(threads * ipItems), ip: ip, variant: ip.String(), ipSrc: ipSrc,
		mods: map[string]*gpurt.Module{}, kernels: map[kernelKey]*gpurt.Kernel{}, grids: map[string]int{}, scratch: map[string]gpurt.Buffer{},
		stage: stage, total: make([]uint64, 1)}
	err := dev.Do(func(c *gpurt.Ctx) error {
		var err error
		if e.stream, err = c.NewStream(); err != nil {
			return err
		}
		if e.start, err = c.NewEvent(); err != nil {
			return err
		}
		e.stop, err = c.NewEvent()
		return err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Close frees the engine's device and pinned memory. Sets uploaded through
// it must be freed first.
func (e *Engine) Close() error {
	var err error
	e.closeOnce.Do(func() {
		err = e.dev.Do(func(c *gpurt.Ctx) error {
			errs := []error{c.Sync(e.stream)}
			for name, b := range e.scratch {
				errs = append(errs, c.Free(b))
				delete(e.scratch, name)
			}
			errs = append(errs, e.stage.Free(c))
			errs = append(errs, c.DestroyEvent(e.start), c.DestroyEvent(e.stop), c.DestroyStream(e.stream))
			return errors.Join(errs...)
		})
		engines.Forget(e.dev, e)
	})
	return err
}

// Device returns the engine's device.
func (e *Engine) Device() *gpurt.Device { return e.dev }

type kernelKey struct {
	mod  *gpurt.Module
	name string
}

// module returns the module of a method family (the prefix of its
// kernels' names: "obs" for obs_total, obs_splitters...), compiling or
// loading it at first use. Each holds the helper kernels and the family's
// own, so a cold disk cache costs one family's compilation; "ip" is the
// ip method's, in its own block shape.
func (e *Engine) module(c *gpurt.Ctx, family string) (*gpurt.Module, error) {
	if m := e.mods[family]; m != nil {
		return m, nil
	}
	src := e.ipSrc
	if family != "ip" {
		src = familySource(family)
	}
	m, err := c.Load(src)
	if err != nil {
		return nil, err
	}
	e.mods[family] = m
	return m, nil
}

// familyOf returns the family of a kernel: its name up to the first '_'.
func familyOf(name string) string {
	if i := strings.IndexByte(name, '_'); i >= 0 {
		return name[:i]
	}
	return name
}

// kernel returns the named kernel from its family's module.
func (e *Engine) kernel(c *gpurt.Ctx, name string) (*gpurt.Kernel, error) {
	m, err := e.module(c, familyOf(name))
	if err != nil {
		return nil, err
	}
	return e.kernelIn(m, name)
}

func (e *Engine) kernelIn(m *gpurt.Module, name string) (*gpurt.Kernel, error) {
	key := kernelKey{m, name}
	if k := e.kernels[key]; k != nil {
		return k, nil
	}
	k, err := m.Kernel(name)
	if err != nil {
		return nil, err
	}
	e.kernels[key] = k
	return k, nil
}

// persistentGrid returns the number of blocks of k that fill the device
// once, capped at units.
func (e *Engine) persistentGrid(c *gpurt.Ctx, name string, units int) (int, error) {
	g, ok := e.grids[name]
	if !ok {
		k, err := e.kernel(c, name)
		if err != nil {
			return 0, err
		}
		per, err := c.Occupancy(k, threads, 0)
		if err != nil {
			return 0, err
		}
		g = max(1, per) * e.sms
		e.grids[name] = g
	}
	return max(1, min(g, units)), nil
}

// buffer returns scratch device memory of at least n bytes under name,
// reallocating only to grow.
func (e *Engine) buffer(c *gpurt.Ctx, name string, n int) (gpurt.Buffer, error) {
	b, ok := e.scratch[name]
	if !ok || b.Len() < n {
		// Wait for queued work that may still use the old buffer.
		if ok {
			if err := c.Sync(e.stream); err != nil {
				return gpurt.Buffer{}, err
			}
		}
		err := c.Grow(&b, max(n, 256))
		e.scratch[name] = b
		if err != nil {
			return gpurt.Buffer{}, err
		}
	}
	return b.Slice(0, n), nil
}

// scratchBytes returns the device memory the engine holds.
func (e *Engine) scratchBytes() uint64 {
	var n uint64
	for _, b := range e.scratch {
		n += uint64(b.Len())
	}
	return n
}

// launch queues a kernel of its family's module on the engine's stream.
func (e *Engine) launch(c *gpurt.Ctx, name string, grid, block int, args ...any) error {
	m, err := e.module(c, familyOf(name))
	if err != nil {
		return err
	}
	return e.launchIn(c, m, name, grid, block, args...)
}

func (e *Engine) launchIn(c *gpurt.Ctx, m *gpurt.Module, name string, grid, block int, args ...any) error {
	k, err := e.kernelIn(m, name)
	if err != nil {
		return err
	}
	return c.Launch(k, gpurt.Dim{X: grid}, gpurt.Dim{X: block}, 0, e.stream, args...)
}

// Set is a strictly increasing set resident in device memory.
type Set struct {
	buf         gpurt.Buffer
	n           int
	first, last uint32
	engine      *Engine
}

// Len returns the number of elements.
func (s *Set) Len() int { return s.n }

// Bytes returns the device memory the set occupies.
func (s *Set) Bytes() int { return s.buf.Len() }

// Upload copies a strictly increasing set to the device.
func (e *Engine) Upload(s []uint32) (*Set, error) {
	set := &Set{n: len(s), engine: e}
	if len(s) > 0 {
		set.first, set.last = s[0], s[len(s)-1]
	}
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		var err error
		if set.buf, err = c.Alloc(4 * len(s)); err != nil {
			return err
		}
		if err := e.upload(c, set.buf, s); err != nil {
			c.Free(set.buf)
			return err
		}
		return c.Sync(e.stream)
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// Download appends the elements of s to dst.
func (e *Engine) Download(dst []uint32, s *Set) ([]uint32, error) {
	n := len(dst)
	dst = append(dst, make([]uint32, s.n)...)
	err := e.dev.Do(func(c *gpurt.Ctx) error { return c.CopyToHost(gpurt.Bytes(dst[n:]), s.buf) })
	return dst, err
}

// Free frees the set's device memory.
func (e *Engine) Free(s *Set) error {
	if s == nil || s.buf.Len() == 0 {
		return nil
	}
	err := e.dev.Do(func(c *gpurt.Ctx) error { return c.Free(s.buf) })
	s.buf = gpurt.Buffer{}
	return err
}

// Staging: copies from ordinary (pageable) Go memory run well below the
// bus's speed, so uploads and downloads go through pinned slots that
// goroutines fill or empty in parallel while the device copies others.
// BenchmarkSISI's notes compare other ring shapes (docs/GPU.md).
const (
	stageSlots = 32
	stageBytes = 2 << 20
)

// upload queues the copy of src into dst on the engine's stream. It
// returns once src may change again; the device copy may still be running.
func (e *Engine) upload(c *gpurt.Ctx, dst gpurt.Buffer, src []uint32) error {
	b := gpurt.Bytes(src)
	return e.stage.Upload(c, e.stream, dst.Slice(0, len(b)), b)
}

// download copies src, whose work is queued on the engine's stream, into
// dst, and waits for it.
func (e *Engine) download(c *gpurt.Ctx, dst []uint32, src gpurt.Buffer) error {
	return e.stage.Download(c, e.stream, gpurt.Bytes(dst), src)
}

// devSet is a set on the device as the kernels see it.
type devSet struct {
	buf         gpurt.Buffer
	n           uint64
	first, last uint32
}

func (s *Set) dev() devSet { return devSet{buf: s.buf, n: uint64(s.n), first: s.first, last: s.last} }

// job is a method's main kernel, ready to run in any mode.
type job struct {
	mod     *gpurt.Module // nil: the module of kernel's family
	kernel  string        // the kernel's base name: kernel_total, _blocks, _write
	threads int           // block size; 0: threads
	grid    int
	units   int   // work units: the length of counts and offsets
	args    []any // the kernel's arguments before the four sinks
}

// prepare queues a method's preparation (partition, hash table, bitmaps)
// for a ∩ b and returns its main kernel. ok is false when the result is
// empty without any work.
func (e *Engine) prepare(c *gpurt.Ctx, a, b devSet, m Method) (j job, ok bool, err error) {
	if a.n == 0 || b.n == 0 || a.last < b.first || b.last < a.first {
		return job{}, false, nil
	}
	small, big := a, b
	if small.n > big.n {
		small, big = big, small
	}
	switch m {
	case IP, IPOBS, IPHI:
		name := map[Method]string{IP: "ip", IPOBS: "ipobs", IPHI: "iphi"}[m]
		tile, block := e.ipTile, threads
		if m == IP {
			tile, block = uint64(e.ip.threads*e.ip.items), e.ip.threads
		}
		// The partition comes from the method's module: its tile shape.
		mod, err := e.module(c, name)
		if err != nil {
			return job{}, false, err
		}
		nblocks := (a.n + b.n + tile - 1) / tile
		splits, err := e.buffer(c, "splits", int(8*(nblocks+1)))
		if err != nil {
			return job{}, false, err
		}
		if err := e.launchIn(c, mod, "ip_partition", int((nblocks+1+255)/256), 256, a.buf, a.n, b.buf, b.n, nblocks, splits); err != nil {
			return job{}, false, err
		}
		if m == IP && e.ip.fast {
			name = "ipf"
		}
		return job{mod: mod, kernel: name, grid: int(nblocks), threads: block, units: int(nblocks), args: []any{a.buf, a.n, b.buf, b.n, splits}}, true, nil
	case OBS:
		spl, err := e.buffer(c, "splitters", 4*obsSplitter)
		if err != nil {
			return job{}, false, err
		}
		if err := e.launch(c, "obs_splitters", obsSplitter/256, 256, big.buf, big.n, spl); err != nil {
			return job{}, false, err
		}
		units := int((small.n + probeChunk - 1) / probeChunk)
		grid, err := e.persistentGrid(c, "obs_write", units)
		if err != nil {
			return job{}, false, err
		}
		return job{kernel: "obs", grid: grid, units: units, args: []any{small.buf, small.n, big.buf, big.n, spl}}, true, nil
	case HI:
		tbits := max(10, bits.Len64(2*small.n-1)) // a power of two >= 2|small|
		if tbits > 31 {
			return job{}, false, fmt.Errorf("gpuintersect: hi: the smaller set (%d elements) is too large for a hash table", small.n)
		}
		table, err := e.buffer(c, "table", 4<<tbits)
		if err != nil {
			return job{}, false, err
		}
		flag, err := e.buffer(c, "flag", 4)
		if err != nil {
			return job{}, false, err
		}
		if err := c.Memset32(table, ^uint32(0), e.stream); err != nil {
			return job{}, false, err
		}
		if err := c.Memset32(flag, 0, e.stream); err != nil {
			return job{}, false, err
		}
		grid := int(min((small.n+255)/256, uint64(e.sms*8)))
		if err := e.launch(c, "hi_build", grid, 256, small.buf, small.n, table, int32(tbits), flag); err != nil {
			return job{}, false, err
		}
		units := int((big.n + probeChunk - 1) / probeChunk)
		pgrid, err := e.persistentGrid(c, "hi_write", units)
		if err != nil {
			return job{}, false, err
		}
		return job{kernel: "hi", grid: pgrid, units: units, args: []any{big.buf, big.n, table, int32(tbits), flag}}, true, nil
	case Bitmap, BitmapDynamic:
		lo, hi := max(a.first, b.first), min(a.last, b.last)
		words := (uint64(hi-lo))/32 + 1
		padded := int((words + 3) / 4 * 4) // whole 16-byte vectors
		// bm_build from the method's own module: one family to compile.
		mod, err := e.module(c, map[Method]string{Bitmap: "bm", BitmapDynamic: "bmd"}[m])
		if err != nil {
			return job{}, false, err
		}
		build := func(name string, s devSet) (gpurt.Buffer, error) {
			bm, err := e.buffer(c, name, 4*padded)
			if err != nil {
				return gpurt.Buffer{}, err
			}
			if err := c.Memset32(bm, 0, e.stream); err != nil {
				return gpurt.Buffer{}, err
			}
			grid := int(min((s.n+8*256-1)/(8*256), uint64(e.sms*16)))
			return bm, e.launchIn(c, mod, "bm_build", grid, 256, s.buf, s.n, lo, hi, bm)
		}
		if m == BitmapDynamic {
			bm, err := build("bitmapA", small)
			if err != nil {
				return job{}, false, err
			}
			units := int((big.n + probeChunk - 1) / probeChunk)
			grid, err := e.persistentGrid(c, "bmd_write", units)
			if err != nil {
				return job{}, false, err
			}
			return job{kernel: "bmd", grid: grid, units: units, args: []any{big.buf, big.n, bm, lo, hi}}, true, nil
		}
		x, err := build("bitmapA", a)
		if err != nil {
			return job{}, false, err
		}
		y, err := build("bitmapB", b)
		if err != nil {
			return job{}, false, err
		}
		units := int((words + bmChunk - 1) / bmChunk)
		grid, err := e.persistentGrid(c, "bm_write", units)
		if err != nil {
			return job{}, false, err
		}
		return job{kernel: "bm", grid: grid, units: units, args: []any{x, y, words, lo}}, true, nil
	}
	return job{}, false, fmt.Errorf("gpuintersect: unknown method %v", m)
}

// jobModule returns the module j's kernels come from.
func (e *Engine) jobModule(c *gpurt.Ctx, j job) (*gpurt.Module, error) {
	if j.mod != nil {
		return j.mod, nil
	}
	return e.module(c, j.kernel)
}

// run queues j in one mode with its sinks.
func (e *Engine) run(c *gpurt.Ctx, j job, mode string, counts, offsets, out, total gpurt.Buffer) error {
	args := append(j.args[:len(j.args):len(j.args)], counts, offsets, out, total)
	mod, err := e.jobModule(c, j)
	if err != nil {
		return err
	}
	block := j.threads
	if block == 0 {
		block = threads
	}
	return e.launchIn(c, mod, j.kernel+"_"+mode, j.grid, block, args...)
}

// countOn queues a ∩ b's count and returns it; timing, if non-nil,
// receives the device time of the kernels.
func (e *Engine) countOn(c *gpurt.Ctx, a, b devSet, m Method, timing *time.Duration) (uint64, error) {
	total, err := e.buffer(c, "total", 8)
	if err != nil {
		return 0, err
	}
	if timing != nil {
		if err := c.Record(e.start, e.stream); err != nil {
			return 0, err
		}
	}
	if err := c.Memset32(total, 0, e.stream); err != nil {
		return 0, err
	}
	j, ok, err := e.prepare(c, a, b, m)
	if err != nil {
		return 0, err
	}
	if ok {
		if err := e.run(c, j, "total", gpurt.Buffer{}, gpurt.Buffer{}, gpurt.Buffer{}, total); err != nil {
			return 0, err
		}
	}
	if timing != nil {
		if err := c.Record(e.stop, e.stream); err != nil {
			return 0, err
		}
	}
	if err := c.CopyToHostAsync(gpurt.Bytes(e.total), total, e.stream); err != nil {
		return 0, err
	}
	if err := c.Sync(e.stream); err != nil {
		return 0, err
	}
	if timing != nil {
		d, err := c.Elapsed(e.start, e.stop)
		if err != nil {
			return 0, err
		}
		*timing = d
	}
	return e.total[0], nil
}

// intersectOn computes a ∩ b into device memory and returns the buffer
// holding it (scratch "out", valid until the next call) and its length.
func (e *Engine) intersectOn(c *gpurt.Ctx, a, b devSet, m Method, timing *time.Duration) (gpurt.Buffer, uint64, error) {
	if timing != nil {
		if err := c.Record(e.start, e.stream); err != nil {
			return gpurt.Buffer{}, 0, err
		}
	}
	j, ok, err := e.prepare(c, a, b, m)
	if err != nil || !ok {
		if timing != nil {
			*timing = 0
		}
		return gpurt.Buffer{}, 0, err
	}
	counts, err := e.buffer(c, "counts", 4*j.units)
	if err != nil {
		return gpurt.Buffer{}, 0, err
	}
	offsets, err := e.buffer(c, "offsets", 8*j.units)
	if err != nil {
		return gpurt.Buffer{}, 0, err
	}
	total, err := e.buffer(c, "total", 8)
	if err != nil {
		return gpurt.Buffer{}, 0, err
	}
	// The output is at most the smaller set: allocate that up front, so
	// that counting and writing run back to back with no wait between.
	out, err := e.buffer(c, "out", int(4*min(a.n, b.n)))
	if err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if err := e.run(c, j, "blocks", counts, gpurt.Buffer{}, gpurt.Buffer{}, gpurt.Buffer{}); err != nil {
		return gpurt.Buffer{}, 0, err
	}
	// scan_counts is in every module: take the job's, already loaded.
	mod, err := e.jobModule(c, j)
	if err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if err := e.launchIn(c, mod, "scan_counts", 1, 1024, counts, uint64(j.units), offsets, total); err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if err := e.run(c, j, "write", gpurt.Buffer{}, offsets, out, gpurt.Buffer{}); err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if timing != nil {
		if err := c.Record(e.stop, e.stream); err != nil {
			return gpurt.Buffer{}, 0, err
		}
	}
	if err := c.CopyToHostAsync(gpurt.Bytes(e.total), total, e.stream); err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if err := c.Sync(e.stream); err != nil {
		return gpurt.Buffer{}, 0, err
	}
	if timing != nil {
		d, err := c.Elapsed(e.start, e.stop)
		if err != nil {
			return gpurt.Buffer{}, 0, err
		}
		*timing = d
	}
	n := e.total[0]
	return out.Slice(0, int(4*n)), n, nil
}

// CountSets returns |a ∩ b| for sets on the device, and the device time
// its kernels took.
func (e *Engine) CountSets(a, b *Set, m Method) (int, time.Duration, error) {
	var n uint64
	var d time.Duration
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		var err error
		n, err = e.countOn(c, a.dev(), b.dev(), m, &d)
		return err
	})
	return int(n), d, err
}

// IntersectSets computes a ∩ b for sets on the device, leaving the result
// there, and returns it with the device time its kernels took.
func (e *Engine) IntersectSets(a, b *Set, m Method) (*Set, time.Duration, error) {
	var out *Set
	var d time.Duration
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		buf, n, err := e.intersectOn(c, a.dev(), b.dev(), m, &d)
		if err != nil {
			return err
		}
		// Move the result out of scratch into a buffer of its own.
		own, err := c.Alloc(int(4 * n))
		if err != nil {
			return err
		}
		if err := c.CopyDevice(own, buf, e.stream); err != nil {
			c.Free(own)
			return err
		}
		out = &Set{buf: own, n: int(n), engine: e}
		if n > 0 {
			var ends [2]uint32
			if err := c.CopyToHost(gpurt.Bytes(ends[:1]), own.Slice(0, 4)); err != nil {
				return err
			}
			if err := c.CopyToHost(gpurt.Bytes(ends[1:]), own.Slice(int(4*(n-1)), 4)); err != nil {
				return err
			}
			out.first, out.last = ends[0], ends[1]
		}
		return c.Sync(e.stream)
	})
	return out, d, err
}

// reserve is device memory left unplanned, for the context, the kernels
// and other users.
const reserve = 512 << 20

// tiles plans a ∩ b (trimmed) on the device's free memory.
func (e *Engine) tiles(c *gpurt.Ctx, a, b []uint32, m Method, materialise bool) ([]tile, error) {
	free, _, err := c.MemInfo()
	if err != nil {
		return nil, err
	}
	budget := free + e.scratchBytes() // scratch is reused
	if budget < reserve+(64<<20) {
		return nil, fmt.Errorf("gpuintersect: only %s of device memory free", gpurt.FormatBytes(free))
	}
	budget -= reserve
	if e.MemoryLimit > 0 {
		budget = min(budget, e.MemoryLimit)
	}
	maxElems, maxSpan := m.need(materialise).limits(budget)
	return planTiles(a, b, maxElems, maxSpan)
}

// Count returns |a ∩ b| computed with method m, transfers included.
func (e *Engine) Count(a, b []uint32, m Method) (int, error) {
	a, b = trim(a, b)
	if len(a) == 0 || len(b) == 0 {
		return 0, nil
	}
	var n uint64
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		ts, err := e.tiles(c, a, b, m, false)
		if err != nil {
			return err
		}
		for _, t := range ts {
			da, db, err := e.uploadTile(c, a, b, t)
			if err != nil {
				return err
			}
			k, err := e.countOn(c, da, db, m, nil)
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	return int(n), err
}

// Intersect appends a ∩ b to dst, computed with method m, transfers
// included.
func (e *Engine) Intersect(dst, a, b []uint32, m Method) ([]uint32, error) {
	a, b = trim(a, b)
	if len(a) == 0 || len(b) == 0 {
		return dst, nil
	}
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		ts, err := e.tiles(c, a, b, m, true)
		if err != nil {
			return err
		}
		for _, t := range ts {
			da, db, err := e.uploadTile(c, a, b, t)
			if err != nil {
				return err
			}
			out, n, err := e.intersectOn(c, da, db, m, nil)
			if err != nil {
				return err
			}
			k := len(dst)
			dst = append(dst, make([]uint32, n)...)
			if err := e.download(c, dst[k:], out); err != nil {
				return err
			}
		}
		return nil
	})
	return dst, err
}

// uploadTile copies one tile's elements into the engine's input buffers.
func (e *Engine) uploadTile(c *gpurt.Ctx, a, b []uint32, t tile) (devSet, devSet, error) {
	sa, sb := a[t.a0:t.a1], b[t.b0:t.b1]
	ba, err := e.buffer(c, "inA", 4*len(sa))
	if err != nil {
		return devSet{}, devSet{}, err
	}
	bb, err := e.buffer(c, "inB", 4*len(sb))
	if err != nil {
		return devSet{}, devSet{}, err
	}
	if err := e.upload(c, ba, sa); err != nil {
		return devSet{}, devSet{}, err
	}
	if err := e.upload(c, bb, sb); err != nil {
		return devSet{}, devSet{}, err
	}
	da := devSet{buf: ba, n: uint64(len(sa)), first: sa[0], last: sa[len(sa)-1]}
	db := devSet{buf: bb, n: uint64(len(sb)), first: sb[0], last: sb[len(sb)-1]}
	return da, db, nil
}
