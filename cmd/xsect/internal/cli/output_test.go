package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// genArgs generate a small collection as text.
var genArgs = []string{"gen", "--sets", "20", "--universe", "100", "--avg-size", "5"}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// outputCommands are command lines of every command that writes a file
// given by a flag or an argument, with OUT where the file goes and IN an
// input.
var outputCommands = [][]string{
	{"gen", "-o", "OUT"},
	{"convert", "IN", "OUT"},
	{"allpairs", "IN", "-o", "OUT"},
	{"containment", "IN", "-o", "OUT"},
	{"simjoin", "--threshold", "0.5", "IN", "-o", "OUT"},
	{"pairs", "--min-support", "1", "IN", "-o", "OUT"},
	{"pairs", "--gen-items", "10", "--gen-out", "OUT"},
	{"pairs", "--min-support", "1", "IN", "--cpuprofile", "OUT"},
	{"allpairs", "IN", "--cpuprofile", "OUT"},
	{"containment", "IN", "--count-only", "--cpuprofile", "OUT"},
}

func substitute(args []string, in, out string) []string {
	var r []string
	for _, a := range args {
		switch a {
		case "IN":
			a = in
		case "OUT":
			a = out
		}
		r = append(r, a)
	}
	return r
}

// TestOutputChecks: an output that cannot be written is found before the
// work (here, before reading an input that would fail), an empty name is
// bad usage, and a failing command leaves nothing behind.
func TestOutputChecks(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, "bad.txt", "1 2\nx\n")
	for _, cmd := range outputCommands {
		for _, tc := range []struct {
			out, want string
		}{
			{dir, dir + ": is a directory"},
			{filepath.Join(dir, "missing", "x"), filepath.Join(dir, "missing", "x") + ": no such file or directory"},
			{"", "empty"},
		} {
			args := substitute(cmd, bad, tc.out)
			code, stdout, stderr := run(t, args...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "bad.txt") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, stdout, stderr, tc.want)
			}
		}
		// A bad input: no file, not even a temporary one.
		out := filepath.Join(dir, "out")
		if code, _, _ := run(t, substitute(cmd, bad, out)...); code == ExitOK && cmd[0] != "gen" && !slices.Contains(cmd, "--gen-out") {
			t.Errorf("%q: a bad input accepted", cmd)
		}
		if names := entries(t, dir); len(names) != 0 && !(len(names) == 1 && (cmd[0] == "gen" || slices.Contains(cmd, "--gen-out"))) {
			t.Errorf("%q: left %q", cmd, names)
		}
		os.Remove(out)
	}
	// A profile is an output like the others: none on bad usage found
	// after it was opened, one on success.
	good := writeFile(t, "good.txt", "1 2\n2 3\n")
	prof := filepath.Join(dir, "cpu.prof")
	if code, _, _ := run(t, "pairs", "--min-support", "x", "--cpuprofile", prof, good); code != ExitUsage {
		t.Errorf("--min-support x: exit %d", code)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("bad usage with --cpuprofile left %q", names)
	}
	if code, _, stderr := run(t, "pairs", "--min-support", "1", "--cpuprofile", prof, good); code != ExitOK {
		t.Errorf("--cpuprofile: exit %d, %s", code, stderr)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile wrote no profile: %v", err)
	}
	// Other string flags given empty values are bad usage too, not "not
	// given" (--with '' would join FILE with itself).
	for _, args := range [][]string{
		{"allpairs", good, "--with", ""},
		{"intersect", "--from", "", "0"},
		{"pairs", "--min-support", "1", "--engine", "", good},
		{"gen", "--dist", ""},
	} {
		if code, stdout, stderr := run(t, args...); code != ExitUsage || stdout != "" || !strings.Contains(stderr, "empty value") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// TestOutputReplace: -o replaces a regular file whole, keeping its
// permission bits; writes through a symbolic link, which stays a link;
// and leaves only the file in the directory.
func TestOutputReplace(t *testing.T) {
	_, want, _ := run(t, genArgs...)
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte(strings.Repeat("old\n", 10000)), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o604); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if code, _, stderr := run(t, append(genArgs, "-o", target)...); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readString(t, target); got != want {
		t.Fatalf("replaced file holds %q, want %q", got, want)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o604 {
		t.Errorf("replaced file has mode %v, want its old 0604", fi.Mode().Perm())
	}

	// Links: absolute, relative, a chain, a dangling one (its target is
	// created, as the shell's > does).
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	links := [][2]string{
		{filepath.Join(dir, "abs"), target},
		{filepath.Join(sub, "rel"), "../target.txt"},
		{filepath.Join(dir, "chain"), "sub/rel"},
		{filepath.Join(dir, "dang"), "new.txt"},
	}
	for _, l := range links {
		if err := os.Symlink(l[1], l[0]); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	for _, l := range links {
		link := l[0]
		os.WriteFile(target, []byte("old\n"), 0o644)
		if code, _, stderr := run(t, append(genArgs, "-o", link)...); code != ExitOK {
			t.Fatalf("-o %s: exit %d: %s", link, code, stderr)
		}
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("-o %s: the link was replaced (%v, %v)", link, fi.Mode(), err)
		}
		if got := readString(t, link); got != want {
			t.Errorf("-o %s: the link's target holds %q", link, got)
		}
	}
	if names := entries(t, dir); strings.Join(names, " ") != "abs chain dang new.txt sub target.txt" {
		t.Errorf("left %q", names)
	}
	// A loop of links is an error, not a hang.
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if code, _, stderr := run(t, append(genArgs, "-o", loop)...); code != ExitUsage || !strings.Contains(stderr, "creating "+loop+": ") {
		t.Errorf("a loop of links: exit %d, %q", code, stderr)
	}
}

// TestOpenReplaced checks which targets a rename over would free enough of
// to hand off: a regular file of handOffReplaced bytes or more, where the
// process hands its teardown off; not a smaller one, a directory, a
// missing one, nor any without the hand-off.
func TestOpenReplaced(t *testing.T) {
	dir := t.TempDir()
	big, small := filepath.Join(dir, "big"), filepath.Join(dir, "small")
	sparseFile(t, big, handOffReplaced)
	sparseFile(t, small, handOffReplaced-1)
	for _, c := range []struct {
		target   string
		handsOff bool
		want     bool
	}{
		{big, true, true},
		{big, false, false},
		{small, true, false},
		{dir, true, false},
		{filepath.Join(dir, "missing"), true, false},
	} {
		f := openReplaced(c.target, c.handsOff)
		if (f != nil) != c.want {
			t.Errorf("openReplaced(%s, %v) = %v, want a file %v", filepath.Base(c.target), c.handsOff, f, c.want)
		}
		if f != nil {
			if fi, err := f.Stat(); err != nil || fi.Size() != handOffReplaced {
				t.Errorf("openReplaced(%s) opened %v (%v)", filepath.Base(c.target), fi, err)
			}
			f.Close()
		}
	}
}

// sparseFile creates a file of size bytes with no blocks written.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// errWriter fails every write.
type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

// TestStdoutErrors: a command whose standard output cannot be written
// fails (exit 1) and says so, help included; and a command that fails
// writes nothing on standard output, even after good inputs.
func TestStdoutErrors(t *testing.T) {
	full := errWriter{errors.New("no space left on device")}
	good := writeFile(t, "good.txt", "1 2 3\n4 5\n")
	for _, args := range [][]string{
		{"--help"},
		{"help", "info"},
		{"info", "--help"},
		{"info", good},
		{"intersect", good},
		{"convert", good, "-"},
		{"allpairs", good, "--min-overlap", "0"},
		{"allpairs", good, "--min-overlap", "0", "--sort"},
		{"pairs", "--min-support", "1", good},
		{"gen"},
		{"devices"},
		{"intersect", "--method", "list"},
	} {
		var stderr strings.Builder
		code := Main(args, &Env{Stdin: strings.NewReader(""), Stdout: full, Stderr: &stderr})
		if code != ExitFailure || !strings.Contains(stderr.String(), "writing standard output: no space left on device") {
			t.Errorf("%q to a full disk: exit %d, stderr %q", args, code, stderr.String())
		}
	}
	bad := writeFile(t, "bad.txt", "1 2\n3 x\n")
	for _, args := range [][]string{
		{"info", good, bad},
		{"info", "--json", good, bad},
		{"intersect", good, bad},
	} {
		if code, stdout, stderr := run(t, args...); code != ExitUsage || stdout != "" || !strings.Contains(stderr, "bad.txt:2:3") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// TestOutputDirectWrites: writes large enough to skip the buffer come out
// in order with the buffered ones around them, to a file and to standard
// output, and an error of a direct write sticks.
func TestOutputDirectWrites(t *testing.T) {
	var want []byte
	writes := [][]byte{}
	for k, n := range []int{10, directWrite, 3, directWrite - 1, 5 * directWrite, 1, 1 << 20, 7} {
		b := []byte(strings.Repeat(string(rune('a'+k)), n))
		writes = append(writes, b)
		want = append(want, b...)
	}
	var stdout strings.Builder
	env := &Env{Stdout: &stdout}
	path := filepath.Join(t.TempDir(), "out.txt")
	for _, name := range []string{path, "-"} {
		o, err := openOutput(env, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range writes {
			if n, err := o.Write(b); n != len(b) || err != nil {
				t.Fatalf("%s: Write of %d bytes: %d, %v", name, len(b), n, err)
			}
		}
		if err := o.commit(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || stdout.String() != string(want) {
		t.Errorf("file %d bytes, standard output %d, want %d in order", len(got), stdout.Len(), len(want))
	}
	o, err := openOutput(&Env{Stdout: errWriter{errors.New("no space left on device")}}, "-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write(make([]byte, directWrite)); err == nil || !strings.Contains(err.Error(), "writing standard output") {
		t.Errorf("direct write to a full disk: %v", err)
	}
	if _, err := o.Write([]byte("x")); err == nil {
		t.Error("a write after a failed one succeeded")
	}
}
