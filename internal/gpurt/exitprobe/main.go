// Command exitprobe measures what a process that used a GPU pays at its
// exit, and what handing the teardown off (gpurt.HandOffTeardown) leaves
// of it: it opens the first GPU, allocates device memory, pinned host
// memory and registered host memory as its flags say, and ends in the way
// -mode says, printing when it is about to exit (ready_ns, Unix
// nanoseconds) so that the caller can time the exit itself. The
// measurement is scripts/gpu-exit.sh.
//
//	exitprobe -mode exit|handoff|destroy [-dev MiB] [-pinned MiB] [-register MiB]
//	exitprobe -mode hold [-hold DURATION] [-context]
//
// exit: os.Exit with everything open; handoff: gpurt.HandOffTeardown, then
// os.Exit; destroy: free everything and close the device first, timed;
// hold: start the driver (and a context with -context) and hold it, for
// the start of other processes' drivers meanwhile.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

func main() {
	gpurt.TeardownHelper()
	mode := flag.String("mode", "exit", "how the process ends: exit, handoff or destroy; or hold")
	hold := flag.Duration("hold", 10*time.Second, "with -mode hold: how long to hold the driver")
	withContext := flag.Bool("context", false, "with -mode hold: hold a context of the first GPU too, not the driver alone")
	devMiB := flag.Int("dev", 0, "device memory to allocate and fill, MiB")
	pinnedMiB := flag.Int("pinned", 0, "pinned host memory to allocate (AllocHost) and fill, MiB")
	registerMiB := flag.Int("register", 0, "host memory to fill and register (Register), MiB")
	flag.Parse()
	if *mode == "hold" {
		holdDriver(*hold, *withContext)
		return
	}
	if *mode != "exit" && *mode != "handoff" && *mode != "destroy" {
		fmt.Fprintf(os.Stderr, "exitprobe: -mode %q: want exit, handoff or destroy\n", *mode)
		os.Exit(2)
	}
	start := time.Now()
	dev, err := gpurt.Default()
	if err != nil {
		fail(err)
	}
	opened := time.Since(start)
	start = time.Now()
	var held holdings
	if err := dev.Do(func(c *gpurt.Ctx) error { return held.allocate(c, *devMiB, *pinnedMiB, *registerMiB) }); err != nil {
		fail(err)
	}
	fmt.Printf("open_ms=%.1f alloc_ms=%.1f ", ms(opened), ms(time.Since(start)))
	switch *mode {
	case "handoff":
		start = time.Now()
		if err := gpurt.HandOffTeardown(); err != nil {
			fail(err)
		}
		fmt.Printf("handoff_ms=%.1f ", ms(time.Since(start)))
	case "destroy":
		start = time.Now()
		if err := dev.Do(held.free); err != nil {
			fail(err)
		}
		freed := time.Since(start)
		start = time.Now()
		if err := dev.Close(); err != nil {
			fail(err)
		}
		fmt.Printf("free_ms=%.1f close_ms=%.1f ", ms(freed), ms(time.Since(start)))
	}
	fmt.Printf("ready_ns=%d\n", time.Now().UnixNano())
	os.Exit(0)
}

// holdDriver starts the driver (and opens the first GPU where
// withContext), then holds it for d: whether a CUDA process alive keeps
// the next process's start of the driver short.
func holdDriver(d time.Duration, withContext bool) {
	start := time.Now()
	var err error
	if withContext {
		_, err = gpurt.Default()
	} else {
		_, err = gpurt.Devices()
	}
	if err != nil {
		fail(err)
	}
	fmt.Printf("held_from_ms=%.1f context=%v\n", ms(time.Since(start)), withContext)
	time.Sleep(d)
}

// holdings is what the probe allocated.
type holdings struct {
	device     []gpurt.Buffer
	pinned     []*gpurt.HostBuffer
	registered []byte
}

// allocate allocates device memory and pinned host memory in pieces of
// 1 GiB and 256 MiB, and registers one host buffer, each written once so
// that it is really backed.
func (h *holdings) allocate(c *gpurt.Ctx, devMiB, pinnedMiB, registerMiB int) error {
	for left := devMiB; left > 0; left -= 1024 {
		b, err := c.Alloc(min(left, 1024) << 20)
		if err != nil {
			return err
		}
		h.device = append(h.device, b)
		if err := c.Memset8(b, 1, nil); err != nil {
			return err
		}
	}
	for left := pinnedMiB; left > 0; left -= 256 {
		b, err := c.AllocHost(min(left, 256) << 20)
		if err != nil {
			return err
		}
		h.pinned = append(h.pinned, b)
		clear(b.Bytes())
	}
	if registerMiB > 0 {
		h.registered = make([]byte, registerMiB<<20)
		for i := range h.registered {
			h.registered[i] = 1
		}
		if err := c.Register(h.registered); err != nil {
			return err
		}
	}
	return c.Synchronize()
}

// free frees everything allocate allocated.
func (h *holdings) free(c *gpurt.Ctx) error {
	for _, b := range h.device {
		if err := c.Free(b); err != nil {
			return err
		}
	}
	for _, b := range h.pinned {
		if err := c.FreeHost(b); err != nil {
			return err
		}
	}
	if h.registered != nil {
		return c.Unregister(h.registered)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "exitprobe:", err)
	os.Exit(1)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
