package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpuintersect"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
)

func TestDevices(t *testing.T) {
	code, stdout, stderr := run(t, "devices")
	if code != ExitOK {
		t.Fatalf("devices: code %d, stderr %q", code, stderr)
	}
	if err := gpurt.Available(); err != nil {
		gputest.Without(t, err)
		if want := "no GPU: " + err.Error() + "\n"; stdout != want {
			t.Errorf("devices without a GPU printed %q, want %q", stdout, want)
		}
		return
	}
	if !strings.HasPrefix(stdout, "GPU 0: ") || !strings.Contains(stdout, "compute capability") {
		t.Errorf("devices printed %q", stdout)
	}
	if code, _, _ := run(t, "devices", "extra"); code != ExitUsage {
		t.Errorf("devices with an argument: code %d", code)
	}
}

func TestIntersectDevice(t *testing.T) {
	a := writeFile(t, "a.txt", "5 3 1\n9 7\n\n4294967295 0 3\n")
	b := writeFile(t, "b.txt", "0 1 2 3 4 5\n4294967295")
	c := writeFile(t, "c.txt", "3\t5 0")

	// Small inputs under auto run on the CPU, GPU or not.
	if code, stdout, stderr := run(t, "intersect", "--device", "auto", a, b, c); code != ExitOK || stdout != "0\n3\n5\n" {
		t.Errorf("--device auto: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ := run(t, "intersect", "--device", "gpu", "--method", "list"); code != ExitOK || !strings.Contains(stdout, "ip-obs\n") || strings.Contains(stdout, "merge\n") {
		t.Errorf("--device gpu --method list: %d %q", code, stdout)
	}
	for _, bad := range [][]string{
		{"intersect", "--device", "cpu", "--method", "ip", a, b},
		{"intersect", "--device", "gpu", "--method", "merge", a, b},
		{"intersect", "--device", "tpu", a, b},
	} {
		if code, _, stderr := run(t, bad...); code != ExitUsage {
			t.Errorf("%q: code %d, stderr %q; want a usage error", bad, code, stderr)
		}
	}
	if err := gpurt.Available(); err != nil {
		gputest.Without(t, err)
		code, _, stderr := run(t, "intersect", "--device", "gpu", a, b)
		if code != ExitFailure || !strings.Contains(stderr, err.Error()) {
			t.Errorf("--device gpu without a GPU: code %d, stderr %q; want it to say %q", code, stderr, err)
		}
		return
	}
	for _, m := range gpuintersect.Methods() {
		for _, flags := range [][]string{{"--device", "gpu", "--method", m.String()}, {"--method", m.String()}} {
			args := append(append([]string{"intersect"}, flags...), a, b, c)
			if code, stdout, stderr := run(t, args...); code != ExitOK || stdout != "0\n3\n5\n" {
				t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
			}
			args = append(append([]string{"intersect", "--count"}, flags...), a, b)
			if code, stdout, stderr := run(t, args...); code != ExitOK || stdout != "5\n" {
				t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
			}
		}
	}
}

// TestGPUsFlag checks --gpus on every command that uses a GPU: malformed
// values are bad usage (exit 2) before any input is read, whatever the
// device; an ordinal beyond the host's GPUs is bad usage too where the
// driver reports GPUs; with --device cpu the choice is parsed only.
func TestGPUsFlag(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n3 4\n")
	idx := buildTestIndex(t, a)
	commands := [][]string{
		{"allpairs", a},
		{"containment", a, "--min-degree", "1/2"},
		{"pairs", "--min-support", "1", a},
		{"simjoin", a, "--threshold", "0.5"},
		{"intersect", a, a},
		{"query", idx, a},
	}
	// serve with a good choice would serve: only the bad ones here.
	for _, bad := range []string{"x", "0", "1,a"} {
		args := []string{"serve", idx, "--addr", "127.0.0.1:0", "--gpus", bad}
		if code, _, stderr := run(t, args...); code != ExitUsage || !strings.Contains(stderr, "--gpus") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming --gpus", args, code, firstLine(stderr))
		}
	}
	for _, cmd := range commands {
		for _, bad := range []string{"x", "0", "-1", "1,,2", ",", "1,a"} {
			args := append(append([]string{}, cmd...), "--gpus", bad)
			code, stdout, stderr := run(t, args...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "--gpus") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming --gpus", args, code, stdout, firstLine(stderr))
			}
		}
		for _, good := range []string{"all", "1", "0,", "0,0", "7,"} {
			args := append(append([]string{}, cmd...), "--device", "cpu", "--gpus", good)
			if code, _, stderr := run(t, args...); code != ExitOK {
				t.Errorf("%q: exit %d, stderr %q", args, code, firstLine(stderr))
			}
		}
	}
	if err := gpurt.Available(); err != nil {
		gputest.Without(t, err)
		return
	}
	infos, err := gpurt.Devices()
	if err != nil {
		t.Fatal(err)
	}
	// With --device gpu the planner fails to open the GPU too, beside the
	// check: the usage error comes first.
	beyond := fmt.Sprintf("%d,", len(infos))
	for _, cmd := range commands {
		for _, device := range []string{"auto", "gpu"} {
			args := append(append([]string{}, cmd...), "--device", device, "--gpus", beyond)
			code, stdout, stderr := run(t, args...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "no GPU") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and no GPU", args, code, stdout, firstLine(stderr))
			}
		}
	}
}

// buildTestIndex builds the index of the documents of path with xsect
// index build.
func buildTestIndex(t *testing.T, path string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "docs.idx")
	if code, _, stderr := run(t, "index", "build", path, "-o", idx); code != ExitOK {
		t.Fatalf("index build: exit %d, %s", code, stderr)
	}
	return idx
}

