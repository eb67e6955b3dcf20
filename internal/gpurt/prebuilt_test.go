package gpurt

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/xsect/xsect/internal/engine"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestStem(t *testing.T) {
	for _, tc := range []struct {
		src  Source
		want string
	}{
		{Source{Name: "sisi.cu"}, "sisi"},
		{Source{Name: "batmap.cu", Options: []string{"-DONE_KERNEL", "-DKERNEL_batmap8"}}, "batmap.ONE_KERNEL.KERNEL_batmap8"},
		{Source{Name: "k.cu", Options: []string{"-DTHREADS=512", "--use_fast_math", "-DX=a/b"}}, "k.THREADS_512.use_fast_math.X_a_b"},
	} {
		if got := tc.src.Stem(); got != tc.want {
			t.Errorf("Stem(%v) = %q, want %q", tc.src.Options, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	a := Source{Name: "a.cu", Code: "x", Options: []string{"-DA"}}
	same := a
	same.Name = "b.cu" // the name does not change the code
	if a.Digest() != same.Digest() {
		t.Error("the digest depends on the name")
	}
	for _, other := range []Source{a.With(), a.With("-DB"), a.With("-DA", "-DB"), {Code: "x-DA"}, {Code: "y", Options: []string{"-DA"}}} {
		if other.Digest() == a.Digest() {
			t.Errorf("%+v has the digest of %+v", other, a)
		}
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := Manifest{Compiler: "13.0", Entries: map[string]ManifestEntry{
		"b": {Digest: "22", Files: []string{"b.compute_80.ptx.gz"}},
		"a": {Digest: "11", Files: []string{"a.compute_80.ptx.gz", "a.sm_90.cubin.gz"}},
	}}
	var b bytes.Buffer
	m.Write(&b)
	if !strings.HasPrefix(b.String(), "# Code generated") || strings.Index(b.String(), "\na ") > strings.Index(b.String(), "\nb ") {
		t.Errorf("manifest:\n%s", b.String())
	}
	got, err := ReadManifest(fstest.MapFS{ManifestName: {Data: b.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Compiler != "13.0" || len(got.Entries) != 2 || got.Entries["a"].Digest != "11" || len(got.Entries["a"].Files) != 2 {
		t.Errorf("read back %+v", got)
	}
	if _, err := ReadManifest(fstest.MapFS{ManifestName: {Data: []byte("a 11\n")}}); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("a short line: %v", err)
	}
	if m, err := ReadManifest(fstest.MapFS{}); err != nil || len(m.Entries) != 0 {
		t.Errorf("no manifest: %+v, %v", m, err)
	}
}

// TestPrebuiltImage checks which prebuilt image a device gets: its own
// cubin, else the PTX from compute capability 8.0, else none; nothing
// when the files are stale.
func TestPrebuiltImage(t *testing.T) {
	src := Source{Name: "k.cu", Code: "code", Options: []string{"-DV=1"}}
	stem := src.Stem()
	fsys := fstest.MapFS{}
	var b bytes.Buffer
	m := Manifest{Compiler: "13.0", Entries: map[string]ManifestEntry{stem: {Digest: src.Digest(),
		Files: []string{PrebuiltFile(stem, PrebuiltPTX), PrebuiltFile(stem, "sm_80"), PrebuiltFile(stem, "sm_90")}}}}
	m.Write(&b)
	fsys[ManifestName] = &fstest.MapFile{Data: b.Bytes()}
	for _, f := range m.Entries[stem].Files {
		fsys[f] = &fstest.MapFile{Data: gz(t, []byte("image "+f))}
	}
	src.Prebuilt = fsys
	for _, tc := range []struct {
		major, minor int
		cubins       bool
		from         Origin
		file         string
	}{
		{9, 0, true, FromCubin, "sm_90.cubin"},
		{8, 0, true, FromCubin, "sm_80.cubin"},
		{8, 6, true, FromPTX, "compute_80.ptx"},
		{12, 0, true, FromPTX, "compute_80.ptx"},
		{9, 0, false, FromPTX, "compute_80.ptx"},
		{7, 5, true, 0, ""},
	} {
		img, from, why := prebuiltImage(src, tc.major, tc.minor, tc.cubins)
		if from != tc.from || tc.file != "" && !strings.Contains(string(img), tc.file) || tc.file == "" && (img != nil || why == "") {
			t.Errorf("%d.%d cubins %v: %q from %v (%s); want %s from %v", tc.major, tc.minor, tc.cubins, img, from, why, tc.file, tc.from)
		}
		if from == FromPTX && img[len(img)-1] != 0 {
			t.Errorf("%d.%d: the PTX does not end in NUL", tc.major, tc.minor)
		}
	}
	stale := src
	stale.Code += " "
	if img, _, why := prebuiltImage(stale, 9, 0, true); img != nil || !strings.Contains(why, "stale") {
		t.Errorf("stale source: %q, %q", img, why)
	}
	other := src.With("-DV=2")
	if img, _, why := prebuiltImage(other, 9, 0, true); img != nil || !strings.Contains(why, "no prebuilt kernels for variant") {
		t.Errorf("another variant: %q, %q", img, why)
	}
	if img, _, why := prebuiltImage(Source{Name: "k.cu"}, 9, 0, true); img != nil || why == "" {
		t.Errorf("no prebuilt directory: %q, %q", img, why)
	}
}

func TestKernelsFor(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		want         string
	}{{9, 0, "prebuilt cubins"}, {8, 0, "prebuilt cubins"}, {8, 9, "prebuilt PTX"}, {10, 0, "prebuilt PTX"}, {7, 0, "NVRTC"}} {
		if got := KernelsFor(Info{Major: tc.major, Minor: tc.minor}); got != tc.want {
			t.Errorf("%d.%d: %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}

func TestKernelsMode(t *testing.T) {
	for _, v := range []string{"", "auto", "prebuilt", "ptx", "nvrtc"} {
		t.Setenv(KernelsEnv, v)
		if _, err := kernelsMode(); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	t.Setenv(KernelsEnv, "cubin")
	if _, err := kernelsMode(); err == nil || !strings.Contains(err.Error(), KernelsEnv) {
		t.Errorf("cubin: %v", err)
	}
}

// emptyTimeline empties the process's start-up steps for a test, and puts
// them back after it.
func emptyTimeline(t *testing.T) {
	timeline.Lock()
	saved := timeline.steps
	timeline.steps = nil
	timeline.Unlock()
	t.Cleanup(func() {
		timeline.Lock()
		timeline.steps = saved
		timeline.Unlock()
	})
}

func TestStartupSummary(t *testing.T) {
	emptyTimeline(t)
	t0 := time.Now()
	if s := StartupSummary(t0); s != "" {
		t.Errorf("no steps: %q", s)
	}
	record("driver", t0, 0)
	if s := StartupSummary(t0); s != "" {
		t.Errorf("the driver alone, no GPU opened: %q", s)
	}
	if _, _, ok := StartupSpan(); ok {
		t.Error("StartupSpan with no GPU opened: ok")
	}
	if e := StartupEstimate(); e != 0 {
		t.Errorf("StartupEstimate with no GPU opened: %v, want 0", e)
	}
	timeline.Lock()
	timeline.steps = []Step{
		{What: "driver", Start: t0.Add(10 * time.Millisecond), Took: 200 * time.Millisecond},
		{What: "GPU 0", Start: t0.Add(210 * time.Millisecond), Took: 100 * time.Millisecond},
		{What: "GPU 1", Start: t0.Add(211 * time.Millisecond), Took: 120 * time.Millisecond},
		{What: "module a on GPU 0 from prebuilt cubin", Start: t0.Add(400 * time.Millisecond), Took: 2 * time.Millisecond},
		{What: "module b on GPU 0 from prebuilt cubin", Start: t0.Add(402 * time.Millisecond), Took: 3 * time.Millisecond},
		{What: "pinned memory", Start: t0.Add(405 * time.Millisecond), Took: 5 * time.Millisecond, Bytes: 8 << 20},
	}
	timeline.Unlock()
	want := "gpu start    from 10.0 ms to 405.0 ms of the process: driver 200.0 ms at 10.0 ms, GPU 0 100.0 ms at 210.0 ms, GPU 1 120.0 ms at 211.0 ms, 2 modules 5.0 ms; then 8.0 MiB pinned in 1 buffers 5.0 ms\n"
	if s := StartupSummary(t0); s != want {
		t.Errorf("got  %q\nwant %q", s, want)
	}
	// Two GPUs: the first's start and the second's context; a second
	// owner of GPU 1 adds none.
	if e := StartupEstimate(); e != OpenCost+ContextCost {
		t.Errorf("StartupEstimate of 2 GPUs: %v, want %v", e, OpenCost+ContextCost)
	}
	timeline.Lock()
	timeline.steps = append(timeline.steps, Step{What: "GPU 1", Start: t0.Add(212 * time.Millisecond), Took: time.Millisecond})
	timeline.Unlock()
	if e := StartupEstimate(); e != OpenCost+ContextCost {
		t.Errorf("StartupEstimate of 2 GPUs, one with 2 owners: %v, want %v", e, OpenCost+ContextCost)
	}
	timeline.Lock()
	timeline.steps = timeline.steps[:len(timeline.steps)-1]
	timeline.Unlock()
	// The memory pinned, after the rest, is the runs' and not the start-up's.
	if first, last, ok := StartupSpan(); !ok || first.Sub(t0) != 10*time.Millisecond || last.Sub(t0) != 405*time.Millisecond {
		t.Errorf("StartupSpan: %v to %v of the process (%v), want 10ms to 405ms", first.Sub(t0), last.Sub(t0), ok)
	}
	// Whatever the order the steps ended in.
	timeline.Lock()
	timeline.steps = append([]Step{{What: "pinned memory", Start: t0.Add(900 * time.Millisecond), Took: time.Millisecond, Bytes: 1 << 20}}, timeline.steps...)
	timeline.Unlock()
	if first, last, ok := StartupSpan(); !ok || first.Sub(t0) != 10*time.Millisecond || last.Sub(t0) != 405*time.Millisecond {
		t.Errorf("StartupSpan, pinned memory first: %v to %v of the process (%v), want 10ms to 405ms", first.Sub(t0), last.Sub(t0), ok)
	}
}

func TestPlanningCosts(t *testing.T) {
	if DefaultStarted() {
		t.Skip("a GPU is open in this process; the costs left are 0")
	}
	if got := CloseLeft(); got != CloseCost {
		t.Errorf("CloseLeft before any GPU opens = %v, want %v", got, CloseCost)
	}
	if got := OpenLeft(); got != OpenCost {
		t.Errorf("OpenLeft before any GPU opens = %v, want %v", got, OpenCost)
	}
	for _, list := range [][]int{{0}, {0, 0}} {
		if got := StartupLeftOn(list); got != OpenCost+CloseCost {
			t.Errorf("StartupLeftOn(%v) before any GPU opens = %v, want %v", list, got, OpenCost+CloseCost)
		}
	}
	if Probed() && Available() == nil {
		t.Skip("the driver has answered: FirstInfo gives the first GPU")
	}
	if got, standIn := FirstInfo(), StandIn(); got != standIn {
		t.Errorf("FirstInfo before the driver answers = %+v, want the stand-in", got)
	}
}

func TestStepsBounded(t *testing.T) {
	emptyTimeline(t)
	for range maxSteps + 10 {
		record("pinned memory", time.Now(), 1)
	}
	if n := len(Steps()); n != maxSteps {
		t.Errorf("%d steps kept, want %d", n, maxSteps)
	}
}

// TestOpenCostIsThePlannersStartup holds internal/engine's GPUStartup, by
// which every planner skips the GPU for a problem the CPU finishes sooner,
// to the start-up cost the GPU engines' estimates add.
func TestOpenCostIsThePlannersStartup(t *testing.T) {
	if engine.GPUStartup != OpenCost {
		t.Errorf("engine.GPUStartup = %v, gpurt.OpenCost = %v", engine.GPUStartup, OpenCost)
	}
}
