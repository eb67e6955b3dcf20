//go:build unix

package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputMode: a new file is created 0666 less the umask, like the
// files of every Unix tool (os.CreateTemp's 0600 is not what users get).
func TestOutputMode(t *testing.T) {
	dir := t.TempDir()
	for _, mask := range []int{0o022, 0o077, 0o002, 0} {
		old := syscall.Umask(mask)
		out := filepath.Join(dir, "new.txt")
		code, _, stderr := run(t, append(genArgs, "-o", out)...)
		syscall.Umask(old)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := os.FileMode(0o666 &^ mask); fi.Mode().Perm() != want {
			t.Errorf("umask %03o: mode %v, want %v", mask, fi.Mode().Perm(), want)
		}
		os.Remove(out)
	}
}

// TestOutputInPlace: what is not a regular file is written where it is,
// never replaced: a FIFO stays a FIFO and its reader gets the output; a
// device's write errors name it.
func TestOutputInPlace(t *testing.T) {
	_, want, _ := run(t, genArgs...)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink("out.fifo", link)
	for _, path := range []string{fifo, link} {
		got := make(chan string)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- string(b)
		}()
		code, _, stderr := run(t, append(genArgs, "-o", path)...)
		if code != ExitOK {
			t.Fatalf("-o %s: exit %d, %s", path, code, stderr)
		}
		if s := <-got; s != want {
			t.Errorf("-o %s: the FIFO's reader got %q, want %q", path, s, want)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("-o %s: the FIFO was replaced: %v %v", path, fi.Mode(), err)
		}
	}
	if names := entries(t, dir); strings.Join(names, " ") != "link out.fifo" {
		t.Errorf("left %q", names)
	}

	for _, dev := range []string{"/dev/null", "/dev/full"} {
		// Check the plan before running the command: were it a temporary
		// file to rename over the device, a test run as root would
		// replace the device.
		o, err := openOutput(&Env{}, dev)
		if err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		o.abort()
		if o.temp != "" {
			t.Fatalf("%s would be replaced by %s", dev, o.temp)
		}
		code, _, stderr := run(t, append(genArgs, "-o", dev)...)
		switch dev {
		case "/dev/null":
			if code != ExitOK {
				t.Errorf("-o /dev/null: exit %d, %s", code, stderr)
			}
		case "/dev/full":
			if code != ExitFailure || !strings.Contains(stderr, "writing /dev/full: no space left on device") {
				t.Errorf("-o /dev/full: exit %d, %q", code, stderr)
			}
		}
		if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a device: %v, %v", dev, fi.Mode(), err)
		}
	}
}

// TestProcessPipes runs xsect as a process: binary data piped into it and
// read as /dev/stdin (the case that printed nothing), and help written to
// a full device.
func TestProcessPipes(t *testing.T) {
	for _, tc := range inputCases(t) {
		r := child{args: []string{"convert", "--to", "text", "/dev/stdin", "-"}, stdin: bytes.NewReader(tc.data)}.run(t)
		if r.state.ExitCode() != ExitOK || r.stdout != string(tc.text) {
			t.Errorf("%s | xsect convert --to text /dev/stdin -: exit %d, %d bytes, want %d; %s",
				tc.name, r.state.ExitCode(), len(r.stdout), len(tc.text), r.stderr)
		}
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"--help"}, {"info", "--help"}, append(genArgs, "-o", "-")} {
		r := child{args: args, stdout: full}.run(t)
		if r.state.ExitCode() != ExitFailure || !strings.Contains(r.stderr, "writing standard output: no space left on device") {
			t.Errorf("xsect %q >/dev/full: exit %d, %q", args, r.state.ExitCode(), r.stderr)
		}
	}
}

