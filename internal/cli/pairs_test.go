package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/pairs"
)

func TestPairs(t *testing.T) {
	// Items 1 and 2 together 3 times, 1 and 3 twice, 2 and 3 twice; 4
	// appears once.
	tx := writeFile(t, "tx.dat", "1 2 3\n2 1\n3 1 2 4\n\n2 1\n")
	want := "1\t2\t4\n1\t3\t2\n2\t3\t2\n"
	for _, e := range append([]string{"auto"}, pairs.EngineNames()...) {
		code, stdout, stderr := run(t, "pairs", "--min-support", "2", "--engine", e, "--sort", tx)
		if code != ExitOK || stdout != want {
			t.Errorf("engine %s: code %d, stdout %q, stderr %q; want %q", e, code, stdout, stderr, want)
		}
		// Unsorted: the same lines in some order.
		code, stdout, _ = run(t, "pairs", "--min-support", "2", "--engine", e, tx)
		lines := strings.SplitAfter(stdout, "\n")
		slices.Sort(lines)
		if code != ExitOK || strings.Join(lines, "") != want {
			t.Errorf("engine %s unsorted: code %d, stdout %q", e, code, stdout)
		}
	}
	// 0.6 of 5 transactions is 3: only the pair (1, 2).
	if code, stdout, _ := run(t, "pairs", "--min-support", "0.6", tx); code != ExitOK || stdout != "1\t2\t4\n" {
		t.Errorf("fractional support: code %d, stdout %q", code, stdout)
	}
	if code, stdout, _ := run(t, "pairs", "--min-support", "60%", "--count", tx); code != ExitOK || stdout != "1\n" {
		t.Errorf("--count: code %d, stdout %q", code, stdout)
	}
	code, stdout, stderr := run(t, "pairs", "--min-support", "2", "--explain", tx)
	if code != ExitOK || stdout == "" || !strings.Contains(stderr, "chosen:") {
		t.Errorf("--explain: code %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{
		{"pairs", tx},
		{"pairs", "--min-support", "0", tx},
		{"pairs", "--min-support", "x", tx},
		{"pairs", "--min-support", "1.5", tx},
		{"pairs", "--min-support", "2", "--engine", "nope", tx},
		{"pairs", "--min-support", "2", "--device", "tpu", tx},
		{"pairs", "--min-support", "2"},
		{"pairs", "--min-support", "2", tx, tx},
		{"pairs", "--min-support", "2", filepath.Join(t.TempDir(), "missing")},
		{"pairs", "--min-support", "2", writeFile(t, "bad.dat", "1 2 x\n")},
		{"pairs", "--min-support", "2", "--gen-items", "10", tx},
		{"pairs", "--gen-items", "10", "--gen-p", "2", "--min-support", "2"},
	} {
		if code, stdout, _ := run(t, args...); code != ExitUsage || stdout != "" {
			t.Errorf("%q: code %d, stdout %q; want %d and no output", args, code, stdout, ExitUsage)
		}
	}
	// No GPU engine: a failure, not bad usage.
	if code, stdout, _ := run(t, "pairs", "--min-support", "2", "--device", "gpu", tx); code != ExitFailure || stdout != "" {
		t.Errorf("--device gpu: code %d, stdout %q", code, stdout)
	}
}

func TestPairsGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gen.dat")
	if code, _, stderr := run(t, "pairs", "--gen-items", "50", "--gen-p", "0.2", "--gen-occurrences", "2000", "--gen-out", out); code != ExitOK {
		t.Fatalf("--gen-out: code %d, stderr %q", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n < 150 || n > 250 {
		t.Fatalf("%d transactions, want about 2000/(50·0.2) = 200", n)
	}
	// Mining the file and the generated instance directly agree.
	_, fromFile, _ := run(t, "pairs", "--min-support", "12", "--sort", out)
	code, direct, stderr := run(t, "pairs", "--min-support", "12", "--sort", "--gen-items", "50", "--gen-p", "0.2", "--gen-occurrences", "2000")
	if code != ExitOK || direct != fromFile || direct == "" {
		t.Fatalf("generated instance: code %d, stderr %q; %d bytes direct, %d from the file", code, stderr, len(direct), len(fromFile))
	}
}
