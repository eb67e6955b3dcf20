package gputest_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// childEnv names what TestChild does in a child process: "need" and
// "without" call Need and Without with a stand-in reason, "driver" calls
// Need with gpurt.Available's.
const childEnv = "XSECT_GPUTEST_CHILD"

// standIn is the reason the child gives for want of a GPU.
var standIn = errors.New("gpu: stand-in reason")

func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "need":
		gputest.Need(t, standIn)
		t.Log("went on after Need")
	case "without":
		gputest.Without(t, standIn)
		t.Log("went on after Without")
	case "driver":
		gputest.Need(t, gpurt.Available())
		t.Log("went on after Need")
	}
}

// child runs TestChild in a fresh process doing what, with RequireEnv set
// to require ("": unset), and returns whether it passed and its output.
func child(t *testing.T, what, require string) (bool, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChild$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, gputest.RequireEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, childEnv+"="+what)
	if require != "" {
		cmd.Env = append(cmd.Env, gputest.RequireEnv+"="+require)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return err == nil, string(out)
}

// TestNeed runs Need and Without with and without RequireEnv: a skip, or
// a pass, becomes a failure that gives the reason where a GPU is required.
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		what, require string
		pass          bool
		want          []string // in the output
	}{
		{"need", "", true, []string{"--- SKIP: TestChild", standIn.Error() + "; skipping"}},
		{"need", "0", true, []string{"--- SKIP: TestChild"}},
		{"need", "1", false, []string{"--- FAIL: TestChild", standIn.Error() + "; XSECT_REQUIRE_GPU=1: a GPU is required"}},
		{"need", "yes", false, []string{"--- FAIL: TestChild", `XSECT_REQUIRE_GPU="yes": want 1`}},
		{"without", "", true, []string{"--- PASS: TestChild", "went on after Without"}},
		{"without", "1", false, []string{"--- FAIL: TestChild", "GPU half did not run", "went on after Without"}},
	} {
		pass, out := child(t, tc.what, tc.require)
		if pass != tc.pass {
			t.Errorf("%s with %s=%q: passed %v, want %v; output:\n%s", tc.what, gputest.RequireEnv, tc.require, pass, tc.pass, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s with %s=%q: output lacks %q:\n%s", tc.what, gputest.RequireEnv, tc.require, w, out)
			}
		}
		if tc.what == "need" && strings.Contains(out, "went on after Need") {
			t.Errorf("%s with %s=%q: the test went on after Need:\n%s", tc.what, gputest.RequireEnv, tc.require, out)
		}
	}
}

// TestRequireWithoutGPU: on this machine without a GPU, a GPU test run
// with XSECT_REQUIRE_GPU=1 fails, giving the driver's reason.
func TestRequireWithoutGPU(t *testing.T) {
	reason := gpurt.Available()
	if reason == nil {
		t.Skip("a GPU is present: Need lets the GPU tests run")
	}
	pass, out := child(t, "driver", "1")
	if pass || !strings.Contains(out, "--- FAIL: TestChild") || !strings.Contains(out, reason.Error()) {
		t.Errorf("a GPU test with XSECT_REQUIRE_GPU=1 and no GPU: passed %v, want a failure giving %q; output:\n%s", pass, reason, out)
	}
	if pass, out := child(t, "driver", ""); !pass || !strings.Contains(out, "--- SKIP: TestChild") {
		t.Errorf("a GPU test without XSECT_REQUIRE_GPU and no GPU: passed %v, want a skip; output:\n%s", pass, out)
	}
}
