//go:build !windows

package gpubatmap

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ebitengine/purego"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// processStart approximates the test process's start, for TestOpenSteps.
var processStart = time.Now()

// TestOpenSteps times the steps of opening the GPU, in a fresh process
// (run it alone: -test.run TestOpenSteps). XSECT_DLOPEN_LAZY=1 opens the
// driver library with RTLD_LAZY first, XSECT_CLOSE=1 closes the device at
// the end; compare "in process" with the process's wall time for the cost
// of its exit.
func TestOpenSteps(t *testing.T) {
	gputest.Need(t, gpurt.Present())
	t0 := time.Now()
	lap := func(what string) {
		t.Logf("%-40s %7.1f ms", what, float64(time.Since(t0).Microseconds())/1e3)
		t0 = time.Now()
	}
	mode := purego.RTLD_NOW | purego.RTLD_GLOBAL
	if os.Getenv("XSECT_DLOPEN_LAZY") == "1" {
		mode = purego.RTLD_LAZY | purego.RTLD_GLOBAL
	}
	if _, err := purego.Dlopen("libcuda.so.1", mode); err != nil {
		t.Fatal(err)
	}
	lap(fmt.Sprintf("dlopen libcuda.so.1 (mode %#x)", mode))
	if err := gpurt.Available(); err != nil {
		t.Fatal(err)
	}
	lap("driver: cuInit, version, device count")
	if _, err := gpurt.Devices(); err != nil {
		t.Fatal(err)
	}
	lap("device attributes")
	dev, err := gpurt.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	lap("context (primary, retained)")
	if _, _, err := gpurt.Compiler(); err != nil {
		lap(fmt.Sprintf("NVRTC: none (%v); the kernels are prebuilt", err))
	} else {
		lap("NVRTC: dlopen, version (not needed by the prebuilt kernels)")
	}
	err = dev.Do(func(c *gpurt.Ctx) error {
		m, err := c.Load(sourceOf("batmap16"))
		if err != nil {
			return err
		}
		lap(fmt.Sprintf("module batmap16 (from %v)", m.From))
		h, err := c.AllocHost(pinnedBytes)
		if err != nil {
			return err
		}
		lap("pinned host buffer of 8 MiB")
		b, err := c.Alloc(256 << 20)
		if err != nil {
			return err
		}
		lap("device buffer of 256 MiB")
		c.Free(b)
		c.FreeHost(h)
		lap("freeing both")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("XSECT_CLOSE") == "1" {
		dev.Close()
		lap("closing the device (the context)")
	}
	t.Logf("%-40s %7.1f ms", "in process, since its start", float64(time.Since(processStart).Microseconds())/1e3)
}
