package pipeline

import (
	"strconv"

	"github.com/xsect/xsect/pairs"
)

// The lines are those of the xsect command: allpairs.AppendLines and
// simjoin.AppendLines write the join lines for both; the frequent pairs'
// lines are written here because the command's formatPairs (a faster form
// of the same lines) lives in cmd/xsect/internal/cli, which a module
// outside cmd/xsect cannot import; the tests compare the two commands'
// outputs.

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
