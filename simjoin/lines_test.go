package simjoin_test

import (
	"testing"

	"github.com/xsect/xsect/simjoin"
)

func TestAppendLines(t *testing.T) {
	ps := []simjoin.Pair{
		{I: 0, J: 1, Overlap: 3, Similarity: 1},
		{I: 2, J: 4294967295, Overlap: 2, Similarity: 2.0 / 3},
		{I: 5, J: 6, Overlap: 4294967295, Similarity: 0.75},
	}
	if got, want := string(simjoin.AppendLines([]byte("x"), ps, simjoin.Jaccard)), "x0\t1\t1.00000\n2\t4294967295\t0.6666666666666666\n5\t6\t0.750000\n"; got != want {
		t.Errorf("Jaccard lines %q, want %q", got, want)
	}
	if got, want := string(simjoin.AppendLines(nil, ps, simjoin.Overlap)), "0\t1\t3\n2\t4294967295\t2\n5\t6\t4294967295\n"; got != want {
		t.Errorf("Overlap lines %q, want %q", got, want)
	}
	if got := simjoin.AppendLines([]byte("x"), nil, simjoin.Cosine); string(got) != "x" {
		t.Errorf("no pairs: %q", got)
	}
}
