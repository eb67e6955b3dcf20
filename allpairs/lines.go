package allpairs

import (
	"strconv"

	"github.com/xsect/xsect/internal/linefmt"
	"github.com/xsect/xsect/sets"
)

// AppendLines appends to b the lines that xsect allpairs and containment
// print for ps, pairs of r × s (s nil: r again): "i<TAB>j<TAB>overlap",
// or with degree the degree of containment |r[i] ∩ s[j]| / min(|r[i]|,
// |s[j]|) with at least 6 significant digits in place of the overlap.
func AppendLines(b []byte, ps []Pair, r, s *sets.Collection, degree bool) []byte {
	if !degree {
		return linefmt.AppendCounts(b, ps)
	}
	if s == nil {
		s = r
	}
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.I), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.J), 10)
		b = append(b, '\t')
		m := min(r.SetLen(int(p.I)), s.SetLen(int(p.J)))
		if int(p.Count) == m {
			b = append(b, "1.00000"...) // containment: the common case
		} else {
			b = linefmt.AppendDegree(b, float64(p.Count)/float64(m))
		}
		b = append(b, '\n')
	}
	return b
}
