package cli

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

	"github.com/xsect/xsect/pairs"
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
func sortAll(t *testing.T, r *rand.Rand, s *pairSorter, ps []sets.Pair) ([]sets.Pair, error) {
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
				if err := s.add(part[:k]); err != nil {
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
		s.close()
		return nil, addErr
	}
	var got []sets.Pair
	err := s.finish(func(b []sets.Pair) error {
		if len(b) == 0 || len(b) > mergeBatch {
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
		s := &pairSorter{runPairs: tc.runPairs, memLimit: tc.memLimit}
		ps := randomPairs(r, tc.n, tc.ids)
		want := slices.Clone(ps)
		sets.SortPairs(want)
		got, err := sortAll(t, r, s, ps)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %v; %d pairs, want %d sorted", tc.name, err, len(got), len(want))
		}
		if s.total != int64(tc.n) {
			t.Errorf("%s: total %d, want %d", tc.name, s.total, tc.n)
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
	for _, budget := range []int64{0, minSortBudget, 100 << 20, 10 << 30} {
		s := newPairSorter(budget)
		if used := int64(s.runPairs)*sorterBytesPerPair + s.memLimit; used > max(budget, minSortBudget) || s.runPairs < 1 || s.runPairs > maxRunPairs {
			t.Errorf("budget %d: %d pairs a buffer and %d bytes of runs in memory", budget, s.runPairs, s.memLimit)
		}
	}
}

// A run that cannot be written is an error that says where the sorter
// writes and how to change it, and the pairs added after it fail too.
func TestPairSorterSpillError(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	r := rand.New(rand.NewPCG(23, 24))
	s := &pairSorter{runPairs: 1000}
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

// A write that fails stops the merge and is the error returned.
func TestWriteSortedError(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	s := &pairSorter{runPairs: 1000, memLimit: 1 << 20}
	ps := randomPairs(r, 20000, 1000)
	for len(ps) > 0 {
		if err := s.add(ps[:100]); err != nil {
			t.Fatal(err)
		}
		ps = ps[100:]
	}
	err := writeSorted(failingWriter{}, s, pairs.AppendLines)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("writeSorted to a failing writer: %v", err)
	}
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }
