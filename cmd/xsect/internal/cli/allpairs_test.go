package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/settest"
)

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(l) == 1 && l[0] == "" {
		return nil
	}
	slices.Sort(l)
	return l
}

func TestAllPairsCommand(t *testing.T) {
	// Sets: 0 {1 2 3}, 1 {2 3 4}, 2 {} (empty), 3 {1 2 3}, 4 {9}, 5 {1}.
	a := writeFile(t, "a.txt", "3 2 1\n2 3 4\n\n1 2 3 3\n9\n1\n")
	b := writeFile(t, "b.txt", "1 2\n4 9\n")
	cases := []struct {
		args []string
		want string // sorted lines, or the exact output with --sort/--count-only
	}{
		{[]string{"allpairs", a}, "0\t1\t2\n0\t3\t3\n0\t5\t1\n1\t3\t2\n3\t5\t1\n"},
		{[]string{"allpairs", a, "--min-overlap", "2", "--sort"}, "0\t1\t2\n0\t3\t3\n1\t3\t2\n"},
		{[]string{"allpairs", a, "--count-only"}, "5\n"},
		{[]string{"allpairs", a, "--min-overlap", "0", "--count-only"}, "15\n"},
		{[]string{"allpairs", a, "--with", b, "--sort"}, "0\t0\t2\n1\t0\t1\n1\t1\t1\n3\t0\t2\n4\t1\t1\n5\t0\t1\n"},
		{[]string{"allpairs", "--largest", "2", a, "--sort"}, "0\t1\t2\n"},
		{[]string{"allpairs", a, "--technique", "mm", "--threads", "1", "--sort", "--min-overlap", "3"}, "0\t3\t3\n"},
		{[]string{"containment", a, "--sort"}, "0\t3\t1.00000\n0\t5\t1.00000\n3\t5\t1.00000\n"},
		{[]string{"containment", a, "--min-degree", "2/3", "--sort"}, "0\t1\t0.6666666666666666\n0\t3\t1.00000\n0\t5\t1.00000\n1\t3\t0.6666666666666666\n3\t5\t1.00000\n"},
		{[]string{"containment", a, "--min-degree", "0", "--count-only"}, "10\n"},
		{[]string{"containment", a, "--with", b, "--sort"}, "0\t0\t1.00000\n3\t0\t1.00000\n4\t1\t1.00000\n5\t0\t1.00000\n"},
	}
	for _, tc := range cases {
		code, stdout, stderr := run(t, tc.args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
		sorted := slices.Contains(tc.args, "--sort") || slices.Contains(tc.args, "--count-only")
		if sorted && stdout != tc.want || !sorted && !slices.Equal(sortedLines(stdout), sortedLines(tc.want)) {
			t.Errorf("%v:\ngot  %q\nwant %q", tc.args, stdout, tc.want)
		}
	}
	// Every technique gives the same lines.
	_, want, _ := run(t, "allpairs", a, "--sort", "--min-overlap", "1")
	for _, tech := range []string{"scancount", "merge", "bitmap", "bitmap-dynamic", "mm", "mmjoin", "prefix"} {
		code, got, stderr := run(t, "allpairs", a, "--sort", "--technique", tech)
		if code != ExitOK || got != want {
			t.Errorf("--technique %s: exit %d %q, got %q, want %q", tech, code, stderr, got, want)
		}
	}
}

func TestAllPairsErrors(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"allpairs"}, ExitUsage, "want one FILE"},
		{[]string{"allpairs", a, a}, ExitUsage, "want one FILE"},
		{[]string{"allpairs", a, "--min-overlap", "-1"}, ExitUsage, "negative"},
		{[]string{"allpairs", a, "--technique", "frob"}, ExitUsage, "unknown technique"},
		{[]string{"allpairs", a, "--device", "tpu"}, ExitUsage, "unknown device"},
		{[]string{"allpairs", a, "--min-overlap", "0", "--technique", "prefix"}, ExitUsage, "needs a threshold"},
		{[]string{"containment", a, "--min-degree", "x"}, ExitUsage, "not a number"},
		{[]string{"containment", a, "--min-degree", "-1"}, ExitUsage, "not in [0, 1]"},
		{[]string{"containment", a, "--min-degree", "1.5"}, ExitUsage, "not in [0, 1]"},
		{[]string{"allpairs", a, "--with", "/nonexistent/file"}, ExitUsage, "no such file"},
	}
	for _, tc := range cases {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
	// A bit matrix that cannot fit the budget is refused with the reason
	// and what to raise: a failure, not bad usage. The collection (4 MiB)
	// fits; bitmaps of its 256 sets over 2^20 elements (32 MiB) do not.
	var b strings.Builder
	for i := 0; i < 256; i++ {
		for x := 0; x < 4096; x++ {
			b.WriteString(strconv.Itoa(i*4096+x) + " ")
		}
		b.WriteString("\n")
	}
	big := writeFile(t, "big.txt", b.String())
	code, stdout, stderr := run(t, "allpairs", big, "--technique", "mm", "--device", "cpu", "--memory", "16")
	if code != ExitFailure || stdout != "" || !strings.Contains(stderr, "cannot run") || !strings.Contains(stderr, "MiB") ||
		!strings.HasSuffix(stderr, ": raise --memory\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("mm over budget: exit %d, stderr %q; want exit 1, one line, raise --memory", code, stderr)
	}
	// With the budget it needs, it runs.
	if code, _, stderr := run(t, "allpairs", big, "--technique", "mm", "--device", "cpu", "--memory", "64", "--count-only"); code != ExitOK {
		t.Errorf("mm within budget: exit %d, stderr %q", code, stderr)
	}
}

