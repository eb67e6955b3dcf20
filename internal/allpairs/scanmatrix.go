package allpairs

import (
	"context"

	"github.com/xsect/xsect/internal/par"
)

// scanElementMajor runs scan-count element by element: each element's list
// adds one to the counter of every pair of sets in it (self-join), or of
// every pair of its R list × its S list. With blockRows == 0 each worker
// takes a share of the elements into a private matrix of all the pairs and
// the matrices are summed when reporting; otherwise each worker takes a
// block of blockRows rows of the matrix and walks all the lists for it.
func scanElementMajor(ctx context.Context, p *Problem, out *Output, blockRows int) error {
	xs := buildIndex(p.Threads, p.S, p.Universe, p.DFS, false)
	xr := xs
	if !p.Self {
		xr = buildIndex(p.Threads, p.R, p.Universe, p.DFR, false)
	}
	if blockRows == 0 {
		return scanPrivate(ctx, p, out, xr, xs)
	}
	return scanBlocks(ctx, p, out, xr, xs, blockRows)
}

// elementWork is the number of increments of element e.
func elementWork(p *Problem, e int) int64 {
	a := int64(p.DFR[e])
	if p.Self {
		return a * (a - 1) / 2
	}
	return a * int64(p.DFS[e])
}

func scanPrivate(ctx context.Context, p *Problem, out *Output, xr, xs *index) error {
	kr, ks := p.R.Len(), p.S.Len()
	spans := splitWork(p.Universe, p.Threads*tasksPerThread, func(e int) int64 { return elementWork(p, e) + 8 })
	mats := make([][]uint32, p.Threads)
	total := max(p.Stats.ScanWork, 1)
	err := par.Tasks(ctx, len(spans), p.Threads, func(w, t int) error {
		if mats[w] == nil {
			mats[w] = make([]uint32, kr*ks)
		}
		m := mats[w]
		var work int64
		for e := spans[t].lo; e < spans[t].hi; e++ {
			if p.Self {
				l := xs.list(uint32(e))
				for a, ja := range l {
					row := m[int(ja)*ks : int(ja+1)*ks]
					for _, jb := range l[a+1:] {
						row[jb]++
					}
				}
				work += int64(len(l)) * int64(len(l)-1) / 2
				continue
			}
			ls := xs.list(uint32(e))
			if len(ls) == 0 {
				continue
			}
			lr := xr.list(uint32(e))
			for _, ja := range lr {
				row := m[int(ja)*ks : int(ja+1)*ks]
				for _, jb := range ls {
					row[jb]++
				}
			}
			work += int64(len(lr)) * int64(len(ls))
		}
		out.Progress(p.Stats.Pairs / 2 * work / total)
		return out.Err()
	})
	if err != nil {
		return err
	}
	used := allocated(mats)
	rows := splitWork(kr, p.Threads*tasksPerThread, func(a int) int64 {
		if p.Self {
			return int64(ks - a)
		}
		return int64(ks)
	})
	sums := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(rows), p.Threads, func(w, t int) error {
		wr := out.Writer()
		defer wr.Close()
		var pairs int64
		for a := rows[t].lo; a < rows[t].hi; a++ {
			b0 := 0
			if p.Self {
				b0 = a + 1
			}
			row := sumRow(used, a, b0, ks, &sums[w])
			reportCounts(p, wr, row, a, b0, false)
			pairs += int64(len(row))
		}
		out.Progress(pairs - pairs/2)
		return out.Err()
	})
}

// allocated returns the private matrices that workers allocated: a worker
// that took no task has none.
func allocated(mats [][]uint32) [][]uint32 {
	var used [][]uint32
	for _, m := range mats {
		if m != nil {
			used = append(used, m)
		}
	}
	return used
}

// sumRow returns the counts of row a, columns b0 to ks, of the private
// matrices (ks columns each): the one matrix's own row, or their sum in
// *sum (allocated on first use), zero if there is none (no worker ran
// when no element occurs). The caller may change the row.
func sumRow(used [][]uint32, a, b0, ks int, sum *[]uint32) []uint32 {
	if len(used) == 1 {
		return used[0][a*ks+b0 : (a+1)*ks]
	}
	if *sum == nil {
		*sum = make([]uint32, ks)
	}
	row := (*sum)[:ks-b0]
	clear(row)
	for _, m := range used {
		for b, v := range m[a*ks+b0 : (a+1)*ks] {
			row[b] += v
		}
	}
	return row
}

func scanBlocks(ctx context.Context, p *Problem, out *Output, xr, xs *index, blockRows int) error {
	kr, ks := p.R.Len(), p.S.Len()
	weight := func(a int) int64 {
		if p.Self {
			return int64(ks - a)
		}
		return int64(ks)
	}
	nblocks := max((kr+blockRows-1)/blockRows, 2*p.Threads)
	blocks := splitWork(kr, nblocks, weight)
	bufs := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(blocks), p.Threads, func(w, t int) error {
		a0, a1 := blocks[t].lo, blocks[t].hi
		n := (a1 - a0) * ks
		if cap(bufs[w]) < n {
			bufs[w] = make([]uint32, n)
		}
		m := bufs[w][:n]
		lo, hi := uint32(a0), uint32(a1)
		for e := 0; e < p.Universe; e++ {
			lr := xr.list(uint32(e))
			if len(lr) == 0 || lr[0] >= hi || lr[len(lr)-1] < lo {
				continue
			}
			i0 := lowerBound(lr, lo)
			i1 := i0 + lowerBound(lr[i0:], hi)
			if p.Self {
				for x := i0; x < i1; x++ {
					row := m[int(lr[x]-lo)*ks : int(lr[x]-lo+1)*ks]
					for _, jb := range lr[x+1:] {
						row[jb]++
					}
				}
				continue
			}
			ls := xs.list(uint32(e))
			for _, ja := range lr[i0:i1] {
				row := m[int(ja-lo)*ks : int(ja-lo+1)*ks]
				for _, jb := range ls {
					row[jb]++
				}
			}
		}
		wr := out.Writer()
		defer wr.Close()
		var pairs int64
		for a := a0; a < a1; a++ {
			b0 := 0
			if p.Self {
				b0 = a + 1
			}
			row := m[(a-a0)*ks+b0 : (a-a0+1)*ks]
			reportCounts(p, wr, row, a, b0, false)
			pairs += int64(len(row))
		}
		clear(m)
		out.Progress(pairs)
		return out.Err()
	})
}

// reportCounts reports the qualifying pairs of set i from its counts
// cnt[y] with the sets b0+y of the other side: pairs (i, b0+y), or, in a
// self-join's column, (b0+y, i). A self-join's thresholds are the same
// for R and S, so the test is the same either way.
func reportCounts(p *Problem, wr *Writer, cnt []uint32, i, b0 int, column bool) {
	add := func(j int, v uint32) {
		if column {
			wr.Add(j, i, v)
		} else {
			wr.Add(i, j, v)
		}
	}
	need, constant := p.ConstNeed()
	switch {
	case constant && wr.CountOnly():
		var n int64
		for _, v := range cnt {
			if v >= need {
				n++
			}
		}
		wr.AddCount(n)
	case constant:
		for y, v := range cnt {
			if v >= need {
				add(b0+y, v)
			}
		}
	default:
		ni := p.NeedR(i)
		for y, v := range cnt {
			if v >= ni || v >= p.NeedS(b0+y) {
				add(b0+y, v)
			}
		}
	}
}
