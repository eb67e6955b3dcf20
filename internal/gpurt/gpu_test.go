package gpurt

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/cuda"
	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// openTest opens device 0, or skips the test saying why there is no GPU.
func openTest(t *testing.T) *Device {
	t.Helper()
	gputest.Need(t, Available())
	t.Setenv("XSECT_CACHE_DIR", t.TempDir())
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// openCompilerTest is openTest for tests that compile their own kernels,
// which need NVRTC: a machine with the driver alone skips them, saying so.
func openCompilerTest(t *testing.T) *Device {
	t.Helper()
	d := openTest(t)
	if _, _, err := Compiler(); err != nil {
		t.Skipf("%v: this test compiles its own kernels at run time (the engines' are prebuilt); skipping", err)
	}
	return d
}

func TestAvailableExplains(t *testing.T) {
	err := Available()
	if err == nil {
		t.Logf("GPU available")
		return
	}
	// Without a GPU the reason must name what is missing, and repeat
	// identically (it is computed once).
	msg := err.Error()
	if !strings.HasPrefix(msg, "gpu: ") {
		t.Errorf("Available() = %q, want a message starting with \"gpu: \"", msg)
	}
	if !strings.Contains(msg, "libcuda") && !strings.Contains(msg, "CUDA") {
		t.Errorf("Available() = %q does not say what is missing", msg)
	}
	if err2 := Available(); err2 != err {
		t.Errorf("Available() not cached: %v then %v", err, err2)
	}
	if _, err := Devices(); err == nil {
		t.Errorf("Devices() succeeded while Available() = %v", msg)
	}
	if _, err := Open(0); err == nil {
		t.Errorf("Open(0) succeeded while Available() = %v", msg)
	}
}

func TestCacheKey(t *testing.T) {
	src := Source{Name: "k.cu", Code: "extern \"C\" __global__ void k() {}"}
	opts := compileOptions(src, "sm_90")
	k := cacheKey(src, opts, "nvrtc-13.0")
	if len(k) != 64 {
		t.Fatalf("key %q is not a hex sha256", k)
	}
	if k != cacheKey(src, compileOptions(src, "sm_90"), "nvrtc-13.0") {
		t.Fatal("key is not deterministic")
	}
	variants := map[string]string{
		"arch":     cacheKey(src, compileOptions(src, "sm_80"), "nvrtc-13.0"),
		"compiler": cacheKey(src, opts, "nvrtc-12.4"),
		"code":     cacheKey(Source{Name: src.Name, Code: src.Code + " "}, opts, "nvrtc-13.0"),
		"name":     cacheKey(Source{Name: "j.cu", Code: src.Code}, opts, "nvrtc-13.0"),
		"option":   cacheKey(src, append(opts, "-DX=1"), "nvrtc-13.0"),
		// Length prefixes keep boundaries: moving text from one part to
		// the next must change the key.
		"boundary": cacheKey(Source{Name: "k.cu" + "e", Code: src.Code[1:]}, opts, "nvrtc-13.0"),
	}
	for what, v := range variants {
		if v == k {
			t.Errorf("changing the %s does not change the key", what)
		}
	}
	if got := compileOptions(Source{Options: []string{"-DT=1"}}, "sm_90"); got[0] != "--gpu-architecture=sm_90" || got[len(got)-1] != "-DT=1" {
		t.Errorf("compileOptions = %q", got)
	}
}

func TestCacheDirAndFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XSECT_CACHE_DIR", dir)
	got, err := CacheDir()
	if err != nil || got != filepath.Join(dir, "cubin") {
		t.Fatalf("CacheDir() = %q, %v", got, err)
	}
	if readCache("nothere") != nil {
		t.Fatal("readCache of a missing key returned data")
	}
	want := []byte{0x7f, 'E', 'L', 'F', 1, 2, 3}
	if err := writeCache("abc", want); err != nil {
		t.Fatal(err)
	}
	if b := readCache("abc"); string(b) != string(want) {
		t.Fatalf("readCache = %v, want %v", b, want)
	}
	removeCache("abc")
	if readCache("abc") != nil {
		t.Fatal("removeCache left the file")
	}
	entries, _ := os.ReadDir(got)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestPackArgs(t *testing.T) {
	var a cuda.Args
	buf := Buffer{ptr: 0x1122334455667788, n: 16}
	err := packArgs(&a, []any{int32(-1), buf, uint32(7), float32(1.5), uint64(1 << 40), float64(2.25), int64(-3)})
	if err != nil {
		t.Fatal(err)
	}
	b := a.Bytes()
	le := binary.LittleEndian
	// int32 at 0, pointer aligned to 8, uint32 at 16, float at 20, uint64
	// at 24, double at 32, int64 at 40.
	if len(b) != 48 {
		t.Fatalf("packed %d bytes, want 48", len(b))
	}
	checks := []struct {
		off  int
		got  uint64
		want uint64
	}{
		{0, uint64(le.Uint32(b[0:])), 0xffffffff},
		{4, uint64(le.Uint32(b[4:])), 0}, // padding is zeroed
		{8, le.Uint64(b[8:]), 0x1122334455667788},
		{16, uint64(le.Uint32(b[16:])), 7},
		{20, uint64(le.Uint32(b[20:])), uint64(math.Float32bits(1.5))},
		{24, le.Uint64(b[24:]), 1 << 40},
		{32, le.Uint64(b[32:]), math.Float64bits(2.25)},
		{40, le.Uint64(b[40:]), uint64(0xfffffffffffffffd)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("offset %d: %#x, want %#x", c.off, c.got, c.want)
		}
	}
	a.Reset()
	if err := packArgs(&a, []any{3}); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("packing a Go int: err = %v, want advice to use a sized type", err)
	}
	a.Reset()
	if err := packArgs(&a, []any{"x"}); err == nil {
		t.Error("packing a string succeeded")
	}
	a.Reset()
	many := make([]any, cuda.MaxArgBytes/8+1)
	for i := range many {
		many[i] = uint64(i)
	}
	if err := packArgs(&a, many); err == nil {
		t.Error("packing more than MaxArgBytes succeeded")
	}
}

