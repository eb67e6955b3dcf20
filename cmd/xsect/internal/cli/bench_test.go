package cli

import (
	"strings"
	"testing"

	"github.com/xsect/xsect/intersect"
)

func TestBench(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "pairwise", "--sizes", "2K,3e3", "--ratios", "1,100",
		"--selectivity", "0,1", "--density", "0.5", "--repeat", "1", "--min-time", "1ms", "--op", "intersect")
	if code != ExitOK {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	methods := 1 + len(intersect.Methods())
	if len(lines) != 1+8*methods || !strings.HasPrefix(lines[0], "shape") {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 1+8*methods, stdout)
	}
	for _, want := range []string{"2K:2K sel=0 dens=0.5", "3K:30 sel=1 dens=0.5", " auto ", " merge "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}

	code, stdout, stderr = run(t, "bench", "pairwise", "--sizes", "1000", "--ratios", "1", "--methods", "merge, gallop",
		"--repeat", "1", "--min-time", "1ms")
	if code != ExitOK || strings.Count(stdout, "\n") != 1+2*2 || !strings.Contains(stdout, "gallop") {
		t.Errorf("two methods: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	for _, args := range [][]string{
		{"bench"},
		{"bench", "frobnicate"},
		{"bench", "pairwise", "extra"},
		{"bench", "pairwise", "--sizes", "0"},
		{"bench", "pairwise", "--sizes", "1e6x"},
		{"bench", "pairwise", "--ratios", "1.5"},
		{"bench", "pairwise", "--selectivity", "2"},
		{"bench", "pairwise", "--density", "0"},
		{"bench", "pairwise", "--density", "1", "--selectivity", "0", "--ratios", "1"},
		{"bench", "pairwise", "--sizes", "1e9", "--density", "0.01"},
		{"bench", "pairwise", "--methods", "nosuch"},
		{"bench", "pairwise", "--op", "union"},
		{"bench", "pairwise", "--repeat", "0"},
		{"bench", "pairwise", "--min-time", "0s"},
	} {
		if code, stdout, stderr := run(t, args...); code != ExitUsage || stdout != "" || stderr == "" {
			t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
