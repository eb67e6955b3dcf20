package pipeline

import (
	"math"
	"strconv"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/simjoin"
)

// The lines are those of the xsect command (cmd/xsect/internal/cli:
// formatJoinPairs, formatPairs, formatSimPairs), which a module outside
// cmd/xsect cannot import; the tests compare the two commands' outputs.

// appendJoinPairs appends the lines of allpairs (the overlap) or
// containment (degree: the degree of containment) pairs of r × s (s nil:
// r again).
func appendJoinPairs(b []byte, ps []allpairs.Pair, r, s *sets.Collection, degree bool) []byte {
	if s == nil {
		s = r
	}
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.I), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.J), 10)
		b = append(b, '\t')
		if degree {
			m := min(r.SetLen(int(p.I)), s.SetLen(int(p.J)))
			if int(p.Count) == m {
				b = append(b, "1.00000"...)
			} else {
				b = appendDegree(b, float64(p.Count)/float64(m))
			}
		} else {
			b = strconv.AppendUint(b, uint64(p.Count), 10)
		}
		b = append(b, '\n')
	}
	return b
}

// appendDegree appends a value in (0, 1] with at least 6 significant
// digits: the shortest form that reads back exactly when that has 6 or
// more, else padded with zeros ("0.750000").
func appendDegree(b []byte, v float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	digits := 0
	for _, c := range b[start:] {
		if c == 'e' {
			break
		}
		if c >= '1' && c <= '9' || c == '0' && digits > 0 {
			digits++
		}
	}
	if digits >= 6 {
		return b
	}
	return strconv.AppendFloat(b[:start], v, 'f', 5-int(math.Floor(math.Log10(v))), 64)
}

// appendItemPairs appends the lines "a<TAB>b<TAB>support" of frequent
// pairs.
func appendItemPairs(b []byte, ps []pairs.Pair) []byte {
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.I), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.J), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.Count), 10)
		b = append(b, '\n')
	}
	return b
}

// appendSimPairs appends the lines of similar pairs: the similarity with
// at least 6 significant digits, or the overlap for the overlap measure.
func appendSimPairs(b []byte, ps []simjoin.Pair, m simjoin.Measure) []byte {
	for _, p := range ps {
		b = strconv.AppendUint(b, uint64(p.I), 10)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(p.J), 10)
		b = append(b, '\t')
		switch {
		case m == simjoin.Overlap:
			b = strconv.AppendUint(b, uint64(p.Overlap), 10)
		case p.Similarity == 1:
			b = append(b, "1.00000"...)
		default:
			b = appendDegree(b, p.Similarity)
		}
		b = append(b, '\n')
	}
	return b
}
