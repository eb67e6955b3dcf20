package query

import (
	"slices"

	"github.com/xsect/xsect/internal/invindex"
)

// Prepare returns q's distinct terms ordered by the length of their
// posting lists, shortest first (equal lengths by id), appended to
// dst[:0]; ok is false when the query matches nothing for want of a term:
// it is empty, or one of its terms has no posting list (an id the index
// does not hold, or an empty list).
func Prepare(ix *invindex.Index, q Query, dst []uint32) (terms []uint32, ok bool) {
	terms = dst[:0]
	if len(q.Terms) == 0 {
		return terms, false
	}
	off := ix.Offsets
	n := uint32(len(off) - 1)
	for _, t := range q.Terms {
		if t >= n || off[t+1] == off[t] {
			return terms[:0], false
		}
		terms = append(terms, t)
	}
	if len(terms) <= 16 {
		// Insertion sort: queries are short.
		for i := 1; i < len(terms); i++ {
			t := terms[i]
			lt := off[t+1] - off[t]
			j := i
			for ; j > 0; j-- {
				u := terms[j-1]
				lu := off[u+1] - off[u]
				if lu < lt || lu == lt && u <= t {
					break
				}
				terms[j] = u
			}
			terms[j] = t
		}
	} else {
		slices.SortFunc(terms, func(a, b uint32) int {
			la, lb := off[a+1]-off[a], off[b+1]-off[b]
			switch {
			case la < lb:
				return -1
			case la > lb:
				return 1
			}
			return int(int64(a) - int64(b))
		})
	}
	// Equal terms are adjacent: same length, same id.
	w := 1
	for i := 1; i < len(terms); i++ {
		if terms[i] != terms[w-1] {
			terms[w] = terms[i]
			w++
		}
	}
	return terms[:w], true
}
