package gpurt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/xsect/xsect/internal/cuda"
)

// ErrClosed is returned by Do on a closed Device.
var ErrClosed = errors.New("gpu: device is closed")

// Device is one open GPU. Its methods are safe for concurrent use: work
// handed to Do runs on the device's own goroutine, one closure at a time.
type Device struct {
	info  Info
	owner int // 0 for the device Open returns; see Owner
	reqs  chan request

	mu     sync.Mutex // guards refs and closed
	refs   int
	closed bool
	quit   chan struct{} // closed by the last Close
	done   chan struct{} // closed when the serving goroutine has exited
}

type request struct {
	f     func(*Ctx) error
	reply chan reply
}

type reply struct {
	err      error
	panicked bool
	panicVal any
}

var (
	openMu sync.Mutex
	opened = map[int]*Device{}
	// opening holds, per ordinal, the Open that is starting its device:
	// others of the same ordinal wait for it, while other GPUs' contexts
	// may start beside it (a tenth of a second or more each). Guarded by
	// openMu, as opened is.
	opening = map[int]*starting{}
)

// starting is an Open in progress: done is closed when it has ended,
// and since is when it began (SetLeft).
type starting struct {
	done  chan struct{}
	since time.Time
}

var requested struct {
	sync.Mutex
	m map[int]bool
}

func noteRequest(ordinal int) {
	requested.Lock()
	defer requested.Unlock()
	if requested.m == nil {
		requested.m = map[int]bool{}
	}
	requested.m[ordinal] = true
}

// Requested returns, in increasing order, the ordinals of the GPUs this
// process has asked to open so far (Open, Owner, Default, Prewarm),
// whether or not they opened: for tests that check that a command touches
// only the GPUs of its --gpus.
func Requested() []int {
	requested.Lock()
	defer requested.Unlock()
	var list []int
	for o := range requested.m {
		list = append(list, o)
	}
	if DefaultStarted() && !requested.m[0] {
		list = append(list, 0) // opening in the background
	}
	slices.Sort(list)
	return list
}

// Open opens the GPU with the given ordinal (0 is the first). Opening a
// device that is already open returns the same *Device; each Open needs
// one Close. Different GPUs open in parallel.
func Open(ordinal int) (*Device, error) {
	noteRequest(ordinal)
	if err := Available(); err != nil {
		return nil, err
	}
	return openShared(ordinal, start)
}

// openShared is Open's sharing of one device per ordinal, with the
// starting of a device given.
func openShared(ordinal int, startDevice func(ordinal, owner int) (*Device, error)) (*Device, error) {
	for {
		openMu.Lock()
		if d := opened[ordinal]; d != nil {
			d.mu.Lock()
			d.refs++
			d.mu.Unlock()
			openMu.Unlock()
			return d, nil
		}
		st, busy := opening[ordinal]
		if !busy {
			break
		}
		openMu.Unlock()
		// Then take the device it opened, or start it again if it failed
		// or was closed meanwhile.
		<-st.done
	}
	ready := &starting{done: make(chan struct{}), since: time.Now()}
	opening[ordinal] = ready
	openMu.Unlock()
	d, err := startDevice(ordinal, 0)
	openMu.Lock()
	delete(opening, ordinal)
	if err == nil {
		opened[ordinal] = d
	}
	openMu.Unlock()
	close(ready.done)
	return d, err
}

