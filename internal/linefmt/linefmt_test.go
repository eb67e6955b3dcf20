package linefmt

import "testing"

func TestAppendDegree(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{1, "1.00000"},
		{0.75, "0.750000"},
		{0.5, "0.500000"},
		{2.0 / 3, "0.6666666666666666"},
		{0.001, "0.00100000"},
		{1.0 / 7, "0.14285714285714285"},
		{123456.0 / 1000000, "0.123456"},
	}
	for _, tc := range cases {
		if got := string(AppendDegree([]byte("x"), tc.v)); got != "x"+tc.want {
			t.Errorf("AppendDegree(%v) = %q, want %q", tc.v, got, "x"+tc.want)
		}
	}
}
