package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/sets"
)

// The open indexes, by handle: the Python package's Index objects hold a
// handle and close it (xsect_index_close) when they are collected.
var (
	indexMu   sync.Mutex
	indexes   = map[int64]*query.Index{}
	lastIndex int64
)

func addIndex(ix *query.Index) int64 {
	indexMu.Lock()
	defer indexMu.Unlock()
	lastIndex++
	indexes[lastIndex] = ix
	return lastIndex
}

func getIndex(h int64) (*query.Index, error) {
	indexMu.Lock()
	defer indexMu.Unlock()
	ix := indexes[h]
	if ix == nil {
		return nil, usagef("xsect: the index is closed")
	}
	return ix, nil
}

func closeIndex(h int64) {
	indexMu.Lock()
	ix := indexes[h]
	delete(indexes, h)
	indexMu.Unlock()
	if ix != nil {
		ix.Close()
	}
}

// indexInfo is an index's shape, for the outcome.
func indexInfo(h int64, ix *query.Index) outcome {
	return outcome{N: h, Explain: ix.String(), Info: map[string]int64{
		"docs": int64(ix.Docs()), "terms": int64(ix.Terms()), "postings": int64(ix.Postings())}}
}

// indexBuild builds the inverted index of the documents of the inputs.
func indexBuild(p *params_, in [][]byte) (outcome, error) {
	docs, err := collection(in, 0, "docs")
	if err != nil {
		return outcome{}, err
	}
	if p.DenseRatio < -1 {
		return outcome{}, usagef("dense_ratio=%d: want a positive ratio, 0 for the default or -1 for none", p.DenseRatio)
	}
	ix, err := query.Build(docs, query.BuildOptions{DenseRatio: p.DenseRatio, Memory: max(budget(p.Memory)-memoryOf(docs), 1<<20)})
	if err != nil {
		var me *query.MemoryError
		if errors.As(err, &me) {
			return outcome{}, err
		}
		return outcome{}, usagef("docs: %v", err)
	}
	return indexInfo(addIndex(ix), ix), nil
}

// indexOpen opens (maps and verifies) a saved index.
func indexOpen(p *params_) (outcome, error) {
	ix, err := query.Open(p.Path)
	if err != nil {
		return outcome{}, err
	}
	return indexInfo(addIndex(ix), ix), nil
}

// indexSave writes an index to p.Path, under a temporary name in the same
// folder renamed into place once written, so that an index open elsewhere
// is replaced, not changed in place.
func indexSave(p *params_) error {
	ix, err := getIndex(p.Index)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p.Path), "."+filepath.Base(p.Path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = ix.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p.Path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// indexQuery answers the queries of the inputs (a collection of term ids:
// offsets, then terms) on the index p.Index, limit ids each (negative: all).
// The results are the counts (int64) and, unless count_only, the ids of
// every query one after the other (uint32).
func indexQuery(ctx context.Context, p *params_, in [][]byte) (outcome, [][]byte, error) {
	ix, err := getIndex(p.Index)
	if err != nil {
		return outcome{}, nil, err
	}
	if len(in) != 2 {
		return outcome{}, nil, usagef("xsect: query takes the queries' offsets and terms")
	}
	c := &sets.Collection{Offsets: asSlice[uint64](in[0]), Elements: asSlice[uint32](in[1])}
	if len(c.Offsets) == 0 || c.Offsets[0] != 0 || c.Offsets[len(c.Offsets)-1] != uint64(len(c.Elements)) {
		return outcome{}, nil, usagef("queries: bad offsets")
	}
	qs := make([]query.Query, c.Len())
	for i := range qs {
		if c.Offsets[i] > c.Offsets[i+1] {
			return outcome{}, nil, usagef("queries: offsets decrease at query %d", i)
		}
		qs[i].Terms = c.Set(i)
	}
	switch p.Device {
	case "", "auto", "cpu", "gpu":
	default:
		return outcome{}, nil, usagef("device=%q: want cpu, gpu or auto", p.Device)
	}
	opt := query.Options{Device: p.Device, Threads: p.Threads, Expected: qs[:min(len(qs), 4096)], ExpectedTotal: len(qs)}
	s, err := query.NewSearcher(ix, opt)
	var o outcome
	if s != nil && p.Explain {
		var w bytes.Buffer
		s.Explain(&w)
		o.Explain = w.String()
	}
	if err != nil {
		if errors.Is(err, query.ErrCannotRun) {
			return o, nil, err
		}
		return o, nil, usagef("%v", err)
	}
	defer s.Close()
	counts := make([]int64, len(qs))
	var ids []uint32
	const batch = 1 << 16
	res := make([]query.Result, min(len(qs), batch))
	for lo := 0; lo < len(qs); lo += batch {
		hi := min(lo+batch, len(qs))
		if err := s.Search(ctx, qs[lo:hi], p.Limit, p.CountOnly, res[:hi-lo]); err != nil {
			return o, nil, err
		}
		for i, r := range res[:hi-lo] {
			counts[lo+i] = int64(r.Count)
			ids = append(ids, r.IDs...)
		}
	}
	o.N = int64(len(qs))
	o.Explain += "ran on " + s.Device() + "\n" + s.Notes()
	if p.CountOnly {
		return o, [][]byte{asBytes(counts)}, nil
	}
	return o, [][]byte{asBytes(counts), asBytes(ids)}, nil
}
