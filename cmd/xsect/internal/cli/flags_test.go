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

// TestTechniqueAliases: --technique is the flag that picks a technique on
// every command; the old names (--engine, --algorithm, --method, and
// bench's --methods) still work and give the same result, and an old name
// and --technique given different values is bad usage.
func TestTechniqueAliases(t *testing.T) {
	tx := writeFile(t, "tx.dat", "1 2 3\n2 1\n3 1 2 4\n\n2 1\n")
	a := writeFile(t, "a.txt", "1 2 3 5 8\n")
	b := writeFile(t, "b.txt", "2 3 5 7\n")
	// choice is the --explain line that names the technique run.
	choice := func(stderr string) string {
		for line := range strings.Lines(stderr) {
			if strings.HasPrefix(line, "choice ") {
				return line
			}
		}
		return ""
	}
	for _, tc := range []struct {
		args     []string // the command, without the technique
		old, new string   // the flags
		value    string   // a technique, not the default
		explain  bool     // --explain names the technique
	}{
		{[]string{"pairs", "--min-support", "2", "--sort", "--explain", tx}, "--engine", "--technique", "eclat", true},
		{[]string{"simjoin", "--threshold", "0.5", "--sort", "--explain", tx}, "--algorithm", "--technique", "ppjoin", true},
		{[]string{"intersect", a, b}, "--method", "--technique", "merge", false},
		{[]string{"intersect", a, b}, "--method", "--technique", "list", false},
		{[]string{"bench", "pairwise", "--sizes", "1000", "--ratios", "1", "--density", "0.5", "--repeat", "1", "--min-time", "1ms"}, "--methods", "--techniques", "gallop", false},
	} {
		name := tc.args[0] + " " + tc.old
		with := func(flags ...string) []string { return append(append([]string{tc.args[0]}, flags...), tc.args[1:]...) }
		codeNew, stdoutNew, stderrNew := run(t, with(tc.new, tc.value)...)
		codeOld, stdoutOld, stderrOld := run(t, with(tc.old, tc.value)...)
		if codeNew != ExitOK || codeOld != ExitOK {
			t.Errorf("%s: exit %d (%q) with %s, %d (%q) with %s", name, codeNew, firstLine(stderrNew), tc.new, codeOld, firstLine(stderrOld), tc.old)
			continue
		}
		if tc.args[0] == "bench" {
			// Timings differ run to run: the same rows, by method.
			stdoutNew, stdoutOld = benchMethods(stdoutNew), benchMethods(stdoutOld)
		}
		if stdoutNew != stdoutOld || stdoutNew == "" {
			t.Errorf("%s: %s gives %q, %s %q", name, tc.new, stdoutNew, tc.old, stdoutOld)
		}
		if tc.explain && (choice(stderrNew) != choice(stderrOld) || !strings.Contains(choice(stderrOld), " "+tc.value+" on ")) {
			t.Errorf("%s: %s chose %q, %s %q; want %s", name, tc.new, choice(stderrNew), tc.old, choice(stderrOld), tc.value)
		}
		// Both given: the same value is fine, different ones bad usage.
		if code, _, stderr := run(t, with(tc.old, tc.value, tc.new, tc.value)...); code != ExitOK {
			t.Errorf("%s and %s %s: exit %d, %q", tc.old, tc.new, tc.value, code, firstLine(stderr))
		}
		code, stdout, stderr := run(t, with(tc.old, tc.value, tc.new, "auto")...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.old) || !strings.Contains(stderr, tc.new) || !strings.Contains(stderr, "disagree") {
			t.Errorf("%s %s %s auto: exit %d, stdout %q, stderr %q; want exit 2 naming both", tc.old, tc.value, tc.new, code, stdout, firstLine(stderr))
		}
		// A bad name is refused through the old name as through the new.
		codeNew, _, stderrNew = run(t, with(tc.new, "nosuch")...)
		codeOld, _, stderrOld = run(t, with(tc.old, "nosuch")...)
		if codeNew != ExitUsage || codeOld != ExitUsage || firstLine(stderrNew) != firstLine(stderrOld) {
			t.Errorf("%s nosuch: exit %d, %q with %s; %d, %q with %s", name, codeNew, firstLine(stderrNew), tc.new, codeOld, firstLine(stderrOld), tc.old)
		}
	}
	// The help shows --technique and marks the old name.
	for cmd, old := range map[string]string{"pairs": "-engine", "simjoin": "-algorithm", "intersect": "-method", "allpairs": ""} {
		_, stdout, _ := run(t, cmd, "--help")
		if !strings.Contains(stdout, "\n  -technique NAME\n") || old != "" && !strings.Contains(stdout, "\n  "+old+" NAME\n    \tsame as --technique NAME (its old name)\n") {
			t.Errorf("%s --help: no -technique, or %s not marked as its old name:\n%s", cmd, old, stdout)
		}
	}
}

// benchMethods is the first column of xsect bench's rows.
func benchMethods(out string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			b.WriteString(f[0] + "\n")
		}
	}
	return b.String()
}
