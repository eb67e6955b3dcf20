// Package gputest is the one way a test finds that there is no GPU to
// test on: it skips, saying why, or fails where a GPU is expected
// (RequireEnv=1, as scripts/device.sh sets on the GPU machine), so that a
// GPU machine whose driver does not load cannot pass the GPU tests by
// skipping them all.
//
// It imports nothing of xsect, so that gpurt's own tests use it too; the
// caller passes the reason, gpurt.Available's error:
//
//	gputest.Need(t, gpurt.Available())
//
// Skips for other reasons stay plain skips: a test that needs NVRTC,
// cuBLAS or a second GPU skips on a GPU machine without them.
package gputest

import (
	"os"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns every skip for want
// of a GPU into a failure: "1" requires a GPU, "" or "0" does not.
const RequireEnv = "XSECT_REQUIRE_GPU"

// Need ends tb when err, the reason no GPU can be used, is not nil: it
// skips tb with the reason, or fails it where RequireEnv is 1. A nil err
// does nothing.
func Need(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if required(tb) {
		tb.Fatalf("%v; %s=1: a GPU is required", err, RequireEnv)
	}
	tb.Skipf("%v; skipping", err)
}

// Without is for a test that checks what happens without a GPU where
// there is none, and what the GPU does where there is one: called on its
// branch without a GPU, with the reason, it fails tb where RequireEnv is
// 1 (the GPU half did not run) and lets the test go on either way.
func Without(tb testing.TB, err error) {
	tb.Helper()
	if err != nil && required(tb) {
		tb.Errorf("%v; %s=1: a GPU is required, and this test's GPU half did not run", err, RequireEnv)
	}
}

// required reads RequireEnv, failing tb on a value other than "", "0"
// and "1", so that a misspelt setting does not let the GPU tests skip.
func required(tb testing.TB) bool {
	tb.Helper()
	switch v := os.Getenv(RequireEnv); v {
	case "", "0":
		return false
	case "1":
		return true
	default:
		tb.Fatalf("%s=%q: want 1 (a GPU is required) or 0", RequireEnv, v)
		return true
	}
}

// CheckWeighed checks what a GPU estimate of a small problem, whose GPUs
// were left to the planner, says on a host of gpus GPUs: on several, that
// the first alone runs it, in its detail ("on GPU 0 alone: ...") and its
// device name ("GPU 0, ..."); on one, that nothing was weighed, and a
// device name, if any, of GPU 0.
func CheckWeighed(tb testing.TB, what string, gpus int, detail, deviceName string) {
	tb.Helper()
	alone := strings.Contains(detail, "on GPU 0 alone") && strings.HasPrefix(deviceName, "GPU 0,")
	switch {
	case gpus > 1 && !alone:
		tb.Errorf("%s on %d GPUs: %q on %q; want GPU 0 alone, said", what, gpus, detail, deviceName)
	case gpus == 1 && (strings.Contains(detail, "alone") || deviceName != "" && !strings.HasPrefix(deviceName, "GPU 0,")):
		tb.Errorf("%s on one GPU: %q on %q; want nothing weighed, on GPU 0", what, detail, deviceName)
	}
}
