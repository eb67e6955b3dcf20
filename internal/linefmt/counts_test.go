package linefmt

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/xsect/xsect/sets"
)

// TestAppendCounts checks the digit writer against fmt.
func TestAppendCounts(t *testing.T) {
	vals := []uint32{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 99999, 100000, 999999999, 1000000000, 4294967295}
	for p := uint32(10); p < 1e9; p *= 10 {
		vals = append(vals, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		vals = append(vals, r.Uint32()>>r.IntN(32))
	}
	var ps []sets.Pair
	var want []byte
	for i, v := range vals {
		p := sets.Pair{I: v, J: vals[(i*7+3)%len(vals)], Count: vals[(i*13+5)%len(vals)]}
		ps = append(ps, p)
		want = fmt.Appendf(want, "%d\t%d\t%d\n", p.I, p.J, p.Count)
	}
	if got := AppendCounts([]byte("x"), ps); string(got) != "x"+string(want) {
		t.Fatalf("AppendCounts differs from fmt")
	}
	for _, p := range ps {
		if n := len(AppendCounts(nil, []sets.Pair{p})); n > MaxCountLine {
			t.Fatalf("%v: a line of %d bytes, over MaxCountLine", p, n)
		}
	}
}

// TestSmallDecimals checks every entry of the table of numbers below 2^16
// against strconv, and AppendCounts at the numbers where the table ends
// and at every length, in each field of a line, on buffers with and
// without room to spare.
func TestSmallDecimals(t *testing.T) {
	tab := smallDecimals()
	for v := range len(tab) {
		e := tab[v]
		want := strconv.Itoa(v) + "\t"
		var got [8]byte
		binary.LittleEndian.PutUint64(got[:], e)
		l := int(e >> 56)
		if l != len(want) || string(got[:l]) != want || e<<8>>(8+8*l) != 0 { // nothing between the tab and the length
			t.Fatalf("entry %d: %q (length %d), want %q", v, got, l, want)
		}
	}
	vals := []uint32{0, 65535, 65536, 1<<32 - 1}
	for p := uint64(1); p < 1<<32; p *= 10 {
		vals = append(vals, uint32(p), uint32(p-1), uint32(min(p+1, 1<<32-1))) // every length
	}
	for _, x := range vals {
		for _, y := range vals {
			for field := range 3 {
				p := sets.Pair{I: 7, J: 12345, Count: 65535}
				switch field {
				case 0:
					p.I = x
				case 1:
					p.J = x
				case 2:
					p.Count = x
				}
				q := sets.Pair{I: y, J: y, Count: y}
				want := "ab" + strconv.FormatUint(uint64(p.I), 10) + "\t" + strconv.FormatUint(uint64(p.J), 10) + "\t" + strconv.FormatUint(uint64(p.Count), 10) + "\n" +
					strconv.FormatUint(uint64(y), 10) + "\t" + strconv.FormatUint(uint64(y), 10) + "\t" + strconv.FormatUint(uint64(y), 10) + "\n"
				for _, b := range [][]byte{[]byte("ab"), append(make([]byte, 0, 1000), "ab"...)} {
					if got := AppendCounts(b, []sets.Pair{p, q}); string(got) != want {
						t.Fatalf("AppendCounts(%v, %v) = %q, want %q", p, q, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkAppendCounts formats the lines of a pair miner's output: item
// ids below 16000 and supports below 1000 (the table), or every number
// from 2^16 on (two digits at a time).
func BenchmarkAppendCounts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name string
		base uint32
		ids  int
		sup  int
	}{{"small", 0, 16000, 1000}, {"large", 1 << 16, 16000, 1000}} {
		ps := make([]sets.Pair, 4096)
		for i := range ps {
			ps[i] = sets.Pair{I: c.base + uint32(r.IntN(c.ids)), J: c.base + uint32(r.IntN(c.ids)), Count: c.base + 38 + uint32(r.IntN(c.sup))}
		}
		buf := make([]byte, 0, 1<<20)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				buf = AppendCounts(buf[:0], ps)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/pair")
		})
	}
}
