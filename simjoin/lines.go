package simjoin

import (
	"strconv"

	"github.com/xsect/xsect/internal/linefmt"
)

// AppendLines appends to b the lines that xsect simjoin prints for ps:
// "i<TAB>j<TAB>similarity", the similarity with at least 6 significant
// digits, or the overlap for the measure Overlap.
func AppendLines(b []byte, ps []Pair, m Measure) []byte {
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.I), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.J), 10)
		b = append(b, '\t')
		switch {
		case m == Overlap:
			b = strconv.AppendUint(b, uint64(p.Overlap), 10)
		case p.Similarity == 1:
			b = append(b, "1.00000"...) // equal sets: common in joins
		default:
			b = linefmt.AppendDegree(b, p.Similarity)
		}
		b = append(b, '\n')
	}
	return b
}
