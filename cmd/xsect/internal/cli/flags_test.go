package cli

import (
	"strings"
	"testing"
)

// TestFlagChecks: values that make no sense are bad usage in every command
// alike (exit 2, the flag named, nothing on standard output), before any
// input is read; the limits themselves are accepted.
func TestFlagChecks(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n3 4\n")
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"containment", a, "--min-degree", "1.5"}, `threshold "1.5" is not in [0, 1]`},
		{[]string{"containment", a, "--min-degree", "3/2"}, "not in [0, 1]"},
		{[]string{"containment", a, "--min-degree", "-1/2"}, "not in [0, 1]"},
		{[]string{"allpairs", a, "--threads", "-3"}, "--threads -3"},
		{[]string{"allpairs", a, "--threads", "5000"}, "--threads 5000"},
		{[]string{"containment", a, "--threads", "-1"}, "--threads -1"},
		{[]string{"pairs", "--min-support", "1", "--threads", "-3", a}, "--threads -3"},
		{[]string{"pairs", "--min-support", "1", "--threads", "1000000000", a}, "--threads 1000000000"},
		{[]string{"allpairs", a, "--largest", "-1"}, "--largest -1"},
		{[]string{"allpairs", a, "--min-overlap", "-1"}, "--min-overlap -1"},
		{[]string{"allpairs", a, "--memory", "-1"}, "--memory -1"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--threads", "-1"}, "--threads -1"},
		{[]string{"simjoin", a, "--threshold", "0.5", "--memory", "-1"}, "--memory -1"},
		{[]string{"gen", "--sets", "-1"}, "--sets -1"},
		{[]string{"gen", "--avg-size", "-1"}, "--avg-size -1"},
		{[]string{"gen", "--universe", "0"}, "--universe 0"},
		{[]string{"gen", "--universe", "4294967297"}, "--universe 4294967297"},
		{[]string{"gen", "--universe", "-1"}, "-universe"},
		{[]string{"gen", "--universe", "100", "--avg-size", "101"}, "--avg-size 101 exceeds --universe 100"},
		{[]string{"gen", "--size-spread", "-0.5"}, "--size-spread -0.5"},
		{[]string{"gen", "--size-spread", "1.5"}, "--size-spread 1.5"},
		{[]string{"gen", "--size-spread", "NaN"}, "--size-spread NaN"},
		{[]string{"gen", "--zipf-s", "0"}, "--zipf-s 0"},
		{[]string{"gen", "--zipf-s", "-1"}, "--zipf-s -1"},
		{[]string{"gen", "--zipf-s", "+Inf"}, "--zipf-s +Inf"},
		{[]string{"gen", "--sigma", "0"}, "--sigma 0"},
		{[]string{"gen", "--sigma", "11"}, "--sigma 11"},
		{[]string{"gen", "--sigma", "NaN"}, "--sigma NaN"},
		{[]string{"pairs", "--gen-items", "-5", "--min-support", "1"}, "-5 items"},
		{[]string{"pairs", "--gen-items", "10", "--gen-p", "0", "--min-support", "1"}, "probability 0"},
		{[]string{"pairs", "--gen-items", "10", "--gen-occurrences", "-1", "--min-support", "1"}, "--gen-occurrences -1"},
		{[]string{"pairs", "--gen-items", "10", "--gen-occurrences", "1.5", "--min-support", "1"}, "--gen-occurrences 1.5"},
		{[]string{"pairs", "--gen-items", "10", "--gen-out", "x", "-o", "y"}, "-o"},
		{[]string{"bench", "pairwise", "--repeat", "0"}, "--repeat"},
		{[]string{"bench", "pairwise", "--min-time", "-1s"}, "--min-time"},
		{[]string{"intersect", "--from", a, "--", "-1"}, "set id \"-1\""},
	}
	for _, tc := range bad {
		code, stdout, stderr := run(t, tc.args...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, firstLine(stderr), tc.want)
		}
	}
	for _, args := range [][]string{
		{"containment", a, "--min-degree", "1", "--count-only"},
		{"containment", a, "--min-degree", "0", "--count-only"},
		{"allpairs", a, "--threads", "0", "--count-only"},
		{"allpairs", a, "--threads", "1", "--count-only"},
		{"simjoin", a, "--threshold", "1", "--threads", "4096", "--count-only"},
		{"pairs", "--min-support", "1", "--threads", "1", a},
		{"gen", "--sets", "0"},
		{"gen", "--universe", "4294967296", "--sets", "2", "--avg-size", "3"},
		{"gen", "--size-spread", "0", "--sets", "2"},
		{"gen", "--size-spread", "1", "--sets", "2"},
	} {
		if code, _, stderr := run(t, args...); code != ExitOK {
			t.Errorf("%q: exit %d, %s", args, code, firstLine(stderr))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestCannotRunReasons: when no engine can run a join, the error says why
// for each, without --explain.
func TestCannotRunReasons(t *testing.T) {
	a := writeFile(t, "a.txt", "1 2 3\n2 3\n")
	b := writeFile(t, "b.txt", "2 3\n")
	code, stdout, stderr := run(t, "allpairs", a, "--with", b, "--technique", "batmap")
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "no engine can run this problem") ||
		!strings.Contains(stderr, "batmap on cpu") || !strings.Contains(stderr, "batmap on gpu") || !strings.Contains(stderr, "itself only") {
		t.Errorf("batmap on two collections: exit %d, stderr %q", code, stderr)
	}
}
