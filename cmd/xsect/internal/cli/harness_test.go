package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

// The test binary stands in for xsect in tests that need a process of its
// own (signals, pipes from another process, resource limits): run with
// childEnv set, it applies the limits in its environment and runs the
// command line of its arguments.
const (
	childEnv      = "XSECT_TEST_CHILD"
	childASEnv    = "XSECT_TEST_RLIMIT_AS"    // address space, bytes
	childFSizeEnv = "XSECT_TEST_RLIMIT_FSIZE" // largest file written, bytes
	childPeakEnv  = "XSECT_TEST_PEAK_FILE"    // where to write the peak resident memory
	childGPUsEnv  = "XSECT_TEST_GPUS_FILE"    // where to write the GPUs asked to open (gpurt.Requested)
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

func childMain() int {
	for _, l := range []struct {
		env      string
		resource int
	}{{childASEnv, rlimitAS}, {childFSizeEnv, rlimitFSize}} {
		v := os.Getenv(l.env)
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err == nil {
			err = setLimit(l.resource, n)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "test child: %s=%s: %v\n", l.env, v, err)
			return 99
		}
	}
	code := Main(os.Args[1:], &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if path := os.Getenv(childPeakEnv); path != "" {
		// The process's own peak: the rusage that its parent gets back
		// counts the parent's memory too (the child shares it until it
		// executes).
		os.WriteFile(path, []byte(strconv.FormatInt(peakRSS(), 10)), 0o644)
	}
	if path := os.Getenv(childGPUsEnv); path != "" {
		os.WriteFile(path, []byte(fmt.Sprint(gpurt.Requested())), 0o644)
	}
	return code
}

// child describes a run of xsect in a process of its own.
type child struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer // a buffer by default
	limits map[string]uint64
	env    []string // more of the environment: "NAME=value"
	dir    string
}

// childResult is how the process ended and what it printed.
type childResult struct {
	state          *os.ProcessState
	stdout, stderr string
}

// command returns the command that runs c; the test fails if it has not
// ended a minute after the test's own deadline would allow. A failing
// xsect is killed then, so that a bug cannot hang the suite.
func (c child) command(t *testing.T) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	if len(c.limits) > 0 && !limitsSupported {
		t.Skip("resource limits are not supported on this system")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], c.args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	for k, v := range c.limits {
		cmd.Env = append(cmd.Env, k+"="+strconv.FormatUint(v, 10))
	}
	cmd.Env = append(cmd.Env, c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Dir = c.stdin, &stdout, &stderr, c.dir
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	return cmd, &stdout, &stderr
}

// run runs c to its end.
func (c child) run(t *testing.T) childResult {
	t.Helper()
	cmd, stdout, stderr := c.command(t)
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running %q: %v", c.args, err)
		}
	}
	if cmd.ProcessState.ExitCode() == 99 {
		t.Fatalf("%q: %s", c.args, stderr)
	}
	return childResult{cmd.ProcessState, stdout.String(), stderr.String()}
}

// sharedElementSets writes k sets that all hold element 0 and two of
// their own: every pair shares exactly one element (overlap 1, Jaccard
// 1/5), so that k sets give k(k-1)/2 pairs with little work to find them.
func sharedElementSets(t *testing.T, k int) string {
	var b strings.Builder
	for i := range k {
		fmt.Fprintf(&b, "0 %d %d\n", 2*i+1, 2*i+2)
	}
	return writeFile(t, "shared.txt", b.String())
}