// TestSignals interrupts runs that have created their outputs' temporary
// files (they wait for input from a FIFO that no one writes): the files
// are removed and the process ends by the signal, which the shell reports
// as 128 plus its number (130, 143, 129).
func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		sig   syscall.Signal
		args  []string
		temps int
	}{
		{syscall.SIGINT, []string{"convert", "IN", "out.bin"}, 1},
		{syscall.SIGTERM, []string{"allpairs", "IN", "-o", "pairs.txt"}, 1},
		{syscall.SIGHUP, []string{"pairs", "--min-support", "2", "IN", "-o", "pairs.txt", "--cpuprofile", "cpu.prof"}, 2},
	} {
		dir := t.TempDir()
		in := filepath.Join(t.TempDir(), "in.fifo")
		if err := syscall.Mkfifo(in, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		cmd, _, stderr := child{args: substitute(tc.args, in, ""), dir: dir}.command(t)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		// Wait for the temporary files: the outputs are opened before
		// the input, which blocks.
		for len(entries(t, dir)) < tc.temps {
			select {
			case <-ended:
				t.Fatalf("%q ended early: %v, %s", tc.args, cmd.ProcessState, stderr)
			case <-time.After(10 * time.Millisecond):
			}
		}
		for _, name := range entries(t, dir) {
			if !strings.HasPrefix(name, ".") || !strings.Contains(name, ".tmp") {
				t.Fatalf("%q: %s before any input", tc.args, name)
			}
		}
		cmd.Process.Signal(tc.sig)
		<-ended
		t.Logf("%q, %v: %v", tc.args, tc.sig, cmd.ProcessState)
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !(ws.Signaled() && ws.Signal() == tc.sig) && ws.ExitStatus() != 128+int(tc.sig) {
			t.Errorf("%q, %v: %v, want death by the signal or exit %d; %s", tc.args, tc.sig, cmd.ProcessState, 128+int(tc.sig), stderr)
		}
		if names := entries(t, dir); len(names) != 0 {
			t.Errorf("%q, %v: left %q", tc.args, tc.sig, names)
		}
	}
}

// TestSignalWhileSorting interrupts --sort once its runs have gone to a
// file under $TMPDIR: that directory and the output's temporary file are
// removed, and the process ends by the signal.
func TestSignalWhileSorting(t *testing.T) {
	in := sharedElementSets(t, 8000)
	for _, args := range [][]string{
		{"allpairs", in, "--sort", "--memory", "32", "-o", "pairs.txt"},
		{"simjoin", in, "--threshold", "0.2", "--sort", "--memory", "32", "-o", "pairs.txt"},
	} {
		dir, tmp := t.TempDir(), t.TempDir()
		cmd, _, stderr := child{args: args, dir: dir, env: []string{"TMPDIR=" + tmp}}.command(t)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		for len(entries(t, tmp)) == 0 {
			select {
			case <-ended:
				t.Fatalf("%q ended before it wrote runs under TMPDIR: %v, %s", args, cmd.ProcessState, stderr)
			case <-time.After(5 * time.Millisecond):
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		<-ended
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !(ws.Signaled() && ws.Signal() == syscall.SIGTERM) && ws.ExitStatus() != 128+int(syscall.SIGTERM) {
			t.Errorf("%q: %v, want death by SIGTERM; %s", args, cmd.ProcessState, stderr)
		}
		if names := append(entries(t, dir), entries(t, tmp)...); len(names) != 0 {
			t.Errorf("%q: left %q", args, names)
		}
	}
}

// TestOutputReadOnlyDir: an output in a directory where no file can be
// created fails before the work, naming the directory and the reason.
func TestOutputReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may create files anywhere")
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	out := filepath.Join(ro, "out.txt")
	code, stdout, stderr := run(t, append(genArgs, "-o", out)...)
	if want := "creating " + out + ": cannot create a file in " + ro + ": permission denied"; code != ExitUsage || stdout != "" || !strings.Contains(stderr, want) {
		t.Errorf("-o in a read-only directory: exit %d, stderr %q; want %q", code, stderr, want)
	}
}
