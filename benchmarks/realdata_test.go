package benchmarks

import "testing"

// BenchmarkRealData intersects consecutive sets (0 with 1, 1 with 2, ...)
// of each of Roaring's real data sets, as Roaring's own benchmarks do. One
// operation covers all 199 pairs; Gelem/s counts the elements of both sets
// of every pair. "roaring+build" builds the 200 bitmaps once per operation.
func BenchmarkRealData(b *testing.B) {
	for _, name := range roaringData {
		b.Run("data="+name, func(b *testing.B) { benchInput(b, realInput(b, name)) })
	}
}

var realInputs = map[string]*input{}

func realInput(tb testing.TB, name string) *input {
	if in := realInputs[name]; in != nil {
		return in
	}
	sets := loadRoaring(tb, name)
	var pairs [][2]int
	for i := 1; i < len(sets); i++ {
		pairs = append(pairs, [2]int{i - 1, i})
	}
	in := newInput(sets, pairs)
	realInputs[name] = in
	return in
}
