// Package linefmt formats the numbers of the result lines that xsect prints
// (see allpairs.AppendLines, pairs.AppendLines and simjoin.AppendLines).
package linefmt

import (
	"math"
	"strconv"
)

// AppendDegree appends a value in (0, 1] (a degree of containment or a
// similarity) with at least 6 significant digits: the shortest form that
// reads back exactly when that has 6 or more, else padded with zeros
// ("0.750000").
func AppendDegree(b []byte, v float64) []byte {
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
