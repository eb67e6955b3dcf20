package intersect

import (
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/xsect/xsect/internal/par"
)

// parallelMin is the smaller set's size below which the parallel functions
// run on one goroutine: below it, starting goroutines costs more than the
// work.
const parallelMin = 1 << 16

// CountParallel returns |a ∩ b| using up to workers goroutines (all CPUs
// when workers <= 0). It splits the smaller set into parts, pairs each with
// the range of the larger set holding the same values, and counts the parts
// with Count.
func CountParallel(a, b []uint32, workers int) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	workers = workerCount(workers)
	if workers == 1 || len(a) < parallelMin {
		return Count(a, b)
	}
	parts := valueRangeParts(a, b, workers)
	var total atomic.Int64
	par.Each(len(parts), workers, func(p int) {
		r := parts[p]
		total.Add(int64(Count(a[r[0]:r[1]], b[r[2]:r[3]])))
	})
	return int(total.Load())
}

// IntersectParallel appends a ∩ b to dst like Intersect, using up to
// workers goroutines (all CPUs when workers <= 0). dst may share memory
// with a or b: the parts are intersected into buffers of their own and
// copied to dst once every part is done.
func IntersectParallel(dst, a, b []uint32, workers int) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	workers = workerCount(workers)
	if workers == 1 || len(a) < parallelMin {
		return Intersect(dst, a, b)
	}
	parts := valueRangeParts(a, b, workers)
	outs := make([][]uint32, len(parts))
	par.Each(len(parts), workers, func(p int) {
		r := parts[p]
		outs[p] = Intersect(nil, a[r[0]:r[1]], b[r[2]:r[3]])
	})
	n := 0
	for _, o := range outs {
		n += len(o)
	}
	dst = slices.Grow(dst, n)
	for _, o := range outs {
		dst = append(dst, o...)
	}
	return dst
}

func workerCount(workers int) int {
	if workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return workers
}

// valueRangeParts splits a (the smaller set) into about 4 parts per worker,
// so that uneven parts still balance, and pairs each with the part of b
// holding values in the same range: [a0, a1) with [b0, b1).
func valueRangeParts(a, b []uint32, workers int) [][4]int {
	np := max(1, min(4*workers, len(a)))
	parts := make([][4]int, np)
	jb := 0
	for p := range np {
		i0, i1 := len(a)*p/np, len(a)*(p+1)/np
		j1 := len(b)
		if i1 < len(a) {
			j1, _ = slices.BinarySearch(b[jb:], a[i1])
			j1 += jb
		}
		parts[p] = [4]int{i0, i1, jb, j1}
		jb = j1
	}
	return parts
}
