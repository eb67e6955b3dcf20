//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An output folder where no file can be made is refused at launch, in one
// line with exit status 2, as xsect -o refuses it (it was found once the
// pipeline had run, exit 1 after a dump of the plan). Root may write
// anywhere: as root the command runs as nobody.
func TestOutputNotWritable(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.sets")
	if err := os.WriteFile(in, []byte("1 2 3\n2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
	if names, _ := os.ReadDir(ro); len(names) > 0 {
		t.Errorf("left %v", names)
	}
}
