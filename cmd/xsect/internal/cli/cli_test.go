package cli

import (
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/intersect"
)

// run runs the command line and returns exit status, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTopLevel(t *testing.T) {
	if code, _, stderr := run(t); code != ExitUsage || !strings.Contains(stderr, "intersect") {
		t.Errorf("no args: code %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := run(t, "--help"); code != ExitOK || !strings.Contains(stdout, "convert") {
		t.Errorf("--help: code %d, stdout %q", code, stdout)
	}
	if code, _, stderr := run(t, "frobnicate"); code != ExitUsage || !strings.Contains(stderr, "unknown command") {
		t.Errorf("unknown: code %d, stderr %q", code, stderr)
	}
	for _, c := range commands {
		code, stdout, _ := run(t, c.name, "--help")
		if code != ExitOK || !strings.HasPrefix(stdout, "Usage: xsect "+c.name) {
			t.Errorf("%s --help: code %d, stdout %q", c.name, code, stdout)
		}
	}
}

func TestIntersect(t *testing.T) {
	a := writeFile(t, "a.txt", "5 3 1\n9 7\n\n4294967295 0 3\n")
	b := writeFile(t, "b.txt", "0 1 2 3 4 5\n4294967295")
	c := writeFile(t, "c.txt", "3\t5 0")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"intersect", a, b}, "0\n1\n3\n5\n4294967295\n"},
		{[]string{"intersect", "--count", a, b}, "5\n"},
		{[]string{"intersect", a, b, "--count"}, "5\n"},
		{[]string{"intersect", a, b, c}, "0\n3\n5\n"},
		{[]string{"intersect", a}, "0\n1\n3\n5\n7\n9\n4294967295\n"},
		{[]string{"intersect", "--count", "--", a, b}, "5\n"},
		{[]string{"intersect", "--from", a, "0", "3"}, "3\n"},
		{[]string{"intersect", "--from", a, "--count", "0", "2"}, "0\n"},
	}
	for _, tc := range cases {
		code, stdout, stderr := run(t, tc.args...)
		if code != ExitOK || stdout != tc.want {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	for _, m := range intersect.Methods() {
		code, stdout, stderr := run(t, "intersect", "--method", m.Name, a, b, c)
		if code != ExitOK || stdout != "0\n3\n5\n" {
			t.Errorf("--method %s: code %d, stdout %q, stderr %q", m.Name, code, stdout, stderr)
		}
	}
	code, stdout, _ := run(t, "intersect", "--method", "list")
	if code != ExitOK || !strings.Contains(stdout, "merge\n") {
		t.Errorf("--method list: %d %q", code, stdout)
	}
}

func TestBadInput(t *testing.T) {
	good := writeFile(t, "good.txt", "1 2 3\n")
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing file", []string{"intersect", good, "/nonexistent/x.txt"}, "no such file"},
		{"bad token", []string{"intersect", good, writeFile(t, "bad.txt", "1 2\n3 x4\n")}, "bad.txt:2:3"},
		{"too large", []string{"intersect", good, writeFile(t, "big.txt", "4294967296\n")}, "big.txt:1:1"},
		{"unknown method", []string{"intersect", "--method", "nonesuch", good}, "unknown method"},
		{"unknown flag", []string{"intersect", "--frob", good}, "frob"},
		{"no files", []string{"intersect"}, "no FILE"},
		{"bad set id", []string{"intersect", "--from", good, "1"}, "set id"},
		{"info no files", []string{"info"}, "no FILE"},
		{"convert arity", []string{"convert", good}, "IN and OUT"},
		{"gen bad dist", []string{"gen", "--dist", "cauchy"}, "cauchy"},
		{"gen bad format", []string{"gen", "--format", "xml"}, "xml"},
	}
	for _, tc := range cases {
		code, stdout, stderr := run(t, tc.args...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want exit 2, no output and %q",
				tc.name, code, stdout, stderr, tc.wantErr)
		}
	}
}

