package intersect_test

import (
	"fmt"

	"github.com/xsect/xsect/intersect"
)

func ExampleCount() {
	a := []uint32{1, 3, 5, 7, 9, 11}
	b := []uint32{3, 4, 5, 6, 7}
	fmt.Println(intersect.Count(a, b))
	// Output: 3
}

func ExampleIntersect() {
	a := []uint32{1, 3, 5, 7, 9, 11}
	b := []uint32{3, 4, 5, 6, 7}
	fmt.Println(intersect.Intersect(nil, a, b))
	// dst may be one of the inputs: this keeps in a what b also holds.
	a = intersect.Intersect(a[:0], a, b)
	fmt.Println(a)
	// Output:
	// [3 5 7]
	// [3 5 7]
}

func ExampleIntersectAll() {
	fmt.Println(intersect.IntersectAll(nil,
		[]uint32{2, 4, 6, 8, 10, 12},
		[]uint32{3, 6, 9, 12},
		[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
	// Output: [6 12]
}