func TestBytesAndFormat(t *testing.T) {
	xs := []uint32{1, 0x01020304}
	b := Bytes(xs)
	if len(b) != 8 || b[0] != 1 || b[4] != 4 || b[7] != 1 {
		t.Errorf("Bytes(%v) = %v", xs, b)
	}
	if Bytes([]uint64(nil)) != nil {
		t.Error("Bytes(nil) != nil")
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 80 << 30: "80.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if (Dim{X: 0}).X != 0 {
		t.Fatal()
	}
	if _, err := (Dim{X: 0}).cuda("grid", 65535); err == nil {
		t.Error("empty grid accepted")
	}
	if _, err := (Dim{X: 4, Y: 70000}).cuda("grid", 65535); err == nil {
		t.Error("grid Y of 70000 accepted")
	}
	if d, err := (Dim{X: 5}).cuda("grid", 65535); err != nil || d != (cuda.Dim3{X: 5, Y: 1, Z: 1}) {
		t.Errorf("Dim{5} = %v, %v", d, err)
	}
}

func TestDevices(t *testing.T) {
	openTest(t)
	infos, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 {
		t.Fatal("no devices although Available() is nil")
	}
	for _, in := range infos {
		t.Logf("device %d: %s, %s, %d SMs, %s, L2 %s, peak %.0f GB/s", in.Ordinal, in.Name, FormatBytes(in.Memory), in.SMs, in.Arch(), FormatBytes(uint64(in.L2Bytes)), in.PeakBandwidth()/1e9)
		if in.Name == "" || in.Memory == 0 || in.SMs == 0 || in.Major == 0 {
			t.Errorf("incomplete info %+v", in)
		}
	}
	v, err := DriverVersion()
	t.Logf("driver supports CUDA %s (%v)", v, err)
}

