package allpairs_test

import (
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
