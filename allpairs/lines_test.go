package allpairs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/sets"
)

func TestAppendLines(t *testing.T) {
	r := sets.FromSets([]uint32{1, 2, 3, 4}, []uint32{1, 2}, []uint32{0, 4294967295})
	s := sets.FromSets([]uint32{1, 2, 3})
	ps := []allpairs.Pair{{I: 0, J: 1, Count: 2}, {I: 0, J: 2, Count: 0}, {I: 4294967295, J: 4294967295, Count: 4294967295}}
	if got, want := string(allpairs.AppendLines([]byte("x"), ps, r, nil, false)), "x0\t1\t2\n0\t2\t0\n4294967295\t4294967295\t4294967295\n"; got != want {
		t.Errorf("overlap lines %q, want %q", got, want)
	}
	ps = []allpairs.Pair{{I: 0, J: 0, Count: 3}, {I: 1, J: 0, Count: 1}, {I: 2, J: 0, Count: 1}}
	if got, want := string(allpairs.AppendLines(nil, ps, r, s, true)), "0\t0\t1.00000\n1\t0\t0.500000\n2\t0\t0.500000\n"; got != want {
		t.Errorf("degree lines %q, want %q", got, want)
	}
	if got := allpairs.AppendLines([]byte("x"), nil, r, s, true); string(got) != "x" {
		t.Errorf("no pairs: %q", got)
	}
}

// BenchmarkAppendLines formats the lines of a self-join of 100K sets:
// set ids below 10^5 and overlaps of two or three digits.
func BenchmarkAppendLines(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ps := make([]allpairs.Pair, 8192)
	for k := range ps {
		i := uint32(rng.IntN(100000))
		ps[k] = allpairs.Pair{I: i, J: i + 1 + uint32(rng.IntN(100000-int(i))), Count: 27 + uint32(rng.IntN(300))}
	}
	r := sets.FromSets([]uint32{1})
	var buf []byte
	for b.Loop() {
		buf = allpairs.AppendLines(buf[:0], ps, r, nil, false)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/pair")
}