func TestGenConvertInfo(t *testing.T) {
	dir := t.TempDir()
	txt, bin, back := filepath.Join(dir, "g.txt"), filepath.Join(dir, "g.xsb"), filepath.Join(dir, "back.txt")
	args := []string{"gen", "--sets", "50", "--universe", "1000", "--avg-size", "40", "--dist", "zipf", "--seed", "7"}
	if code, _, stderr := run(t, append(args, "-o", txt)...); code != ExitOK {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	_, again, _ := run(t, args...)
	if first, _ := os.ReadFile(txt); string(first) != again {
		t.Fatal("gen is not deterministic, or -o and stdout differ")
	}
	if code, _, stderr := run(t, "convert", txt, bin); code != ExitOK {
		t.Fatalf("convert to binary: %d %s", code, stderr)
	}
	if code, _, stderr := run(t, "convert", "--to", "text", bin, back); code != ExitOK {
		t.Fatalf("convert to text: %d %s", code, stderr)
	}
	if first, _ := os.ReadFile(txt); string(first) != readString(t, back) {
		t.Fatal("text -> binary -> text changed the collection")
	}
	code, infoTxt, _ := run(t, "info", txt)
	_, infoBin, _ := run(t, "info", bin)
	if code != ExitOK || !strings.Contains(infoTxt, "sets         50\n") ||
		strings.Replace(infoTxt, txt+" (text)", bin+" (binary)", 1) != infoBin {
		t.Fatalf("info differs between formats:\n%s\n%s", infoTxt, infoBin)
	}
	// A binary file gzip-compressed reads as the binary file (it failed
	// as text: invalid element "\x89XSET").
	binGz := filepath.Join(dir, "g.xsb.gz")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(readString(t, bin)))
	zw.Close()
	if err := os.WriteFile(binGz, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, infoBinGz, stderr := run(t, "info", binGz); code != ExitOK || strings.Replace(infoBin, bin, binGz, 1) != infoBinGz {
		t.Fatalf("info of the binary file gzip-compressed: %d %s\n%s\nwant\n%s", code, stderr, infoBinGz, infoBin)
	}
	// Intersect sets 0 and 1 via --from on both formats and via a plain merge.
	_, viaTxt, _ := run(t, "intersect", "--from", txt, "0", "1")
	_, viaBin, _ := run(t, "intersect", "--from", bin, "0", "1")
	if viaTxt != viaBin {
		t.Fatalf("--from differs: %q vs %q", viaTxt, viaBin)
	}
	lines := strings.Split(readString(t, txt), "\n")
	want := ""
	for _, x := range intersect.Intersect(nil, parseLine(t, lines[0]), parseLine(t, lines[1])) {
		want += strconv.Itoa(int(x)) + "\n"
	}
	if viaTxt != want {
		t.Fatalf("--from 0 1 = %q, want %q", viaTxt, want)
	}
}

func parseLine(t *testing.T, line string) []uint32 {
	var s []uint32
	for _, f := range strings.Fields(line) {
		x, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, uint32(x))
	}
	slices.Sort(s)
	return s
}

func TestInfoRealData(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "data", "retail.dat.gz")
	code, stdout, stderr := run(t, "info", path)
	if code != ExitOK {
		t.Fatalf("info %s: %d %s", path, code, stderr)
	}
	for _, want := range []string{"sets         88162\n", "universe     16470 distinct elements\n", "set size     min 1, avg 10.31, max 76\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("info output lacks %q:\n%s", want, stdout)
		}
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseInterspersed(t *testing.T) {
	cases := []struct {
		args, want []string
		count      bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"a", "--count", "b"}, []string{"a", "b"}, true},
		{[]string{"--count", "--", "-a", "--count"}, []string{"-a", "--count"}, true},
		{[]string{"a", "--", "--count"}, []string{"a", "--count"}, false},
		{[]string{"-", "a"}, []string{"-", "a"}, false},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		count := fs.Bool("count", false, "")
		got, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(got, tc.want) || *count != tc.count {
			t.Errorf("%q: got %q count=%v err=%v; want %q count=%v", tc.args, got, *count, err, tc.want, tc.count)
		}
	}
}
