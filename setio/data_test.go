package setio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

// readData returns a real data file's bytes; without the shared data sets
// the test is skipped, and a missing file fails it.
func readData(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(settest.SharedData(t, name))
	if err != nil {
		t.Fatalf("real data file missing: %v (see the shared data's README.md)", err)
	}
	return b
}

func TestRealFiles(t *testing.T) {
	for _, f := range []struct {
		name    string
		sets    int
		maxSize int
	}{
		{"fimi/chess.dat", 3196, 37},
		{"fimi/mushroom.dat", 8124, 21},
		{"fimi/kosarak_head36682.dat", 36682, 699},
		{"fimi/BMS1.dat", 59602, 267},
		{"fimi/retail.dat", 88162, 76},
		{"graphs/soc-Epinions1.adj", 51957, 3035},
		{"roaring/census-income.sets.gz", 200, 197539},
	} {
		t.Run(filepath.Base(f.name), func(t *testing.T) {
			raw := readData(t, f.name)
			c, err := Load(settest.SharedData(t, f.name))
			if err != nil {
				t.Fatal(err)
			}
			// The README counts non-empty sets (soc-Epinions1 has empty lines).
			nonEmpty := 0
			for i := range c.Len() {
				if c.SetLen(i) > 0 {
					nonEmpty++
				}
			}
			if st := sets.Measure(c); nonEmpty != f.sets || st.MaxSize != f.maxSize {
				t.Errorf("%d non-empty sets, max size %d; README says %d, %d", nonEmpty, st.MaxSize, f.sets, f.maxSize)
			}
			if bytes.HasPrefix(raw, gzipMagic) {
				c2, err := ReadText(bytes.NewReader(raw), f.name)
				if err != nil || !equalCollections(c, c2) {
					t.Fatalf("ReadText of the gzip data: %v", err)
				}
			} else {
				want, line, col := refParse(string(raw))
				if want == nil {
					t.Fatalf("reference parser fails at %d:%d", line, col)
				}
				if !equalCollections(c, want) {
					t.Fatal("fast and reference parsers disagree")
				}
			}
			// text -> binary -> text -> collection
			var bin, text2 bytes.Buffer
			if err := WriteBinary(&bin, c); err != nil {
				t.Fatal(err)
			}
			fromBin, err := ReadBinary(&bin, f.name)
			if err != nil || !equalCollections(fromBin, c) {
				t.Fatalf("binary round trip: %v", err)
			}
			if err := WriteText(&text2, fromBin); err != nil {
				t.Fatal(err)
			}
			again, err := ReadText(&text2, f.name)
			if err != nil || !equalCollections(again, c) {
				t.Fatalf("text round trip: %v", err)
			}
		})
	}
}

// kosarak_head36682.dat has one line with a repeated element (README): the
// loader keeps it once.
func TestKosarakDuplicate(t *testing.T) {
	raw := readData(t, "fimi/kosarak_head36682.dat")
	c, err := ReadText(bytes.NewReader(raw), "kosarak")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if len(lines) != c.Len() {
		t.Fatalf("%d lines, %d sets", len(lines), c.Len())
	}
	var dups []int
	for i, l := range lines {
		if n := len(bytes.Fields(l)); n != c.SetLen(i) {
			dups = append(dups, i)
			if n != c.SetLen(i)+1 {
				t.Errorf("line %d: %d tokens, set of %d", i+1, n, c.SetLen(i))
			}
		}
		if !sets.IsStrict(c.Set(i)) {
			t.Fatalf("set %d not normalised", i)
		}
	}
	if len(dups) != 1 {
		t.Fatalf("lines with repeated elements: %v, want exactly one", dups)
	}
	t.Logf("line %d repeats an element; set %d has %d elements", dups[0]+1, dups[0], c.SetLen(dups[0]))
}
