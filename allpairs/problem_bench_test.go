package allpairs

import "testing"

// prepareShapes are the inputs of the preparation benchmarks: the largest
// sets of real data and a large skewed collection.
var prepareShapes = []struct {
	data    string
	largest int
}{
	{"retail", 10000},
	{"BMS2", 10000},
	{"gcide", 10000},
	{"zipf-1000x100k-1e7", 0},
}

// BenchmarkNewProblem times the host-side preparation of a plan: selecting
// the largest sets, renumbering and the document-frequency and statistics
// passes.
func BenchmarkNewProblem(b *testing.B) {
	for _, sh := range prepareShapes {
		b.Run(sh.data, func(b *testing.B) {
			c := benchCollection(b, sh.data)
			opt := Options{Device: "cpu", Largest: sh.largest}
			for b.Loop() {
				if _, err := newProblem(c, nil, Query{MinOverlap: 1}, opt, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewPlan times all of a plan's preparation on the CPU: the
// problem and every engine's estimate.
func BenchmarkNewPlan(b *testing.B) {
	for _, sh := range prepareShapes {
		b.Run(sh.data, func(b *testing.B) {
			c := benchCollection(b, sh.data)
			opt := Options{Device: "cpu", Largest: sh.largest}
			for b.Loop() {
				if _, err := NewPlan(c, nil, Query{MinOverlap: 1}, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
