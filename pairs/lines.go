package pairs

import "github.com/xsect/xsect/internal/linefmt"

// AppendLines appends to b the lines that xsect pairs prints for ps:
// "a<TAB>b<TAB>support".
func AppendLines(b []byte, ps []Pair) []byte { return linefmt.AppendCounts(b, ps) }
