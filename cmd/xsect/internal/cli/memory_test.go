package cli

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
)

// manySets writes a collection of 200,000 sets of 3 elements: 3.2 MiB of
// arrays.
func manySets(t *testing.T) string {
	var b strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&b, "%d %d %d\n", i, i+1, i+2)
	}
	return writeFile(t, "many.txt", b.String())
}

// oneLineMemoryError checks a failure for want of memory: exit status 1,
// nothing on standard output, one line on standard error that names the
// budget and ends with what to raise.
func oneLineMemoryError(t *testing.T, args []string, code int, stdout, stderr, budget, advice string) {
	t.Helper()
	if code != ExitFailure || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "budget of "+budget) || !strings.HasSuffix(stderr, ": "+advice+"\n") {
		t.Errorf("%q: exit %d, stdout %d bytes, stderr %q; want exit 1 and one line with the budget %s and %q",
			args, code, len(stdout), stderr, budget, advice)
	}
}

// Every command that allocates in proportion to its input takes --memory
// and stops, before or while reading, with exit status 1 and what to
// raise when the input needs more; with enough, it runs.
func TestMemoryFlag(t *testing.T) {
	many := manySets(t)
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"info", many},
		{"convert", many, out},
		{"intersect", many, many},
		{"intersect", "--from", many, "1", "2"},
		{"allpairs", many, "--count-only"},
		{"allpairs", "--with", many, many, "--count-only"},
		{"containment", many, "--count-only"},
		{"pairs", "--min-support", "2", "--count", many},
		{"gen", "--sets", "100000", "--avg-size", "100"},
		{"pairs", "--gen-items", "1000", "--gen-occurrences", "1000000", "--min-support", "2", "--count"},
	} {
		small := append(slices.Clone(args), "--memory", "1")
		code, stdout, stderr := run(t, small...)
		oneLineMemoryError(t, small, code, stdout, stderr, "1.0 MiB (--memory)", "raise --memory")
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: left %s", small, out)
		}
		if code, _, stderr := run(t, append(slices.Clone(args), "--memory", "256")...); code != ExitOK {
			t.Errorf("%q with 256 MiB: exit %d, stderr %q", args, code, stderr)
		}
		os.Remove(out)
		for _, bad := range []string{"-1", "1073741825", "x"} {
			if code, stdout, _ := run(t, append(slices.Clone(args), "--memory", bad)...); code != ExitUsage || stdout != "" {
				t.Errorf("%q --memory %s: exit %d, want %d", args, bad, code, ExitUsage)
			}
		}
	}
}

// GOMEMLIMIT bounds the budget (to half of it), and the error says to
// raise it; --memory may lower the budget further, not raise it past.
func TestGOMEMLIMIT(t *testing.T) {
	many := manySets(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(4 << 20))
	code, stdout, stderr := run(t, "info", many)
	oneLineMemoryError(t, []string{"info"}, code, stdout, stderr, "2.0 MiB (half GOMEMLIMIT)", "raise GOMEMLIMIT")
	code, stdout, stderr = run(t, "info", many, "--memory", "1024")
	oneLineMemoryError(t, []string{"info", "--memory", "1024"}, code, stdout, stderr, "2.0 MiB (half GOMEMLIMIT)", "raise GOMEMLIMIT")
	code, stdout, stderr = run(t, "info", many, "--memory", "1")
	oneLineMemoryError(t, []string{"info", "--memory", "1"}, code, stdout, stderr, "1.0 MiB (--memory)", "raise --memory")
	if got := debug.SetMemoryLimit(-1); got != 4<<20 {
		t.Errorf("the command left the runtime's memory limit at %d", got)
	}
}

