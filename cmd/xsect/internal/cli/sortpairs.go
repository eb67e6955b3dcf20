package cli

import (
	"io"

	"github.com/xsect/xsect/internal/pairsort"
	"github.com/xsect/xsect/sets"
)

// sortJoin runs join with a pairsort.Sorter of budget bytes as its sink
// and writes the pairs it found to w, sorted, each batch formatted by
// format. joined is called when the join ends, before the merge, which
// may take as long again: a progress bar stops there. It returns the
// number of pairs found; the sorter's temporary files are gone, whatever
// the error.
func sortJoin(w io.Writer, budget int64, join func(add func([]sets.Pair) error) error, joined func(),
	format func([]byte, []sets.Pair) []byte) (int64, error) {
	s := pairsort.New(budget)
	err := join(s.Add)
	joined()
	if err != nil {
		s.Close()
		return s.Len(), err
	}
	return s.Len(), s.WriteLines(w, format)
}
