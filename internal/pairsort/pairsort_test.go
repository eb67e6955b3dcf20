package pairsort

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/linefmt"
	"github.com/xsect/xsect/sets"
)

// randomPairs returns n distinct pairs in random order: I and J from a
// range of the given size (or near 2^32), counts of any size. There must
// be room for them: n well below ids².
func randomPairs(r *rand.Rand, n int, ids uint32) []sets.Pair {
	seen := map[[2]uint32]bool{}
	ps := make([]sets.Pair, 0, n)
	for len(ps) < n {
		p := sets.Pair{I: r.Uint32N(ids), J: r.Uint32N(ids), Count: r.Uint32()}
		switch r.IntN(8) {
		case 0:
			p.I = math.MaxUint32 - r.Uint32N(3)
		case 1:
			p.J = math.MaxUint32 - r.Uint32N(3)
		case 2:
			p.Count = r.Uint32N(4)
		}
		if k := [2]uint32{p.I, p.J}; !seen[k] {
			seen[k] = true
			ps = append(ps, p)
		}
	}
	return ps
}

// sortAll adds ps to s from several goroutines, in batches of random
// sizes, and returns what finish emits.
func sortAll(t *testing.T, r *rand.Rand, s *Sorter, ps []sets.Pair) ([]sets.Pair, error) {
	t.Helper()
	const workers = 4
	var wg sync.WaitGroup
	var addErr error
	var mu sync.Mutex
	for w := range workers {
		part := ps[w*len(ps)/workers : (w+1)*len(ps)/workers]
		sizes := make([]int, 0)
		for n := len(part); n > 0; {
			k := min(n, 1+r.IntN(5000))
			sizes = append(sizes, k)
			n -= k
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range sizes {
				if err := s.Add(part[:k]); err != nil {
					mu.Lock()
					addErr = err
					mu.Unlock()
					return
				}
				part = part[k:]
			}
		}()
	}
	wg.Wait()
	if addErr != nil {
		s.Close()
		return nil, addErr
	}
	var got []sets.Pair
	err := s.Finish(func(b []sets.Pair) error {
		if len(b) == 0 || len(b) > MaxBatch {
			return fmt.Errorf("a batch of %d pairs", len(b))
		}
		got = append(got, b...)
		return nil
	})
	return got, err
}

// The sorter's output is the pairs sorted, whatever their number next to
// its budget: sorted in one buffer, as runs kept in memory, as runs in a
// file, and merged in passes when the runs are too many to merge at once;
// its temporary directory is gone afterwards.
func TestPairSorter(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		name     string
		n        int
		ids      uint32
		runPairs int
		memLimit int64
		file     bool
	}{
		{"empty", 0, 10, 1000, 1 << 20, false},
		{"one buffer", 5000, 100, 10000, 1 << 20, false},
		{"one buffer, sparse ids", 5000, math.MaxUint32, 10000, 1 << 20, false},
		{"runs in memory", 200000, 3000, 5000, 64 << 20, false},
		{"runs in a file", 200000, 3000, 5000, 1 << 10, true},
		{"runs in a file, sparse ids", 100000, math.MaxUint32, 3000, 0, true},
		{"merged in passes", 200000, 500, 400, 0, true},
	} {
		s := &Sorter{runPairs: tc.runPairs, memLimit: tc.memLimit}
		ps := randomPairs(r, tc.n, tc.ids)
		want := slices.Clone(ps)
		sets.SortPairs(want)
		got, err := sortAll(t, r, s, ps)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %v; %d pairs, want %d sorted", tc.name, err, len(got), len(want))
		}
		if s.Len() != int64(tc.n) {
			t.Errorf("%s: Len %d, want %d", tc.name, s.Len(), tc.n)
		}
		if tc.file != (s.runs != nil) {
			t.Errorf("%s: runs in a file %v, want %v", tc.name, s.runs != nil, tc.file)
		}
		if names := entries(t, os.Getenv("TMPDIR")); len(names) != 0 {
			t.Fatalf("%s: left %q", tc.name, names)
		}
	}
}

// The memory of a sorter's buffers and runs stays within its budget.
func TestPairSorterBudget(t *testing.T) {
	for _, budget := range []int64{0, MinBudget, 100 << 20, 10 << 30} {
		s := New(budget)
		if used := int64(s.runPairs)*bytesPerPair + s.memLimit; used > max(budget, MinBudget) || s.runPairs < 1 || s.runPairs > maxRunPairs {
			t.Errorf("budget %d: %d pairs a buffer and %d bytes of runs in memory", budget, s.runPairs, s.memLimit)
		}
	}
}

