package benchmarks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xsect/xsect/setio"
)

// dataDir is where the real data sets are: $XSECT_DATA, or the shared
// folder beside the repository.
func dataDir() string {
	if d := os.Getenv("XSECT_DATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "data")
}

// roaringData lists Roaring's real data sets, as shipped in shared/data.
var roaringData = []string{"census1881", "census-income", "uscensus2000", "wikileaks-noquotes"}

// loadRoaring reads the named Roaring data set (name.sets or name.sets.gz).
// A missing file fails tb with a message saying where it was looked for.
func loadRoaring(tb testing.TB, name string) [][]uint32 {
	tb.Helper()
	base := filepath.Join(dataDir(), "roaring", name+".sets")
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
	tb.Fatalf("data set %s not found: no %s or %s.gz (set XSECT_DATA to the folder holding roaring/)", name, base, base)
	return nil
}
