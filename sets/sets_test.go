package sets

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want []uint32 }{
		{nil, nil},
		{[]uint32{5}, []uint32{5}},
		{[]uint32{3, 1, 2, 3, 1}, []uint32{1, 2, 3}},
		{[]uint32{0, 0, 4294967295, 4294967295}, []uint32{0, 4294967295}},
		{[]uint32{1, 2, 3}, []uint32{1, 2, 3}},
	}
	for _, tc := range cases {
		got := Normalize(slices.Clone(tc.in))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Normalize(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCollection(t *testing.T) {
	c := FromSets([]uint32{3, 1, 3}, nil, []uint32{4294967295, 0})
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 3 {
		t.Fatalf("Len = %d", c.Len())
	}
	want := [][]uint32{{1, 3}, {}, {0, 4294967295}}
	for i, w := range want {
		if !slices.Equal(c.Set(i), w) {
			t.Errorf("set %d = %v, want %v", i, c.Set(i), w)
		}
	}
	if u := c.Union(); !slices.Equal(u, []uint32{0, 1, 3, 4294967295}) {
		t.Errorf("Union = %v", u)
	}
	// Appending to a returned set must not overwrite the next one.
	s := append(c.Set(0), 99)
	_ = s
	if !slices.Equal(c.Set(1), []uint32{}) || !slices.Equal(c.Set(2), []uint32{0, 4294967295}) {
		t.Error("append to Set(0) clobbered the collection")
	}
}

func TestValidateRejects(t *testing.T) {
	bad := []*Collection{
		{Offsets: nil},
		{Offsets: []uint64{1}, Elements: []uint32{1}},
		{Offsets: []uint64{0, 2}, Elements: []uint32{1}},
		{Offsets: []uint64{0, 2}, Elements: []uint32{2, 1}},
		{Offsets: []uint64{0, 2, 1, 2}, Elements: []uint32{1, 2}},
		{Offsets: []uint64{0, 3, 3, 7, 6}, Elements: []uint32{1, 2, 3, 4, 5, 6}},
	}
	for i, c := range bad {
		if c.Validate() == nil {
			t.Errorf("case %d: Validate accepted %+v", i, c)
		}
	}
}

func TestMeasure(t *testing.T) {
	c := FromSets([]uint32{1, 2, 3, 4}, []uint32{2, 3}, nil, []uint32{100})
	st := Measure(c)
	if st.Sets != 4 || st.Elements != 7 || st.MinSize != 0 || st.MaxSize != 4 ||
		st.Universe != 5 || st.MaxValue != 100 {
		t.Fatalf("Measure = %+v", st)
	}
	if st.AvgSize != 1.75 || st.Density != 1.75/5 {
		t.Fatalf("avg/density = %v/%v", st.AvgSize, st.Density)
	}
	// The sort path (max far above the element count) must agree.
	big := FromSets([]uint32{7, 4000000000}, []uint32{7})
	if st := Measure(big); st.Universe != 2 {
		t.Fatalf("sparse universe = %d", st.Universe)
	}
	if st := Measure(New()); st.Sets != 0 || st.Universe != 0 {
		t.Fatalf("empty = %+v", st)
	}
}
