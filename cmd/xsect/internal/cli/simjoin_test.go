package cli

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/settest"
)

func TestSimJoinCommand(t *testing.T) {
	// Sets: 0 {1 2 3}, 1 {1 2 3 4}, 2 {} (empty), 3 {5 6}, 4 {1 2 3},
	// 5 {1 2 3 4 5 6 7 8}.
	a := writeFile(t, "a.txt", "3 2 1\n1 2 3 4\n\n5 6\n1 2 3\n1 2 3 4 5 6 7 8\n")
	b := writeFile(t, "b.txt", "1 2\n5 6 7\n4 3 2 1\n")
	cases := []struct {
		args []string
		want string // sorted lines, or the exact output with --sort/--count-only
	}{
		{[]string{"simjoin", a, "--threshold", "0.75"}, "0\t1\t0.750000\n0\t4\t1.00000\n1\t4\t0.750000\n"},
		{[]string{"simjoin", a, "--threshold", "0.75", "--sort", "--distinct"}, "0\t1\t0.750000\n"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--sort"}, "0\t1\t0.750000\n0\t4\t1.00000\n1\t4\t0.750000\n1\t5\t0.500000\n"},
		{[]string{"simjoin", a, "--threshold", "1/2", "--count-only"}, "4\n"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--count-only", "--distinct"}, "2\n"},
		{[]string{"simjoin", a, "--measure", "cosine", "--threshold", "0.5", "--sort"},
			"0\t1\t0.8660254037844387\n0\t4\t1.00000\n0\t5\t0.6123724356957946\n1\t4\t0.8660254037844387\n1\t5\t0.7071067811865475\n3\t5\t0.500000\n4\t5\t0.6123724356957946\n"},
		{[]string{"simjoin", a, "--measure", "dice", "--threshold", "0.8", "--sort"}, "0\t1\t0.8571428571428571\n0\t4\t1.00000\n1\t4\t0.8571428571428571\n"},
		{[]string{"simjoin", a, "--measure", "overlap", "--threshold", "3", "--sort"}, "0\t1\t3\n0\t4\t3\n0\t5\t3\n1\t4\t3\n1\t5\t4\n4\t5\t3\n"},
		{[]string{"simjoin", a, "--with", b, "--threshold", "2/3", "--sort"}, "0\t0\t0.6666666666666666\n0\t2\t0.750000\n1\t2\t1.00000\n3\t1\t0.6666666666666666\n4\t0\t0.6666666666666666\n4\t2\t0.750000\n"},
		{[]string{"simjoin", a, "--with", b, "--threshold", "0.7", "--count-only", "--distinct"}, "2\n"},
	}
	for _, tc := range cases {
		for _, alg := range []string{"auto", "allpairs", "ppjoin", "groupjoin", "pairjoin"} {
			args := append(slices.Clone(tc.args), "--algorithm", alg, "--threads", "2")
			code, stdout, stderr := run(t, args...)
			if code != ExitOK {
				t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
			}
			sorted := slices.Contains(tc.args, "--sort") || slices.Contains(tc.args, "--count-only")
			if sorted && stdout != tc.want || !sorted && !slices.Equal(sortedLines(stdout), sortedLines(tc.want)) {
				t.Errorf("%v:\ngot  %q\nwant %q", args, stdout, tc.want)
			}
		}
	}
	// -o writes the same lines.
	out := writeFile(t, "out.txt", "")
	if code, _, stderr := run(t, "simjoin", a, "--threshold", "0.75", "--sort", "-o", out); code != ExitOK {
		t.Fatalf("-o: exit %d, %s", code, stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != "0\t1\t0.750000\n0\t4\t1.00000\n1\t4\t0.750000\n" {
		t.Errorf("-o wrote %q", got)
	}
}

// TestSimJoinAtThreshold: two 19-element sets sharing 18 are exactly at
// Jaccard 0.9, sizes 31 and 32 sharing 28 exactly at 0.8.
func TestSimJoinAtThreshold(t *testing.T) {
	line := func(lo, hi int) string {
		var b strings.Builder
		for v := lo; v < hi; v++ {
			b.WriteString(strconv.Itoa(v) + " ")
		}
		return b.String() + "\n"
	}
	a := writeFile(t, "a.txt", line(0, 19)+line(1, 20))
	code, stdout, stderr := run(t, "simjoin", a, "--threshold", "0.9")
	if code != ExitOK || stdout != "0\t1\t0.900000\n" {
		t.Errorf("Jaccard 0.9: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b := writeFile(t, "b.txt", line(0, 31)+line(3, 35))
	code, stdout, stderr = run(t, "simjoin", b, "--threshold", "0.8")
	if code != ExitOK || stdout != "0\t1\t0.800000\n" {
		t.Errorf("Jaccard 0.8: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestSimJoinErrors(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"simjoin", a}, ExitUsage, "--threshold is required"},
		{[]string{"simjoin", "--threshold", "0.5"}, ExitUsage, "want one FILE"},
		{[]string{"simjoin", a, a, "--threshold", "0.5"}, ExitUsage, "want one FILE"},
		{[]string{"simjoin", a, "--threshold", "1.5"}, ExitUsage, "above 1"},
		{[]string{"simjoin", a, "--threshold", "0"}, ExitUsage, "not positive"},
		{[]string{"simjoin", a, "--threshold", "x"}, ExitUsage, "not a decimal"},
		{[]string{"simjoin", a, "--threshold", "0.1234567891"}, ExitUsage, "too many digits"},
		{[]string{"simjoin", a, "--measure", "overlap", "--threshold", "0.5"}, ExitUsage, "not an integer"},
		{[]string{"simjoin", a, "--measure", "hamming", "--threshold", "1"}, ExitUsage, "unknown measure"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--algorithm", "frob"}, ExitUsage, "unknown technique"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--device", "tpu"}, ExitUsage, "unknown device"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--gpu-kernel", "warp"}, ExitUsage, "--gpu-kernel"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--with", "/nonexistent/file"}, ExitUsage, "no such file"},
	}
	for _, tc := range cases {
		code, stdout, stderr := run(t, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, stdout, firstLine(stderr), tc.code, tc.msg)
		}
	}
	// Without a GPU, --device gpu is a failure that says why, not bad
	// usage.
	if gpurt.Available() != nil {
		for _, args := range [][]string{
			{"simjoin", a, "--threshold", "0.5", "--device", "gpu"},
			{"simjoin", a, "--threshold", "0.5", "--device", "gpu", "--algorithm", "ppjoin"},
		} {
			if code, stdout, stderr := run(t, args...); code != ExitFailure || stdout != "" || !strings.Contains(stderr, "cannot run") {
				t.Errorf("%v without a GPU: exit %d, stdout %q, stderr %q; want exit 1 with %q", args, code, stdout, firstLine(stderr), "cannot run")
			}
		}
	}
}

func TestSimJoinExplain(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n3 4\n1 2 3\n")
	code, stdout, stderr := run(t, "simjoin", a, "--threshold", "2/3", "--explain", "--count-only")
	if code != ExitOK || stdout != "3\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, want := range []string{"jaccard >= 2/3", "distinct records", "allpairs", "ppjoin", "groupjoin", "choice", "ran"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--explain lacks %q:\n%s", want, stderr)
		}
	}
	checkPhases(t, stderr, "read", "preparation", "run", "output")
}

// TestSimJoinRealData: BMS2 with --distinct at Jaccard 0.7 has the 7773
// pairs that Mann et al.'s code finds (../shared/NOTES.md), whichever the
// algorithm.
func TestSimJoinRealData(t *testing.T) {
	path := settest.SharedData(t, "fimi", "BMS2.dat")
	for _, alg := range []string{"auto", "allpairs", "ppjoin", "groupjoin", "pairjoin"} {
		code, stdout, stderr := run(t, "simjoin", path, "--threshold", "0.7", "--distinct", "--count-only", "--algorithm", alg)
		if code != ExitOK || stdout != "7773\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 7773", alg, code, stdout, stderr)
		}
	}
}
