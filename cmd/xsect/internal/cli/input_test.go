package cli

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/synth"
)

// encodings returns a collection of k sets as text, as gzip-compressed
// text and in the binary format.
func encodings(t *testing.T, k int) (text, gz, bin []byte) {
	t.Helper()
	c, err := synth.Generate(synth.Config{Sets: k, Universe: 1 << 20, AvgSize: 30, Seed: uint64(k)})
	if err != nil {
		t.Fatal(err)
	}
	var tb, zb, bb bytes.Buffer
	if err := setio.WriteText(&tb, c); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(&zb)
	zw.Write(tb.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := setio.WriteBinary(&bb, c); err != nil {
		t.Fatal(err)
	}
	return tb.Bytes(), zb.Bytes(), bb.Bytes()
}

// inputCases are the encodings of a small collection and of one larger
// than every buffer on the way (the 64 KiB of a pipe, the 1 MiB of the
// reader), each with its text.
func inputCases(t *testing.T) []struct {
	name       string
	data, text []byte
} {
	var cases []struct {
		name       string
		data, text []byte
	}
	for _, k := range []int{3, 40000} {
		text, gz, bin := encodings(t, k)
		if k > 3 && len(bin) < 2<<20 {
			t.Fatalf("the large binary input is only %d bytes", len(bin))
		}
		for _, e := range []struct {
			name string
			data []byte
		}{{"text", text}, {"gzip", gz}, {"binary", bin}} {
			cases = append(cases, struct {
				name       string
				data, text []byte
			}{e.name + "-" + map[bool]string{true: "small", false: "large"}[k == 3], e.data, text})
		}
	}
	return cases
}

// runWith runs the command line with stdin as standard input.
func runWith(t *testing.T, stdin *os.File, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, &Env{Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// TestInputPipe reads every encoding through a pipe: as "-" (standard
// input) and by a path that opens the pipe (/dev/fd/N, what /dev/stdin is
// when the shell pipes into xsect). The input must be read once, the
// format told from the bytes read: opening the path again would lose them.
func TestInputPipe(t *testing.T) {
	for _, tc := range inputCases(t) {
		for _, how := range []string{"-", "/dev/fd"} {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			path := "-"
			if how == "/dev/fd" {
				path = filepath.Join("/dev/fd", strconv.Itoa(int(r.Fd())))
				if _, err := os.Stat(path); err != nil {
					r.Close()
					w.Close()
					t.Skipf("no %s on this system: %v", path, err)
				}
			}
			go func() {
				w.Write(tc.data)
				w.Close()
			}()
			code, stdout, stderr := runWith(t, r, "convert", "--to", "text", path, "-")
			r.Close()
			if code != ExitOK || stdout != string(tc.text) {
				t.Errorf("%s through a pipe as %s: exit %d, %d bytes out, want %d; stderr %q",
					tc.name, how, code, len(stdout), len(tc.text), stderr)
			}
		}
	}
}

// TestInputErrors: a directory, or a file that cannot be opened, is bad
// input (exit 2), named once; so is "-" given twice.
func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, "good.txt", "1 2 3\n")
	for _, args := range [][]string{
		{"info", dir},
		{"info", good, dir},
		{"convert", dir, filepath.Join(t.TempDir(), "out")},
		{"intersect", good, dir},
		{"intersect", "--from", dir, "0"},
		{"allpairs", dir},
		{"allpairs", good, "--with", dir},
		{"containment", dir},
		{"simjoin", "--threshold", "0.5", dir},
		{"simjoin", "--threshold", "0.5", good, "--with", dir},
		{"pairs", "--min-support", "1", dir},
	} {
		code, stdout, stderr := run(t, args...)
		if code != ExitUsage || stdout != "" || strings.Count(stderr, dir) != 1 || !strings.Contains(stderr, dir+": is a directory") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %s once", args, code, stdout, stderr, dir)
		}
	}
	missing := filepath.Join(dir, "missing.txt")
	if code, _, stderr := run(t, "info", missing); code != ExitUsage || strings.Count(stderr, missing) != 1 {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, "intersect", "-", "-"); code != ExitUsage || !strings.Contains(stderr, "given twice") {
		t.Errorf("- twice: exit %d, stderr %q", code, stderr)
	}
	// Binary files cut anywhere, the magic included: the error names the
	// file, as every other error does.
	_, _, bin := encodings(t, 3)
	for _, n := range []int{3, 7, 30, 64, 100, len(bin) - 1} {
		cut := writeFile(t, "cut.bin", string(bin[:n]))
		code, stdout, stderr := run(t, "info", cut)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, "xsect info: "+cut+": ") || strings.Contains(stderr, "<input>") {
			t.Errorf("binary cut at %d: exit %d, stderr %q", n, code, stderr)
		}
	}
	if os.Geteuid() != 0 {
		locked := writeFile(t, "locked.txt", "1 2\n")
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := run(t, "info", locked)
		if code != ExitUsage || stdout != "" || strings.Count(stderr, locked) != 1 || !strings.Contains(stderr, "permission denied") {
			t.Errorf("unreadable file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
}
