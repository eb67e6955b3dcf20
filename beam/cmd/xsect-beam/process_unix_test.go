//go:build unix

package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// testInput makes a folder for a test, holding a collection in.sets of the
// sets in text.
func testInput(t *testing.T, text string) (dir, in string) {
	dir = t.TempDir()
	in = filepath.Join(dir, "in.sets")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, in
}

func mkdir(t *testing.T, dir string, mode os.FileMode) string {
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An output folder where no file can be made is refused at launch, in one
// line with exit status 2, as xsect -o refuses it (it was found once the
// pipeline had run, exit 1 after a dump of the plan). Root may write
// anywhere: as root the command runs as nobody.
func TestOutputNotWritable(t *testing.T) {
	dir, in := testInput(t, "1 2 3\n2 3\n")
	ro := mkdir(t, filepath.Join(dir, "ro"), 0o555)
	out := filepath.Join(ro, "out")
	cmd := exec.Command(xsectBeam, "allpairs", "--input", in, "--output", out)
	cmd.Dir = dir
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(xsectBeam), filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Skipf("cannot run the command as nobody: %v", err)
	}
	want := "xsect-beam allpairs: --output " + out + ": cannot create a file in " + ro + ": permission denied\n"
	if ee.ExitCode() != 2 || stderr.String() != want {
		t.Errorf("exit %d, %q; want 2, %q", ee.ExitCode(), stderr.String(), want)
	}
	if names := left(ro); len(names) > 0 {
		t.Errorf("left %q", names)
	}
}

// A run leaves nothing in $TMPDIR: Beam's loopback runner left an empty
// file beamloopbackworker-N there on every run.
func TestNothingLeftInTemp(t *testing.T) {
	dir, in := testInput(t, "1 2 3\n2 3\n3 4\n")
	tmp := mkdir(t, filepath.Join(dir, "tmp"), 0o755)
	prefix := filepath.Join(dir, "out")
	cmd := exec.Command(xsectBeam, "allpairs", "--input", in, "--output", prefix, "--tiles", "2")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if lines, files := outputLines(t, prefix); files != 3 || strings.Join(lines, " ") != "0\t1\t2 0\t2\t1 1\t2\t1" {
		t.Fatalf("%d files, lines %q", files, lines)
	}
	if names := left(tmp); len(names) > 0 {
		t.Errorf("left in $TMPDIR: %q", names)
	}
}

// TestSignals interrupts a run while its tile writes its file: the
// partial file (gigabytes, on real data) and the run's temporary files are
// removed, and the process ends by the signal, as the shell expects. The
// process is stopped while the partial file is checked, so that the tile
// (minutes of merging) cannot finish it before the signal.
func TestSignals(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 10))
	c := sets.New()
	for range 20000 {
		c.Add(settest.RandomSet(rng, 30, 0, 300))
	}
	var text strings.Builder
	if err := setio.WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	dir, in := testInput(t, text.String())
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out, tmp := mkdir(t, filepath.Join(dir, "out-"+sig.String()), 0o755), mkdir(t, filepath.Join(dir, "tmp-"+sig.String()), 0o755)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, xsectBeam, "allpairs", "--input", in, "--min-overlap", "10", "--technique", "merge",
			"--threads", "1", "--tiles", "1", "--output", filepath.Join(out, "pairs"))
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan struct{})
		go func() { cmd.Wait(); close(ended) }()
		partial := filepath.Join(out, "pairs-00000-of-00001.partial-*")
		for {
			if names, _ := filepath.Glob(partial); len(names) > 0 {
				cmd.Process.Signal(syscall.SIGSTOP)
				if names, _ := filepath.Glob(partial); len(names) > 0 {
					break
				}
				t.Fatalf("%v: the tile finished before the signal", sig)
			}
			select {
			case <-ended:
				t.Fatalf("%v: the run ended first: %v\n%s", sig, cmd.ProcessState, stderr.String())
			case <-time.After(5 * time.Millisecond):
			}
		}
		cmd.Process.Signal(sig)
		cmd.Process.Signal(syscall.SIGCONT)
		<-ended
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("%v: %v, want death by the signal\n%s", sig, cmd.ProcessState, stderr.String())
		}
		for _, d := range []string{out, tmp} {
			if names := left(d); len(names) > 0 {
				t.Errorf("%v: left %q", sig, names)
			}
		}
	}
}
