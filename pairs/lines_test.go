package pairs_test

import (
	"testing"

	"github.com/xsect/xsect/pairs"
)

func TestAppendLines(t *testing.T) {
	ps := []pairs.Pair{{I: 0, J: 1, Count: 2}, {I: 65535, J: 65536, Count: 70000}, {I: 4294967295, J: 4294967295, Count: 4294967295}}
	if got, want := string(pairs.AppendLines([]byte("x"), ps)), "x0\t1\t2\n65535\t65536\t70000\n4294967295\t4294967295\t4294967295\n"; got != want {
		t.Errorf("lines %q, want %q", got, want)
	}
	if got := pairs.AppendLines([]byte("x"), nil); string(got) != "x" {
		t.Errorf("no pairs: %q", got)
	}
}