func TestMemoryRoundTrip(t *testing.T) {
	d := openTest(t)
	free, total, err := d.FreeMemory()
	if err != nil || free == 0 || free > total {
		t.Fatalf("FreeMemory = %d, %d, %v", free, total, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 1000, 1 << 20, 1<<20 + 7} {
		src := make([]uint32, n)
		for i := range src {
			src[i] = rng.Uint32()
		}
		err := d.Do(func(c *Ctx) error {
			buf, err := c.Alloc(4 * n)
			if err != nil {
				return err
			}
			defer c.Free(buf)
			if err := c.CopyToDevice(buf, Bytes(src)); err != nil {
				return err
			}
			// Device to device, then back through pinned memory.
			buf2, err := c.Alloc(4 * n)
			if err != nil {
				return err
			}
			defer c.Free(buf2)
			s, err := c.NewStream()
			if err != nil {
				return err
			}
			defer c.DestroyStream(s)
			if err := c.CopyDevice(buf2, buf, s); err != nil {
				return err
			}
			h, err := c.AllocHost(4 * n)
			if err != nil {
				return err
			}
			defer c.FreeHost(h)
			if err := c.CopyToHostAsync(h.Bytes(), buf2, s); err != nil {
				return err
			}
			if err := c.Sync(s); err != nil {
				return err
			}
			got := h.Uint32s()
			for i := range src {
				if got[i] != src[i] {
					t.Errorf("n=%d: element %d = %#x, want %#x", n, i, got[i], src[i])
					break
				}
			}
			// Memset a middle slice and read everything back.
			if n >= 3 {
				mid := buf.Slice(4, 4*(n-2))
				if err := c.Memset32(mid, 0xdeadbeef, nil); err != nil {
					return err
				}
				back := make([]uint32, n)
				if err := c.CopyToHost(Bytes(back), buf); err != nil {
					return err
				}
				if back[0] != src[0] || back[n-1] != src[n-1] || back[1] != 0xdeadbeef || back[n-2] != 0xdeadbeef {
					t.Errorf("n=%d: memset of a slice wrote %#x %#x .. %#x %#x", n, back[0], back[1], back[n-2], back[n-1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Size mismatches are errors, not truncation.
	err = d.Do(func(c *Ctx) error {
		buf, err := c.Alloc(8)
		if err != nil {
			return err
		}
		defer c.Free(buf)
		if err := c.CopyToDevice(buf, make([]byte, 12)); err == nil {
			t.Error("copying 12 bytes into an 8-byte buffer succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAllocTooMuch(t *testing.T) {
	d := openTest(t)
	err := d.Do(func(c *Ctx) error {
		_, total, err := c.MemInfo()
		if err != nil {
			return err
		}
		_, err = c.Alloc(int(total * 2))
		if err == nil {
			t.Fatal("allocating twice the device memory succeeded")
		}
		if !cuda.IsOutOfMemory(err) || !strings.Contains(err.Error(), "cuMemAlloc_v2") || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
			t.Errorf("error %q does not name the call and CUDA error", err)
		}
		t.Logf("expected error: %v", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

const testKernels = `
typedef unsigned int u32;
typedef unsigned long long u64;

// args writes its scalar arguments to out, to check argument packing.
extern "C" __global__ void args(u32* out, int a, unsigned b, float c, u64 d, double e, long long f) {
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		out[0] = (u32)a; out[1] = b; out[2] = __float_as_uint(c);
		out[3] = (u32)d; out[4] = (u32)(d >> 32);
		u64 eb = __double_as_longlong(e); out[5] = (u32)eb; out[6] = (u32)(eb >> 32);
		out[7] = (u32)f; out[8] = (u32)((u64)f >> 32);
	}
}

// axpy computes y[i] = a*x[i] + y[i] with dynamic shared memory staging.
extern "C" __global__ void axpy(u32 n, u32 a, const u32* x, u32* y) {
	extern __shared__ u32 s[];
	u32 i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? x[i] : 0;
	__syncthreads();
	if (i < n) y[i] = a * s[threadIdx.x] + y[i];
}
`

func TestCompileLaunch(t *testing.T) {
	d := openCompilerTest(t)
	src := Source{Name: "test.cu", Code: testKernels}
	err := d.Do(func(c *Ctx) error {
		m, err := c.Load(src)
		if err != nil {
			return err
		}
		if m.From != FromNVRTC {
			t.Error("first load in a fresh cache dir came from the cache")
		}
		if m2, err := c.Load(src); err != nil || m2 != m {
			t.Errorf("second Load = %p, %v; want the same module %p", m2, err, m)
		}
		k, err := m.Kernel("args")
		if err != nil {
			return err
		}
		out, err := c.Alloc(4 * 9)
		if err != nil {
			return err
		}
		defer c.Free(out)
		if err := c.Launch(k, Dim{X: 1}, Dim{X: 32}, 0, nil, out, int32(-5), uint32(0xabcdef01), float32(-2.5), uint64(0x123456789), float64(1e300), int64(-7)); err != nil {
			return err
		}
		got := make([]uint32, 9)
		if err := c.CopyToHost(Bytes(got), out); err != nil {
			return err
		}
		eb := math.Float64bits(1e300)
		want := []uint32{0xfffffffb, 0xabcdef01, math.Float32bits(-2.5), 0x23456789, 1, uint32(eb), uint32(eb >> 32), 0xfffffff9, 0xffffffff}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("argument word %d = %#x, want %#x", i, got[i], want[i])
			}
		}
		if err := c.Launch(k, Dim{X: 1}, Dim{X: 32}, 0, nil, out, 3); err == nil {
			t.Error("launch with a Go int argument succeeded")
		}
		if err := c.Launch(k, Dim{X: 1}, Dim{X: 2048}, 0, nil, out, int32(0), uint32(0), float32(0), uint64(0), float64(0), int64(0)); err == nil {
			t.Error("launch with 2048 threads per block succeeded")
		} else {
			t.Logf("expected error: %v", err)
		}

		// axpy over a size that is not a multiple of the block, with more
		// than 48 KB of shared memory requested.
		ax, err := m.Kernel("axpy")
		if err != nil {
			return err
		}
		const n = 100003
		x, y := make([]uint32, n), make([]uint32, n)
		for i := range x {
			x[i], y[i] = uint32(i), uint32(3*i+1)
		}
		bx, _ := c.Alloc(4 * n)
		by, _ := c.Alloc(4 * n)
		defer c.Free(bx)
		defer c.Free(by)
		c.CopyToDevice(bx, Bytes(x))
		c.CopyToDevice(by, Bytes(y))
		start, _ := c.NewEvent()
		end, _ := c.NewEvent()
		defer c.DestroyEvent(start)
		defer c.DestroyEvent(end)
		c.Record(start, nil)
		if err := c.Launch(ax, Dim{X: (n + 255) / 256}, Dim{X: 256}, 64<<10, nil, uint32(n), uint32(7), bx, by); err != nil {
			return err
		}
		c.Record(end, nil)
		el, err := c.Elapsed(start, end)
		if err != nil {
			return err
		}
		t.Logf("axpy over %d elements: %v", n, el)
		if err := c.CopyToHost(Bytes(y), by); err != nil {
			return err
		}
		for i := range y {
			if y[i] != 7*uint32(i)+3*uint32(i)+1 {
				t.Fatalf("axpy y[%d] = %d", i, y[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The cubin is now on disk under its key.
	dir, _ := CacheDir()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".cubin") {
		t.Fatalf("cache dir %s holds %v (%v), want one cubin", dir, entries, err)
	}
}

func TestCompileErrorShowsLog(t *testing.T) {
	d := openCompilerTest(t)
	err := d.Do(func(c *Ctx) error {
		_, err := c.Load(Source{Name: "broken.cu", Code: "extern \"C\" __global__ void k() { undeclared_thing = 1; }"})
		return err
	})
	var ce *cuda.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a CompileError", err)
	}
	if !strings.Contains(err.Error(), "undeclared_thing") || !strings.Contains(err.Error(), "broken.cu") {
		t.Errorf("error does not show NVRTC's log: %v", err)
	}
}

func TestCacheReuse(t *testing.T) {
	gputest.Need(t, Available())
	if _, _, err := Compiler(); err != nil {
		t.Skipf("%v: this test compiles its own kernels at run time; skipping", err)
	}
	t.Setenv("XSECT_CACHE_DIR", t.TempDir())
	src := Source{Name: "reuse.cu", Code: testKernels, Options: []string{"-DREUSE=1"}}
	for round := range 2 {
		// Each round forgets the module in memory (the device may stay
		// open between rounds: Default holds it), so the second round
		// must read the disk cache.
		d, err := Open(0)
		if err != nil {
			t.Fatal(err)
		}
		err = d.Do(func(c *Ctx) error {
			m, err := c.Load(src)
			if err != nil {
				return err
			}
			if (m.From == FromCache) != (round == 1) {
				t.Errorf("round %d: module from %v", round, m.From)
			}
			_, err = m.Kernel("axpy")
			for key, x := range c.modules {
				if x == m {
					delete(c.modules, key)
				}
			}
			return err
		})
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestConcurrentDo(t *testing.T) {
	d := openTest(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- d.Do(func(c *Ctx) error {
				b, err := c.Alloc(4096)
				if err != nil {
					return err
				}
				defer c.Free(b)
				want := make([]byte, 4096)
				for i := range want {
					want[i] = byte(g + i)
				}
				if err := c.CopyToDevice(b, want); err != nil {
					return err
				}
				got := make([]byte, 4096)
				if err := c.CopyToHost(got, b); err != nil {
					return err
				}
				if string(got) != string(want) {
					return errors.New("round trip differs")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestPanicAndClose(t *testing.T) {
	gputest.Need(t, Available())
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want boom", v)
			}
		}()
		d.Do(func(*Ctx) error { panic("boom") })
	}()
	// The device survives a panic in a closure.
	if err := d.Do(func(c *Ctx) error { _, _, err := c.MemInfo(); return err }); err != nil {
		t.Fatal(err)
	}
	// A second Open shares the device; only the last Close ends it.
	d2, err := Open(0)
	if err != nil || d2 != d {
		t.Fatalf("second Open = %p, %v", d2, err)
	}
	d2.Close()
	if err := d.Do(func(*Ctx) error { return nil }); err != nil {
		t.Fatalf("Do after one of two Closes: %v", err)
	}
	d.Close()
	if DefaultStarted() {
		return // Default holds the device open for the process (TestDefault)
	}
	if err := d.Do(func(*Ctx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}

func TestSgemm(t *testing.T) {
	d := openTest(t)
	if _, err := BLASLibrary(); err != nil {
		t.Skipf("%v: this test needs cuBLAS; skipping", err)
	}
	const m, n, k = 5, 3, 7
	a, b := make([]float32, m*k), make([]float32, n*k)
	for i := range a {
		a[i] = float32(i%3) - 1
	}
	for i := range b {
		b[i] = float32(i%5) * 0.5
	}
	got := make([]float32, m*n)
	err := d.Do(func(c *Ctx) error {
		bl, err := c.BLAS()
		if err != nil {
			return err
		}
		da, _ := c.Alloc(4 * m * k)
		db, _ := c.Alloc(4 * n * k)
		dc, _ := c.Alloc(4 * m * n)
		defer c.Free(da)
		defer c.Free(db)
		defer c.Free(dc)
		c.CopyToDevice(da, Bytes(a))
		c.CopyToDevice(db, Bytes(b))
		if err := c.Sgemm(bl, nil, m, n, k, da, db, dc); err != nil {
			return err
		}
		return c.CopyToHost(Bytes(got), dc)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		for j := range n {
			var want float32
			for l := range k {
				want += a[i*k+l] * b[j*k+l]
			}
			if got[i*n+j] != want {
				t.Errorf("C[%d][%d] = %v, want %v", i, j, got[i*n+j], want)
			}
		}
	}
}

// TestPresent checks that once Available has answered, Present gives the
// same answer (and Probed says so), with or without a GPU.
func TestPresent(t *testing.T) {
	avail := Available()
	if !Probed() {
		t.Fatal("Probed() = false after Available")
	}
	if got := Present(); (got == nil) != (avail == nil) {
		t.Fatalf("Present() = %v, Available() = %v", got, avail)
	}
}

func TestSpeedOver(t *testing.T) {
	h100 := ReferenceH100()
	if bw := h100.PeakBandwidth(); math.Abs(bw-3352e9) > 1e9 {
		t.Errorf("the reference's peak bandwidth is %.0f GB/s, want the 3352 the driver gives", bw/1e9)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-3*want }
	h200 := h100
	h200.Name, h200.MemClockKHz, h200.BusWidth = "NVIDIA H200", 3201000, 6144
	a100 := Info{Name: "NVIDIA A100-SXM4-80GB", SMs: 108, Major: 8, Minor: 0, ClockKHz: 1410000, MemClockKHz: 1593000, BusWidth: 5120}
	b200 := Info{Name: "B200", SMs: 148, Major: 10, ClockKHz: 1965000, MemClockKHz: 3996000, BusWidth: 8192}
	unknown := Info{Name: "says nothing"}
	for _, c := range []struct {
		in   Info
		want Speed
	}{
		{h100, Speed{1, 1, 1}},
		{h200, Speed{1, 1, 3201.0 * 6144 / (2619 * 5120)}},
		{a100, Speed{108 * 1410.0 / (132 * 1980), 0.5 * 108 * 1410.0 / (132 * 1980), 1593.0 / 2619}},
		{b200, Speed{148 * 1965.0 / (132 * 1980), 2 * 148 * 1965.0 / (132 * 1980), 3996.0 * 8192 / (2619 * 5120)}},
		{unknown, Speed{1, 1, 1}},
	} {
		got := c.in.SpeedOver(h100)
		if !near(got.Compute, c.want.Compute) || !near(got.Tensor, c.want.Tensor) || !near(got.Memory, c.want.Memory) {
			t.Errorf("%s: SpeedOver(H100) = %+v, want %+v", c.in.Name, got, c.want)
		}
	}
	// Relative speeds compose: A100 over H200 is A100 over H100 divided
	// by H200 over H100.
	a, h := a100.SpeedOver(h100), h200.SpeedOver(h100)
	if got := a100.SpeedOver(h200); !near(got.Memory, a.Memory/h.Memory) || !near(got.Tensor, a.Tensor/h.Tensor) {
		t.Errorf("A100 over H200 = %+v, want %+v", got, Speed{a.Compute / h.Compute, a.Tensor / h.Tensor, a.Memory / h.Memory})
	}
}