// A run that cannot be written is an error that says where the sorter
// writes and how to change it, and the pairs added after it fail too.
func TestPairSorterSpillError(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	r := rand.New(rand.NewPCG(23, 24))
	s := &Sorter{runPairs: 1000}
	_, err := sortAll(t, r, s, randomPairs(r, 50000, 1000))
	if err == nil || !strings.Contains(err.Error(), "set TMPDIR") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("runs under a missing directory: %v", err)
	}
}

// The encoding of runs reads back to the pairs, across pieces of an
// encoder, at the extremes of every field.
func TestRunEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for range 100 {
		ids := []uint32{3, 60, math.MaxUint32}[r.IntN(3)]
		n := r.IntN(3000)
		if ids == 3 {
			n = r.IntN(5)
		}
		ps := randomPairs(r, n, ids)
		sets.SortPairs(ps)
		var e runEncoder
		var b []byte
		for rest := ps; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(100))
			b = e.append(b, rest[:k])
			rest = rest[k:]
		}
		var c chunks
		c.write(b)
		rr := &runReader{f: &c, end: int64(len(b)), left: int64(len(ps)), buf: make([]byte, 0, 64+r.IntN(64))}
		var got []sets.Pair
		for rr.next() {
			got = append(got, rr.cur)
		}
		if rr.readError != nil || !slices.Equal(got, ps) {
			t.Fatalf("%d pairs: read back %d, error %v", len(ps), len(got), rr.readError)
		}
	}
	// A run cut short is an error, not pairs made up.
	var e runEncoder
	b := e.append(nil, []sets.Pair{{I: 1, J: 2, Count: 300}, {I: 1, J: 5, Count: 1}})
	var c chunks
	c.write(b[:len(b)-1])
	rr := &runReader{f: &c, end: int64(len(b) - 1), left: 2, buf: make([]byte, 0, 64)}
	for rr.next() {
	}
	if rr.readError == nil {
		t.Error("a truncated run read without error")
	}
}

// WriteLines writes the lines of the pairs in order, formatted on several
// goroutines, from runs in a file; its temporary directory is gone
// afterwards.
func TestWriteLines(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r := rand.New(rand.NewPCG(29, 30))
	s := &Sorter{runPairs: 1000}
	ps := randomPairs(r, 300000, 5000)
	for rest := ps; len(rest) > 0; rest = rest[min(len(rest), 700):] {
		if err := s.Add(rest[:min(len(rest), 700)]); err != nil {
			t.Fatal(err)
		}
	}
	sets.SortPairs(ps)
	var got strings.Builder
	if err := s.WriteLines(&got, linefmt.AppendCounts); err != nil {
		t.Fatal(err)
	}
	if want := string(linefmt.AppendCounts(nil, ps)); got.String() != want {
		t.Fatalf("%d bytes of lines, want the %d of the sorted pairs", got.Len(), len(want))
	}
	if names := entries(t, os.Getenv("TMPDIR")); len(names) != 0 {
		t.Fatalf("left %q", names)
	}
}

// A write that fails stops the merge and is the error returned.
func TestWriteLinesError(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	s := &Sorter{runPairs: 1000, memLimit: 1 << 20}
	ps := randomPairs(r, 20000, 1000)
	for len(ps) > 0 {
		if err := s.Add(ps[:100]); err != nil {
			t.Fatal(err)
		}
		ps = ps[100:]
	}
	err := s.WriteLines(failingWriter{}, linefmt.AppendCounts)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("WriteLines to a failing writer: %v", err)
	}
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

// Abandon removes the runs of a sort in progress, and a sort that would
// spill after it fails rather than leave files behind.
func TestAbandon(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer func() {
		temps.Lock()
		temps.abandoned = false
		temps.Unlock()
	}()
	r := rand.New(rand.NewPCG(31, 32))
	s := &Sorter{runPairs: 1000}
	if err := s.Add(randomPairs(r, 5000, 1000)); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, tmp); len(names) != 1 {
		t.Fatalf("a sort that spilled: %q in TMPDIR, want its directory", names)
	}
	Abandon()
	if names := entries(t, tmp); len(names) != 0 {
		t.Fatalf("after Abandon: %q in TMPDIR", names)
	}
	late := &Sorter{runPairs: 1000}
	if err := late.Add(randomPairs(r, 5000, 1000)); !errors.Is(err, errAbandoned) {
		t.Errorf("a sort spilling after Abandon: %v", err)
	}
	if names := entries(t, tmp); len(names) != 0 {
		t.Fatalf("a sort after Abandon left %q", names)
	}
	s.Close()
	late.Close()
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
