package query_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/xsect/xsect/query"
)

// Build an index of four short documents, then answer a batch of queries
// on the CPU: each query's matching documents, at most two ids each.
func Example() {
	docs := "the quick brown fox\nthe lazy dog\nquick quick dog\nThe Fox and the Dog\n"
	ix, err := query.BuildText(strings.NewReader(docs), "docs", query.BuildOptions{})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	s, err := query.NewSearcher(ix, query.Options{Device: "cpu"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	qs := []query.Query{
		ix.ParseText("the dog"),
		ix.ParseText("QUICK"),
		ix.ParseText("fox cat"), // cat is in no document
		ix.ParseText(""),
	}
	res := make([]query.Result, len(qs))
	if err := s.Search(context.Background(), qs, 2, false, res); err != nil {
		panic(err)
	}
	for i, r := range res {
		fmt.Println(i, r.Count, r.IDs)
	}
	// Output:
	// 0 2 [1 3]
	// 1 2 [0 2]
	// 2 0 []
	// 3 0 []
}