// When no engine can run a problem, the exit status says whose the
// problem is, alike in allpairs and pairs: more memory would let one run
// (1, "raise --memory"); the machine lacks the device asked for (1); the
// technique asked for does not apply to the input (2, bad usage).
func TestCannotRunExitStatus(t *testing.T) {
	var b strings.Builder
	for i := range 256 {
		for x := range 4096 {
			b.WriteString(strconv.Itoa(i*4096+x) + " ")
		}
		b.WriteString("\n")
	}
	big := writeFile(t, "big.txt", b.String())
	small := writeFile(t, "small.txt", "1 2 3\n2 3\n3 4 5\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"allpairs", big, "--technique", "mm", "--memory", "16"}, ExitFailure, ": raise --memory\n"},
		{[]string{"allpairs", big, "--technique", "bitmap", "--device", "cpu", "--memory", "16"}, ExitFailure, ": raise --memory\n"},
		{[]string{"pairs", big, "--min-support", "1", "--engine", "bitmap", "--device", "cpu", "--memory", "16"}, ExitFailure, ": raise --memory\n"},
		{[]string{"allpairs", small, "--with", small, "--technique", "batmap"}, ExitUsage, "compares a collection with itself only"},
		{[]string{"allpairs", small, "--technique", "prefix", "--min-overlap", "0"}, ExitUsage, "cannot run"},
	} {
		code, stdout, stderr := run(t, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "Usage:") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if gpurt.Available() == nil {
		return // the machine has a GPU
	}
	for _, args := range [][]string{
		{"allpairs", small, "--device", "gpu"},
		{"pairs", small, "--min-support", "1", "--device", "gpu"},
	} {
		if code, stdout, stderr := run(t, args...); code != ExitFailure || stdout != "" || !strings.Contains(stderr, "cannot run") {
			t.Errorf("%q without a GPU: exit %d, stderr %q; want exit 1", args, code, stderr)
		}
	}
}

// Sorted output is the unsorted output sorted, when the pairs go through
// runs in memory and through runs in a file (a small --memory), for
// allpairs, containment and pairs; the runs' directory under $TMPDIR is
// gone afterwards.
func TestSortedOutput(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := rand.New(rand.NewPCG(31, 32))
	var b strings.Builder
	for range 2500 {
		// Element 0 in most sets: millions of pairs.
		if r.IntN(10) > 0 {
			b.WriteString("0 ")
		}
		for range r.IntN(6) {
			fmt.Fprintf(&b, "%d ", 1+r.IntN(300))
		}
		b.WriteString("\n")
	}
	c := writeFile(t, "c.txt", b.String())
	for _, args := range [][]string{
		{"allpairs", c},
		{"allpairs", c, "--min-overlap", "2"},
		{"containment", c, "--min-degree", "0.5"},
		{"pairs", c, "--min-support", "1"},
	} {
		code, unsorted, stderr := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%q: exit %d, %s", args, code, stderr)
		}
		want := sortLines(unsorted)
		for _, memory := range []string{"0", "8"} {
			sorted := append(slices.Clone(args), "--sort", "--memory", memory)
			code, got, stderr := run(t, sorted...)
			if code != ExitOK || got != want {
				t.Errorf("%q: exit %d, %d bytes (%s); want the %d bytes of the unsorted output, sorted", sorted, code, len(got), stderr, len(want))
			}
		}
		if names := entries(t, tmp); len(names) != 0 {
			t.Fatalf("%q: left %q in TMPDIR", args, names)
		}
	}
}

// sortLines sorts the lines "i<TAB>j<TAB>..." of text by i, then j.
func sortLines(text string) string {
	type line struct {
		i, j uint64
		s    string
	}
	var lines []line
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		i, _ := strconv.ParseUint(f[0], 10, 32)
		j, _ := strconv.ParseUint(f[1], 10, 32)
		lines = append(lines, line{i, j, sc.Text()})
	}
	slices.SortFunc(lines, func(a, b line) int {
		if a.i != b.i {
			return int(int64(a.i) - int64(b.i))
		}
		return int(int64(a.j) - int64(b.j))
	})
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(l.s + "\n")
	}
	return out.String()
}