// start starts a goroutine that owns GPU ordinal's primary context, as
// owner number owner.
func start(ordinal, owner int) (*Device, error) {
	defer record(fmt.Sprintf("GPU %d", ordinal), time.Now(), 0)
	info, err := deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{info: info, owner: owner, reqs: make(chan request), refs: 1, quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error)
	go d.serve(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// Info describes the device.
func (d *Device) Info() Info { return d.info }

// Owner returns d's number among the owners of its GPU: 0 for the device
// that Open returns, 1 and up for the extra owners of Owner.
func (d *Device) Owner() int { return d.owner }

// Do runs f on the goroutine that owns the device's context and returns its
// error. f must not keep c after it returns, nor call Do itself (that would
// deadlock). A panic in f is re-raised in the caller.
func (d *Device) Do(f func(c *Ctx) error) error {
	rc := make(chan reply, 1)
	select {
	case d.reqs <- request{f: f, reply: rc}:
	case <-d.done:
		return ErrClosed
	}
	r := <-rc
	if r.panicked {
		panic(r.panicVal)
	}
	return r.err
}

// FreeMemory returns the device's free and total memory in bytes.
func (d *Device) FreeMemory() (free, total uint64, err error) {
	err = d.Do(func(c *Ctx) error {
		free, total, err = c.MemInfo()
		return err
	})
	return
}

// Close releases one Open of the device. The last Close unloads its modules
// and releases its context; memory still allocated is freed with it.
func (d *Device) Close() error {
	openMu.Lock()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		openMu.Unlock()
		return nil
	}
	d.refs--
	last := d.refs == 0
	if last {
		d.closed = true
		if opened[d.info.Ordinal] == d {
			delete(opened, d.info.Ordinal)
		}
	}
	d.mu.Unlock()
	openMu.Unlock()
	if !last {
		return nil
	}
	close(d.quit)
	<-d.done
	return nil
}

// serve owns the device's context on a locked OS thread: CUDA binds the
// current context per thread, so every call must come from this one.
func (d *Device) serve(ready chan<- error) {
	runtime.LockOSThread()
	// The thread is never unlocked: when this goroutine exits, the runtime
	// ends the thread, and with it the context binding.
	defer close(d.done)
	cdev, err := cuda.DeviceGet(d.info.Ordinal)
	if err != nil {
		ready <- fmt.Errorf("gpu: device %d: %w", d.info.Ordinal, err)
		return
	}
	cctx, err := cuda.PrimaryCtxRetain(cdev)
	if err != nil {
		ready <- fmt.Errorf("gpu: device %d: %w", d.info.Ordinal, err)
		return
	}
	if err := cuda.CtxSetCurrent(cctx); err != nil {
		cuda.PrimaryCtxRelease(cdev)
		ready <- fmt.Errorf("gpu: device %d: %w", d.info.Ordinal, err)
		return
	}
	c := &Ctx{dev: d, modules: map[string]*Module{}, syncLaunches: os.Getenv("XSECT_GPU_SYNC") == "1"}
	ready <- nil
	for {
		select {
		case req := <-d.reqs:
			req.reply <- c.run(req.f)
			continue
		case <-d.quit:
		}
		break
	}
	c.release()
	cuda.PrimaryCtxRelease(cdev)
}

func (c *Ctx) run(f func(*Ctx) error) (r reply) {
	defer func() {
		if v := recover(); v != nil {
			r = reply{panicked: true, panicVal: v}
		}
	}()
	return reply{err: f(c)}
}

// Ctx is the device's context as seen from inside Do. It is valid only
// during the Do call that received it, on that call's goroutine.
type Ctx struct {
	dev          *Device
	args         cuda.Args
	modules      map[string]*Module
	blas         *BLAS
	lastLaunch   string // the last kernel launched, named in asynchronous errors
	syncLaunches bool   // XSECT_GPU_SYNC=1: synchronise after every launch
}

// Device returns the device c belongs to.
func (c *Ctx) Device() *Device { return c.dev }

// Info describes the device.
func (c *Ctx) Info() Info { return c.dev.info }

// MemInfo returns the device's free and total memory in bytes.
func (c *Ctx) MemInfo() (free, total uint64, err error) {
	free, total, err = cuda.MemGetInfo()
	return free, total, c.wrap(err)
}

// Synchronize waits until all work queued on the device has finished, and
// returns the first asynchronous error (a fault in a kernel, say).
func (c *Ctx) Synchronize() error { return c.asyncErr(cuda.CtxSynchronize()) }

// wrap prefixes CUDA errors with the package and device.
func (c *Ctx) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gpu %d: %w", c.dev.info.Ordinal, err)
}

// asyncErr wraps an error from a synchronising call, naming the last kernel
// launched: a fault in a kernel shows up at the next synchronisation.
func (c *Ctx) asyncErr(err error) error {
	if err == nil {
		return nil
	}
	if c.lastLaunch != "" {
		return fmt.Errorf("gpu %d: %w (last kernel launched: %s)", c.dev.info.Ordinal, err, c.lastLaunch)
	}
	return c.wrap(err)
}

// release frees what the context cached: modules and the cuBLAS handle.
func (c *Ctx) release() {
	if c.blas != nil {
		cuda.BLASDestroy(c.blas.h)
	}
	for _, m := range c.modules {
		cuda.ModuleUnload(m.mod)
	}
}
