package benchmarks

import (
	"os"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
)

// roaringData lists Roaring's real data sets, as shipped in shared/data.
var roaringData = []string{"census1881", "census-income", "uscensus2000", "wikileaks-noquotes"}

// loadRoaring reads the named Roaring data set (name.sets or name.sets.gz).
// Without the shared data sets it skips tb; a missing file fails it,
// saying where it was looked for.
func loadRoaring(tb testing.TB, name string) [][]uint32 {
	tb.Helper()
	base := settest.SharedData(tb, "roaring", name+".sets")
	for _, path := range []string{base, base + ".gz"} {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			continue
		}
		c, err := setio.Load(path)
		if err != nil {
			tb.Fatal(err)
		}
		out := make([][]uint32, c.Len())
		for i := range out {
			out[i] = c.Set(i)
		}
		return out
	}
	tb.Fatalf("data set %s not found: no %s or %s.gz", name, base, base)
	return nil
}
