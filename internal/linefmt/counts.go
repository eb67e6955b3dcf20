package linefmt

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"

	"github.com/xsect/xsect/sets"
)

// MaxCountLine is the most bytes AppendCounts writes for one pair: three
// numbers of 10 digits and their separators.
const MaxCountLine = 33

// AppendCounts appends a line "i<TAB>j<TAB>count" for each pair. The
// digits are written in place: numbers below 2^16 (item ids and supports,
// mostly) as one 8-byte store from a table, those below 10^8 as two, the
// rest two digits at a time; strconv's copies cost more than the
// conversion when millions of pairs are printed.
func AppendCounts(b []byte, ps []sets.Pair) []byte {
	n := len(b)
	// Slack for the last 8-byte store.
	b = slices.Grow(b, MaxCountLine*len(ps)+8)
	b = b[:cap(b)]
	tab, four := smallDecimals(), fourDigits()
	for _, p := range ps {
		if p.I|p.J|p.Count < 1<<16 {
			x, y, z := tab[p.I], tab[p.J], tab[p.Count]
			binary.LittleEndian.PutUint64(b[n:], x)
			n += int(x >> 56)
			binary.LittleEndian.PutUint64(b[n:], y)
			n += int(y >> 56)
			// The count's tab becomes a newline.
			l := z >> 56
			binary.LittleEndian.PutUint64(b[n:], z^('\t'^'\n')<<(8*(l-1)&63))
			n += int(l)
			continue
		}
		n = putField(b, n, p.I, tab, four)
		n = putField(b, n, p.J, tab, four)
		n = putField(b, n, p.Count, tab, four)
		b[n-1] = '\n'
	}
	return b[:n]
}

// putField writes v's digits and a tab at b[n:], with 8 bytes to spare,
// and returns where they end. Below 10^8, v is two numbers of the table:
// v/10^4 and the four digits of v%10^4 (set ids of collections of up to
// 10^8 sets, mostly).
func putField(b []byte, n int, v uint32, tab *[1 << 16]uint64, four *[1e4]uint32) int {
	switch {
	case v < 1<<16:
		x := tab[v]
		binary.LittleEndian.PutUint64(b[n:], x)
		return n + int(x>>56)
	case v < 1e8:
		hi := v / 1e4
		x := tab[hi]
		binary.LittleEndian.PutUint64(b[n:], x)
		n += int(x>>56) - 1 // over hi's tab
		binary.LittleEndian.PutUint64(b[n:], uint64(four[v-hi*1e4])|'\t'<<32)
		return n + 5
	}
	n = putDecimal(b, n, v)
	b[n] = '\t'
	return n + 1
}

// fourDigits returns, for each v < 10^4, v's four digits with leading
// zeros (the first lowest), built on first use.
var fourDigits = sync.OnceValue(func() *[1e4]uint32 {
	t := new([1e4]uint32)
	for v := range t {
		t[v] = uint32('0'+v/1000) | uint32('0'+v/100%10)<<8 | uint32('0'+v/10%10)<<16 | uint32('0'+v%10)<<24
	}
	return t
})

// smallDecimals returns, for each v < 2^16, v's digits followed by a tab
// in the low bytes of an entry (the first digit lowest: the order of a
// little-endian store) and their number (digits and tab) in the top byte.
// It is built on first use, each entry from that of v/10, in about 0.1 ms.
var smallDecimals = sync.OnceValue(buildSmallDecimals)

func buildSmallDecimals() *[1 << 16]uint64 {
	t := new([1 << 16]uint64)
	for v := range 10 {
		t[v] = uint64('0'+v) | '\t'<<8 | 2<<56
	}
	for v := 10; v < len(t); v++ {
		h := t[v/10]
		l := h >> 56     // digits of v/10, and the tab
		d := 8 * (l - 1) // where the tab of v/10 is
		h &^= 0xff<<56 | 0xff<<d
		t[v] = h | uint64('0'+v%10)<<d | '\t'<<(d+8) | (l+1)<<56
	}
	return t
}

// pow10 holds the powers of ten that fit in 32 bits.
var pow10 = [...]uint32{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// decimalLen returns the number of decimal digits of v.
func decimalLen(v uint32) int {
	x := v | 1 // the same digits; never 0
	t := bits.Len32(x) * 1233 >> 12
	if x < pow10[t] {
		return t
	}
	return t + 1
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// putDecimal writes v's digits at b[n:] and returns where they end.
func putDecimal(b []byte, n int, v uint32) int {
	end := n + decimalLen(v)
	i := end
	for v >= 100 {
		q := v / 100
		r := 2 * (v - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[2*v], digitPairs[2*v+1]
	} else {
		b[i-1] = byte('0' + v)
	}
	return end
}