// TestGPUsOwners runs allpairs, containment, pairs, simjoin and query on
// the GPU with one, two and three owners of GPU 0: the same output, and
// --explain names the owners after the run.
func TestGPUsOwners(t *testing.T) {
	gputest.Need(t, gpurt.Available())
	var b strings.Builder
	r := rand.New(rand.NewPCG(61, 62))
	for range 600 {
		for x := range 300 {
			if r.IntN(10) == 0 {
				fmt.Fprintf(&b, "%d ", x)
			}
		}
		b.WriteString("\n")
	}
	in := writeFile(t, "in.txt", b.String())
	cmds := [][]string{
		{"query", "--device", "gpu", buildTestIndex(t, in), in},
		{"allpairs", "--device", "gpu", "--technique", "batmap", "--sort", "--min-overlap", "3", in},
		{"containment", "--device", "gpu", "--technique", "scancount", "--sort", "--min-degree", "1/3", in},
		{"pairs", "--device", "gpu", "--engine", "batmap", "--sort", "--min-support", "8", in},
		{"simjoin", "--device", "gpu", "--threshold", "0.15", "--sort", in},
	}
	if _, err := gpurt.BLASLibrary(); err != nil {
		t.Logf("%v: mm and mmjoin need cuBLAS; leaving them out", err)
	} else {
		cmds = append(cmds,
			[]string{"allpairs", "--device", "gpu", "--technique", "mm", "--sort", "--min-overlap", "3", in},
			// MMJoin's split weighs the GPU against the CPU's threads: on
			// 64 of them nothing here is heavy and mmjoin cannot run.
			[]string{"allpairs", "--device", "gpu", "--technique", "mmjoin", "--threads", "8", "--sort", "--min-overlap", "3", in})
	}
	for _, cmd := range cmds {
		var first string
		for _, gpus := range []string{"0,", "0,0", "0,0,0"} {
			args := append(append([]string{}, cmd...), "--gpus", gpus, "--explain")
			code, stdout, stderr := run(t, args...)
			if code != ExitOK {
				t.Fatalf("%q: exit %d, stderr %q", args, code, stderr)
			}
			if first == "" {
				first = stdout
			} else if stdout != first {
				t.Errorf("%q: output differs from one owner's", args)
			}
			if owners := strings.Count(gpus, "0"); owners > 1 && !strings.Contains(stderr, fmt.Sprintf("%d owners", owners)) {
				t.Errorf("%q: --explain does not name the %d owners: %s", args, owners, stderr)
			}
		}
		if first == "" {
			t.Errorf("%q: no pairs: the test is too small", cmd)
		}
	}
}

// TestGPUsOpenOnlyListed runs every command that uses a GPU with --gpus
// naming one GPU, in a process of its own, and checks that it asked to
// open no other (gpurt.Requested): neither the planner's estimates nor
// opening ahead touch GPU 0 when it is not listed. Where the host has one
// GPU, "1," is bad usage and its own GPU is listed instead.
func TestGPUsOpenOnlyListed(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n3 4\n1 2 3 4\n")
	listed := 1
	if infos, err := gpurt.Devices(); err == nil && len(infos) < 2 {
		listed = 0
	}
	gpus := fmt.Sprintf("%d,", listed)
	idx := buildTestIndex(t, a)
	for _, cmd := range [][]string{
		{"query", idx, a},
		{"allpairs", a},
		{"allpairs", a, "--technique", "batmap"},
		{"containment", a, "--min-degree", "1/2"},
		{"pairs", "--min-support", "1", a},
		{"pairs", "--min-support", "1", "--engine", "batmap", a},
		{"simjoin", a, "--threshold", "0.5"},
		{"intersect", a, a},
	} {
		for _, device := range []string{"gpu", "auto"} {
			file := filepath.Join(t.TempDir(), "gpus")
			args := append(append([]string{}, cmd...), "--device", device, "--gpus", gpus)
			res := child{args: args, env: []string{childGPUsEnv + "=" + file}}.run(t)
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%q (exit %d, %s): %v", args, res.state.ExitCode(), firstLine(res.stderr), err)
			}
			if want := fmt.Sprint([]int{listed}); string(got) != "[]" && string(got) != want {
				t.Errorf("%q: asked to open GPUs %s, want %s at most (exit %d, %s)", args, got, want, res.state.ExitCode(), firstLine(res.stderr))
			}
		}
	}
}

func TestWorthPrewarm(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small"), filepath.Join(dir, "large")
	if err := os.WriteFile(small, []byte("1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sparseFile(t, large, prewarmInput)
	for _, tc := range []struct {
		device string
		paths  []string
		want   bool
	}{
		{"gpu", []string{small}, true},
		{"cpu", []string{large}, false},
		{"auto", []string{small}, false},
		{"auto", []string{small, "", "/nonexistent"}, false},
		{"auto", []string{"-"}, false},
	} {
		if got := worthPrewarmSize(tc.device, inputSize(tc.paths...)); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.device, tc.paths, got, tc.want)
		}
	}
	// A large input with --device auto: only where a GPU may be present.
	want := gpurt.Present() == nil
	if got := worthPrewarmSize("auto", inputSize(large)); got != want {
		t.Errorf("auto, a large input: %v, want %v (GPU present: %v)", got, want, gpurt.Present())
	}
	// A generated input, by its size.
	if got := worthPrewarmSize("auto", prewarmInput); got != want {
		t.Errorf("auto, a large generated input: %v, want %v (GPU present: %v)", got, want, gpurt.Present())
	}
	if worthPrewarmSize("auto", prewarmInput-1) || worthPrewarmSize("cpu", prewarmInput) || !worthPrewarmSize("gpu", 0) {
		t.Errorf("worthPrewarmSize: auto below %d, cpu or gpu: want false, false, true", prewarmInput)
	}
}
