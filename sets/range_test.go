package sets

import "testing"

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		r       Range
		n       int
		lo, hi  int
		in, out []int
		valid   bool
	}{
		{Range{}, 5, 0, 5, []int{0, 4, 1 << 40}, []int{-1}, true},
		{Range{Lo: 2}, 5, 2, 5, []int{2, 9}, []int{1}, true},
		{Range{Lo: 2, Hi: 4}, 5, 2, 4, []int{2, 3}, []int{1, 4}, true},
		{Range{Lo: 2, Hi: 9}, 5, 2, 5, []int{8}, []int{9}, true},
		{Range{Lo: 7, Hi: 9}, 5, 5, 5, []int{7}, []int{5}, true},
		{Range{Lo: 3, Hi: 3}, 5, 3, 3, nil, []int{3}, true},
		{Range{Lo: 3, Hi: 2}, 5, 0, 0, nil, nil, false},
		{Range{Lo: -1, Hi: 2}, 5, 0, 0, nil, nil, false},
		{Range{Lo: 0, Hi: -2}, 5, 0, 0, nil, nil, false},
	} {
		if err := tc.r.Validate("r"); (err == nil) != tc.valid {
			t.Errorf("%v: Validate %v", tc.r, err)
		}
		if !tc.valid {
			continue
		}
		if lo, hi := tc.r.Clip(tc.n); lo != tc.lo || hi != tc.hi {
			t.Errorf("%v.Clip(%d) = %d, %d; want %d, %d", tc.r, tc.n, lo, hi, tc.lo, tc.hi)
		}
		for _, id := range tc.in {
			if !tc.r.Contains(id) {
				t.Errorf("%v does not contain %d", tc.r, id)
			}
		}
		for _, id := range tc.out {
			if tc.r.Contains(id) {
				t.Errorf("%v contains %d", tc.r, id)
			}
		}
	}
	if !(Range{}).All() || (Range{Lo: 1}).All() {
		t.Error("All")
	}
}
