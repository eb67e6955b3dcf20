package cli

import (
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpuintersect"
	"github.com/xsect/xsect/internal/gpurt"
)

func TestDevices(t *testing.T) {
	code, stdout, stderr := run(t, "devices")
	if code != ExitOK {
		t.Fatalf("devices: code %d, stderr %q", code, stderr)
	}
	if err := gpurt.Available(); err != nil {
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
