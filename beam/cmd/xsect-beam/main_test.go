package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/settest"
)

// The commands under test, built by TestMain: this one, the
// single-machine xsect, whose lines it must write, and Beam's Go container
// boot program, which starts a worker process as a runner's container
// does.
var xsectBeam, xsect, boot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xsect-beam-cmd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	xsectBeam, xsect, boot = filepath.Join(dir, "xsect-beam"), filepath.Join(dir, "xsect"), filepath.Join(dir, "boot")
	for bin, pkg := range map[string]string{xsectBeam: ".", xsect: "github.com/xsect/xsect/cmd/xsect",
		boot: "github.com/apache/beam/sdks/v2/go/container"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// invoke runs bin with args and returns its standard output, standard
// error and exit status.
func invoke(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", "", -1
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// outputLines reads the files PREFIX-* and returns their lines, sorted,
// and the number of files.
func outputLines(t *testing.T, prefix string) ([]string, int) {
	t.Helper()
	files, err := filepath.Glob(prefix + "-*")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		if !strings.Contains(f, fmt.Sprintf("-of-%05d", len(files))) {
			t.Fatalf("file %s among %d", f, len(files))
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	return sortedLines(all.String()), len(files)
}

// left returns the paths of the files in dir, hidden ones included.
func left(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	return names
}

// Bad flags and bad input exit with status 2 and say what is wrong.
func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.sets")
	os.WriteFile(in, []byte("1 2 3\n2 3\n"), 0o644)
	bad := filepath.Join(dir, "bad.sets")
	os.WriteFile(bad, []byte("1 2 x\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string // in standard error
	}{
		{nil, "Usage: xsect-beam COMMAND"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"allpairs", "--input", in}, "--output is required"},
		{[]string{"allpairs", "--output", out}, "--input is required"},
		{[]string{"allpairs", "--input", in, "--output", out, "extra"}, `unexpected argument "extra"`},
		{[]string{"allpairs", "--input", in, "--output", out, "--min-overlap", "-1"}, "--min-overlap -1 is negative"},
		{[]string{"allpairs", "--input", in, "--output", out, "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"allpairs", "--input", in, "--output", out, "--device", "tpu"}, `--device "tpu"`},
		{[]string{"allpairs", "--input", in, "--output", out, "--technique", "nope"}, `technique "nope"`},
		{[]string{"allpairs", "--input", in, "--output", out, "--gpus", "x"}, "--gpus"},
		{[]string{"allpairs", "--input", in, "--output", out, "--threads", "-1"}, "--threads -1"},
		{[]string{"allpairs", "--input", in, "--output", out, "--with", ""}, "--with: empty value"},
		{[]string{"allpairs", "--input", filepath.Join(dir, "missing"), "--output", out}, "missing"},
		{[]string{"allpairs", "--input", bad, "--output", out}, "bad.sets:1"},
		{[]string{"containment", "--input", in, "--output", out, "--min-degree", "2"}, "--min-degree"},
		{[]string{"pairs", "--input", in, "--output", out}, "--min-support is required"},
		{[]string{"pairs", "--input", in, "--output", out, "--min-support", "x"}, "--min-support"},
		{[]string{"pairs", "--input", in, "--output", out, "--min-support", "1", "--with", in}, "not defined: -with"},
		{[]string{"pairs", "--input", in, "--output", out, "--min-support", "1", "--engine", "nope"}, `technique "nope"`},
		{[]string{"pairs", "--input", in, "--output", out, "--min-support", "1", "--technique", "nope"}, `technique "nope"`},
		{[]string{"pairs", "--input", in, "--output", out, "--min-support", "1", "--engine", "eclat", "--technique", "apriori"}, `--engine "eclat" and --technique "apriori" disagree`},
		{[]string{"simjoin", "--input", in, "--output", out, "--threshold", "0.5", "--algorithm", "nope"}, `technique "nope"`},
		{[]string{"simjoin", "--input", in, "--output", out, "--threshold", "0.5", "--technique", "nope"}, `technique "nope"`},
		{[]string{"simjoin", "--input", in, "--output", out, "--threshold", "0.5", "--technique", "ppjoin", "--algorithm", "allpairs"}, "disagree"},
		{[]string{"simjoin", "--input", in, "--output", out}, "--threshold is required"},
		{[]string{"simjoin", "--input", in, "--output", out, "--threshold", "1.5"}, "--threshold"},
		{[]string{"simjoin", "--input", in, "--output", out, "--threshold", "0.5", "--measure", "nope"}, "--measure"},
		{[]string{"--worker=false"}, "want a command first"},
	} {
		_, stderr, code := invoke(t, xsectBeam, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("xsect-beam %s: exit %d, want 2, with %q in:\n%s", strings.Join(tc.args, " "), code, tc.want, stderr)
		}
	}
	if files, _ := filepath.Glob(out + "*"); len(files) > 0 {
		t.Errorf("failed runs left files: %v", files)
	}
}

// What the launcher can refuse before it reads the collection (here it
// does not exist) is refused at once, in one line, with exit status 2,
// leaving nothing: an output prefix that names a folder among the rest,
// which wrote DIR-00000-of-00001 beside the folder.
func TestRefusedAtLaunch(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sets")
	folder := filepath.Join(dir, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", folder + "/"}, "--output " + folder + "/ is a folder: name the files in it, as in --output DIR/NAME"},
		{[]string{"--output", folder + "/."}, "--output " + folder + "/. is a folder"},
		{[]string{"--output", folder}, "--output " + folder + " is a folder"},
		{[]string{"--output", folder + "/.."}, "--output " + folder + "/.. is a folder"},
		{[]string{"--output", "gs://bucket/out/"}, "--output gs://bucket/out/ is a folder"},
		{[]string{"--output", filepath.Join(dir, "none", "out")}, "no folder " + filepath.Join(dir, "none")},
		{[]string{"--tiles", "100000"}, "--tiles 100000: over 100000 tiles: at most 446 blocks a side"},
		{[]string{"--tiles", "-2"}, "--tiles -2 is negative"},
		{[]string{"--tile-pairs", "NaN"}, "--tile-pairs NaN: want a positive number (0: the default)"},
		{[]string{"--tile-pairs", "-1"}, "--tile-pairs -1: want a positive number (0: the default)"},
		{[]string{"--tile-output", "nan"}, "--tile-output NaN: want a positive number (0: the default)"},
	} {
		args := append([]string{"allpairs", "--input", missing}, tc.args...)
		if !slices.Contains(args, "--output") {
			args = append(args, "--output", filepath.Join(dir, "out"))
		}
		_, stderr, code := invoke(t, xsectBeam, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("xsect-beam %s: exit %d, want 2 and one line with %q:\n%s", strings.Join(args, " "), code, tc.want, stderr)
		}
	}
	if names := left(dir); !slices.Equal(names, []string{folder}) {
		t.Errorf("left %q", names)
	}
	if names := left(folder); len(names) > 0 {
		t.Errorf("left %q", names)
	}
}

// --help shows every command's flags, the runner's among them, and exits 0.
func TestHelp(t *testing.T) {
	stdout, _, code := invoke(t, xsectBeam, "--help")
	if code != 0 || !strings.Contains(stdout, "simjoin") {
		t.Errorf("--help: exit %d:\n%s", code, stdout)
	}
	// The old names of --technique are marked as such.
	for cmd, old := range map[string]string{"pairs": "-engine", "simjoin": "-algorithm"} {
		stdout, _, code := invoke(t, xsectBeam, cmd, "--help")
		if want := "\n  " + old + " NAME\n    \tsame as --technique NAME (its old name)\n"; code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("%s --help: exit %d, want %q in:\n%s", cmd, code, want, stdout)
		}
	}
	for cmd, flag := range map[string]string{"allpairs": "-min-overlap", "containment": "-min-degree", "pairs": "-min-support", "simjoin": "-threshold"} {
		stdout, _, code := invoke(t, xsectBeam, cmd, "--help")
		for _, want := range []string{flag, "-input", "-output PREFIX", "-technique NAME", "-tiles", "--runner", "--project", "--temp_location"} {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("%s --help: exit %d, want %q in:\n%s", cmd, code, want, stdout)
			}
		}
	}
}

// On real data, every workload's files hold the lines of the xsect
// command, over a grid of tiles.
func TestRealData(t *testing.T) {
	data := func(rel string) string { return settest.SharedData(t, rel) }
	msweb, email, ndc := data("containment/msweb.data.train.sets"), data("hypergraphs/email-Eu.dedup.sets"), data("hypergraphs/NDC-substances.dedup.sets")
	retail, bms2 := data("fimi/retail.dat"), data("fimi/BMS2.dat")
	for _, tc := range []struct {
		name        string
		beam, xsect []string
	}{
		{"allpairs", []string{"allpairs", "--input", msweb, "--min-overlap", "4", "--tiles", "3"}, []string{"allpairs", "--min-overlap", "4", msweb}},
		{"allpairs-count", []string{"allpairs", "--input", msweb, "--min-overlap", "2", "--count-only", "--tiles", "4"}, []string{"allpairs", "--min-overlap", "2", "--count-only", msweb}},
		{"containment-with", []string{"containment", "--input", email, "--with", ndc, "--min-degree", "0.9", "--tiles", "3", "--sort"}, []string{"containment", "--min-degree", "0.9", email, "--with", ndc}},
		{"pairs", []string{"pairs", "--input", retail, "--min-support", "0.0005", "--tiles", "4"}, []string{"pairs", "--min-support", "0.0005", retail}},
		{"simjoin", []string{"simjoin", "--input", bms2, "--threshold", "0.7", "--distinct", "--tiles", "3"}, []string{"simjoin", "--threshold", "0.7", "--distinct", bms2}},
		{"simjoin-count", []string{"simjoin", "--input", bms2, "--measure", "cosine", "--threshold", "0.9", "--count-only", "--tile-pairs", "4e8"}, []string{"simjoin", "--measure", "cosine", "--threshold", "0.9", "--count-only", bms2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "out")
			_, stderr, code := invoke(t, xsectBeam, append(tc.beam, "--output", prefix, "--explain")...)
			if code != 0 {
				t.Fatalf("xsect-beam: exit %d:\n%s", code, stderr)
			}
			got, files := outputLines(t, prefix)
			stdout, stderr, code := invoke(t, xsect, tc.xsect...)
			if code != 0 {
				t.Fatalf("xsect: exit %d:\n%s", code, stderr)
			}
			want := sortedLines(stdout)
			if !slices.Equal(got, want) {
				t.Fatalf("%d files hold %d lines, xsect printed %d", files, len(got), len(want))
			}
			if len(want) == 0 || want[0] == "0" {
				t.Fatal("xsect found nothing: the case proves little")
			}
			t.Logf("%d files, %d lines", files, len(want))
		})
	}
}
