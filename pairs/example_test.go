package pairs_test

import (
	"context"
	"fmt"
	"log"

	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/sets"
)

// The pairs of items bought together in at least three of five baskets.
func ExampleCollect() {
	baskets := sets.FromSets(
		[]uint32{1, 2, 3},    // bread, milk, eggs
		[]uint32{1, 2},       // bread, milk
		[]uint32{1, 2, 4},    // bread, milk, butter
		[]uint32{2, 3, 4},    // milk, eggs, butter
		[]uint32{1, 3, 4, 5}, // bread, eggs, butter, jam
	)
	frequent, err := pairs.Collect(context.Background(), baskets, pairs.Options{MinSupport: 3})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range frequent {
		fmt.Printf("items %d and %d: %d baskets\n", p.I, p.J, p.Count)
	}
	// Output:
	// items 1 and 2: 3 baskets
}
