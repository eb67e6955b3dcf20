package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/pairs"
)

func TestPairs(t *testing.T) {
	// Items 1 and 2 together 3 times, 1 and 3 twice, 2 and 3 twice; 4
	// appears once.
	tx := writeFile(t, "tx.dat", "1 2 3\n2 1\n3 1 2 4\n\n2 1\n")
	want := "1\t2\t4\n1\t3\t2\n2\t3\t2\n"
	for _, e := range append([]string{"auto"}, pairs.Techniques()...) {
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
	if code != ExitOK || stdout == "" || !strings.Contains(stderr, "\nchoice       ") {
		t.Errorf("--explain: code %d, stderr %q", code, stderr)
	}
	checkPhases(t, stderr, "read", "preparation", "run")
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
	// The GPU engine where there is a GPU; elsewhere a failure, not bad
	// usage.
	code, stdout, stderr = run(t, "pairs", "--min-support", "2", "--device", "gpu", "--sort", tx)
	if gpurt.Available() == nil {
		if code != ExitOK || stdout != want {
			t.Errorf("--device gpu: code %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	} else if code != ExitFailure || stdout != "" {
		t.Errorf("--device gpu without a GPU: code %d, stdout %q", code, stdout)
	}
	// --explain says why a plan that cannot run cannot.
	if gpurt.Available() != nil {
		code, _, stderr = run(t, "pairs", "--min-support", "2", "--device", "gpu", "--explain", tx)
		if code != ExitFailure || !strings.Contains(stderr, "cannot run") || !strings.Contains(stderr, "choice       none: ") {
			t.Errorf("--device gpu --explain without a GPU: code %d, stderr %q", code, stderr)
		}
	}
}

// TestPairsFileOutput checks the output streamed to a file, the count,
// and --timings, on every device.
func TestPairsFileOutput(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.dat")
	if code, _, stderr := run(t, "pairs", "--gen-items", "300", "--gen-p", "0.1", "--gen-occurrences", "30000", "--gen-out", gen); code != ExitOK {
		t.Fatalf("--gen-out: code %d, stderr %q", code, stderr)
	}
	code, want, stderr := run(t, "pairs", "--min-support", "15", "--device", "cpu", "--engine", "apriori", gen)
	if code != ExitOK || want == "" {
		t.Fatalf("apriori: code %d, stderr %q", code, stderr)
	}
	wantLines := strings.SplitAfter(want, "\n")
	slices.Sort(wantLines)
	want = strings.Join(wantLines, "")
	devices := []string{"cpu", "auto"}
	if gpurt.Available() == nil {
		devices = append(devices, "gpu")
	}
	for _, dev := range devices {
		for _, e := range []string{"batmap", "bitmap", "auto"} {
			if e == "bitmap" && dev == "gpu" {
				continue
			}
			out := filepath.Join(dir, "pairs.txt")
			code, stdout, stderr := run(t, "pairs", "--min-support", "15", "--device", dev, "--engine", e, "--timings", "-o", out, gen)
			if code != ExitOK || stdout != "" || !strings.Contains(stderr, "timings: read") {
				t.Fatalf("%s/%s: code %d, stdout %q, stderr %q", dev, e, code, stdout, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(data), "\n")
			slices.Sort(lines)
			got := strings.Join(lines, "")
			if got != want {
				t.Fatalf("%s/%s: %d bytes written, want %d", dev, e, len(got), len(want))
			}
			code, stdout, _ = run(t, "pairs", "--min-support", "15", "--device", dev, "--engine", e, "--count", gen)
			if wantN := strings.Count(want, "\n"); code != ExitOK || stdout != fmt.Sprintf("%d\n", wantN) {
				t.Fatalf("%s/%s --count: %q, want %d", dev, e, stdout, wantN)
			}
		}
	}
	// A run that fails leaves no file behind.
	out := filepath.Join(dir, "none.txt")
	if code, _, _ := run(t, "pairs", "--min-support", "15", "--engine", "nope", "-o", out, gen); code == ExitOK {
		t.Fatal("unknown engine accepted")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("failed run left %s: %v", out, err)
	}
	// An output that cannot be created is named as the user gave it, not
	// by the temporary name it is written under.
	missing := filepath.Join(dir, "no-such-dir", "pairs.txt")
	code, _, stderr = run(t, "pairs", "--min-support", "15", "-o", missing, gen)
	if code == ExitOK || !strings.Contains(stderr, "creating "+missing) || strings.Contains(stderr, ".tmp") {
		t.Fatalf("output in a missing directory: exit %d, %q", code, stderr)
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

// TestStreamOut writes batches from several goroutines at once, enough
// for many chunks, and checks that the file holds every line once; and
// that a failed write is reported and leaves no file.
func TestStreamOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	w, err := openOutput(&Env{}, path)
	if err != nil {
		t.Fatal(err)
	}
	o := newStreamOut(w, 4, pairs.AppendLines)
	const workers, batches, batch = 8, 40, 4096
	var want []string
	for w := range workers {
		for i := range batches * batch {
			want = append(want, fmt.Sprintf("%d\t%d\t%d\n", w, i, 1<<20+i))
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := make([]pairs.Pair, batch)
			for x := range batches {
				for y := range ps {
					i := uint32(x*batch + y)
					ps[y] = pairs.Pair{I: uint32(w), J: i, Count: 1<<20 + i}
				}
				if err := o.add(ps); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := o.finish(nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 4*chunkBytes {
		t.Fatalf("%d bytes: too few for the test", len(data))
	}
	sameLines(t, string(data), want)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the directory, want 1", len(entries))
	}

	// Writes that fail: the error comes back, and no file is left. A
	// mapped output fails when it next reserves.
	path = filepath.Join(dir, "failed.txt")
	if w, err = openOutput(&Env{}, path); err != nil {
		t.Fatal(err)
	}
	o = newStreamOut(w, 4, pairs.AppendLines)
	w.f.Close()
	ps := make([]pairs.Pair, batch)
	for i := range ps {
		ps[i] = pairs.Pair{I: 123456, J: 234567, Count: 345678}
	}
	for i := 0; o.add(ps) == nil; i++ {
		if i > int(2*chunkBytes+mapReserve)/(batch*20) {
			t.Fatal("no error from writing to a closed file")
		}
	}
	if err := o.finish(errWriting); err == nil || !strings.HasPrefix(err.Error(), "writing "+path+": ") || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("finish: %v, want an error that names %s", err, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the directory after a failed run, want 1", len(entries))
	}
}

// sameLines fails t unless text's lines are want's, in any order.
func sameLines(t *testing.T, text string, want []string) {
	t.Helper()
	got := strings.SplitAfter(text, "\n")
	if got[len(got)-1] == "" {
		got = got[:len(got)-1]
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%d lines written, want %d (or they differ)", len(got), len(want))
	}
}

// gatedWriter holds its writes until open is closed, and keeps what it
// is given.
type gatedWriter struct {
	open chan struct{}
	mu   sync.Mutex
	data []byte
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.open
	w.mu.Lock()
	defer w.mu.Unlock()
	w.data = append(w.data, p...)
	return len(p), nil
}

// A streamOut of the fewest chunks (queueChunks' floor) whose writes are
// held (a full pipe, a slow disk) makes its producers wait once its
// chunks are all in use, rather than allocate more; when the writes go
// on, every line arrives. On standard output as on a file.
func TestStreamOutBackpressure(t *testing.T) {
	gate := &gatedWriter{open: make(chan struct{})}
	w, err := openOutput(&Env{Stdout: gate}, "-")
	if err != nil {
		t.Fatal(err)
	}
	const maxChunks, workers, batches, batch = 2, 8, 60, 4096
	o := newStreamOut(w, maxChunks, pairs.AppendLines)
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Add(1)
			ps := make([]pairs.Pair, batch)
			for x := range batches {
				for y := range ps {
					ps[y] = pairs.Pair{I: uint32(w), J: uint32(x*batch + y), Count: 1 << 20}
				}
				if err := o.add(ps); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// The producers take every chunk (or finish, if they could without
	// writing: then the test proves nothing, and says so).
	for {
		o.mu.Lock()
		n := o.chunks
		o.mu.Unlock()
		if n >= maxChunks || done.Load() == workers {
			break
		}
		runtime.Gosched()
	}
	if done.Load() == workers {
		t.Fatal("the producers finished with the writes held: too little output for the test")
	}
	close(gate.open)
	wg.Wait()
	if err := o.finish(nil); err != nil {
		t.Fatal(err)
	}
	if o.chunks > maxChunks {
		t.Errorf("%d chunks allocated, at most %d allowed", o.chunks, maxChunks)
	}
	if lines := bytes.Count(gate.data, []byte("\n")); lines != workers*batches*batch {
		t.Errorf("%d lines written, want %d", lines, workers*batches*batch)
	}
}
