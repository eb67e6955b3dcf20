package allpairs_test

import (
	"context"
	"fmt"
	"log"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/sets"
)

// The pairs of sets of a collection that share at least two elements.
func ExampleCollect() {
	c := sets.FromSets(
		[]uint32{1, 2, 3, 4},
		[]uint32{2, 3, 5},
		[]uint32{3, 4, 5, 6},
		[]uint32{7, 8},
	)
	pairs, err := allpairs.Collect(context.Background(), c, nil, allpairs.Query{MinOverlap: 2}, allpairs.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range pairs {
		fmt.Printf("sets %d and %d share %d\n", p.I, p.J, p.Count)
	}
	// Output:
	// sets 0 and 1 share 2
	// sets 0 and 2 share 2
	// sets 1 and 2 share 2
}

// A set containment join: the pairs of sets of r and s in which at least
// 2/3 of the smaller set is in the other one.
func ExampleCollect_containment() {
	r := sets.FromSets(
		[]uint32{1, 2, 3},
		[]uint32{4, 5, 6, 7},
	)
	s := sets.FromSets(
		[]uint32{1, 2, 3, 4, 5},
		[]uint32{5, 6, 9},
		[]uint32{8, 9},
	)
	q := allpairs.Query{Containment: allpairs.Ratio{Num: 2, Den: 3}}
	pairs, err := allpairs.Collect(context.Background(), r, s, q, allpairs.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range pairs {
		fmt.Printf("r[%d] and s[%d] share %d\n", p.I, p.J, p.Count)
	}
	// Output:
	// r[0] and s[0] share 3
	// r[1] and s[1] share 2
}