func TestAllPairsExplain(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n3 4\n")
	code, stdout, stderr := run(t, "allpairs", a, "--explain", "--count-only")
	if code != ExitOK || stdout != "3\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"universe", "scancount", "choice", "ran"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--explain lacks %q:\n%s", want, stderr)
		}
	}
	checkPhases(t, stderr, "read", "preparation", "run", "output")
}

// checkPhases checks that an --explain ends with the account of the
// process by phase, these phases in this order, then the process line.
func checkPhases(t *testing.T, stderr string, phases ...string) {
	t.Helper()
	at := strings.Index(stderr, "\nphase ")
	if at < 0 {
		t.Fatalf("--explain has no account by phase:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr[at+1:], "\n"), "\n")
	var got []string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); strings.HasPrefix(l, "  ") && len(f) > 0 && f[0] != "gpu" && f[0] != "exit" {
			got = append(got, f[0])
		}
	}
	if strings.Join(got, " ") != strings.Join(phases, " ") || !strings.HasPrefix(lines[len(lines)-1], "process ") {
		t.Errorf("phases %q, want %q, then the process line:\n%s", got, phases, stderr[at+1:])
	}
}

func TestAllPairsRealData(t *testing.T) {
	path := settest.SharedData(t, "fimi", "retail.dat")
	code, stdout, stderr := run(t, "containment", path, "--largest", "3000", "--count-only", "--min-degree", "0.5")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	n, err := strconv.Atoi(strings.TrimSpace(stdout))
	if err != nil || n == 0 {
		t.Fatalf("count %q", stdout)
	}
	_, forced, _ := run(t, "containment", path, "--largest", "3000", "--count-only", "--min-degree", "0.5", "--technique", "scancount")
	if forced != stdout {
		t.Errorf("scancount counts %q, planner %q", forced, stdout)
	}
}

// TestAllPairsMappedInput checks a binary input, which allpairs maps in
// place: the same lines as the text it came from, from --with too, and a
// damaged file named in a bad-input error.
func TestAllPairsMappedInput(t *testing.T) {
	a := writeFile(t, "a.txt", "3 2 1\n2 3 4\n\n1 2 3 3\n9\n1\n")
	bin := filepath.Join(t.TempDir(), "a.xsb")
	if code, _, stderr := run(t, "convert", a, bin); code != ExitOK {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"--sort"}, {"--with", a, "--sort"}, {"--count-only"}} {
		_, want, _ := run(t, append([]string{"allpairs", a}, args...)...)
		code, got, stderr := run(t, append([]string{"allpairs", bin}, args...)...)
		if code != ExitOK || got != want {
			t.Errorf("%v from the binary file: exit %d %q, got %q, want %q", args, code, stderr, got, want)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff // the last element: the checksum no longer matches
	bad := filepath.Join(t.TempDir(), "bad.xsb")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "allpairs", bad, "--count-only")
	if code != ExitUsage || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "checksum") {
		t.Errorf("a damaged binary file: exit %d, stderr %q; want exit %d naming the file and its checksum", code, stderr, ExitUsage)
	}
}
