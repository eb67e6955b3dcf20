//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/settest"
)

// The command works as a worker in a process of its own, as on a cluster:
// Prism starts Beam's container boot program (PROCESS environment), which
// fetches the xsect-beam binary and runs it with --worker; the tiles read
// the input from its path in that process.
func TestWorkerProcess(t *testing.T) {
	msweb := settest.SharedData(t, "containment/msweb.data.train.sets")
	dir := t.TempDir()
	// Prism 2.77 passes --id='ID' with the quotes in the value: a wrapper
	// takes them out before the boot program reads its flags.
	wrapper := filepath.Join(dir, "boot.sh")
	script := "#!/bin/sh\nfor a; do shift; set -- \"$@\" \"$(printf '%s' \"$a\" | tr -d \"'\")\"; done\nexec " + boot + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "out")
	// A worker that cannot start leaves Prism waiting for it: bound the
	// run. Its output goes to a file, which the worker processes that
	// Prism starts inherit.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logName := filepath.Join(dir, "log")
	log, err := os.Create(logName)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, xsectBeam, "allpairs", "--input", msweb, "--min-overlap", "4", "--tiles", "3", "--output", prefix,
		"--environment_type", "PROCESS", "--environment_config", `{"command": "`+wrapper+`"}`, "--worker_binary", xsectBeam)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = dir // where the boot program writes pipeline_options.json
	// Prism ends the boot program with SIGKILL, which leaves the worker
	// it started running, idle: the run gets a process group of its own,
	// ended with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	if err == nil {
		defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = cmd.Wait()
	}
	if err != nil {
		b, _ := os.ReadFile(logName)
		t.Fatalf("xsect-beam: %v:\n%s", err, b)
	}
	got, files := outputLines(t, prefix)
	stdout, stderr, code := invoke(t, xsect, "allpairs", "--min-overlap", "4", msweb)
	if code != 0 {
		t.Fatalf("xsect: exit %d:\n%s", code, stderr)
	}
	if want := sortedLines(stdout); files != 6 || !slices.Equal(got, want) {
		t.Fatalf("%d files hold %d lines, xsect printed %d", files, len(got), len(want))
	}
}
