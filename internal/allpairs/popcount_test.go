package allpairs

import (
	"math/rand/v2"
	"testing"
)

// refAndCount is the bit-by-bit reference of the kernels.
func refAndCount(a, b []uint64) int {
	n := 0
	for i := range a {
		for x := 0; x < 64; x++ {
			if a[i]>>x&1 == 1 && b[i]>>x&1 == 1 {
				n++
			}
		}
	}
	return n
}

func randomWords(rng *rand.Rand, n int) []uint64 {
	w := make([]uint64, n)
	for i := range w {
		switch rng.IntN(4) {
		case 0:
			w[i] = ^uint64(0)
		case 1:
			w[i] = 0
		default:
			w[i] = rng.Uint64()
		}
	}
	return w
}

func TestPopcountKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	impls := []struct {
		name     string
		andCount func(a, b []uint64) int
		and4x4   func(a, b []uint64, stride, n int, out *[16]uint64)
	}{
		{"generic", andCountGeneric, and4x4Generic},
		{"dispatched", andCount, and4x4},
	}
	for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 31, 32, 33, 40, 63, 64, 65, 257} {
		for _, extra := range []int{0, 3} {
			stride := n + extra
			a := randomWords(rng, 4*stride+1)
			b := randomWords(rng, 4*stride+1)
			for _, im := range impls {
				if g, w := im.andCount(a[:n], b[:n]), refAndCount(a[:n], b[:n]); g != w {
					t.Fatalf("%s andCount n=%d: %d, want %d", im.name, n, g, w)
				}
				var out [16]uint64
				for x := range out {
					out[x] = 12345 // must be overwritten
				}
				im.and4x4(a, b, stride, n, &out)
				for r := 0; r < 4; r++ {
					for c := 0; c < 4; c++ {
						w := refAndCount(a[r*stride:][:n], b[c*stride:][:n])
						if out[4*r+c] != uint64(w) {
							t.Fatalf("%s and4x4 n=%d stride=%d (%d,%d): %d, want %d", im.name, n, stride, r, c, out[4*r+c], w)
						}
					}
				}
			}
		}
	}
}

// FuzzPopcountKernels compares the dispatched kernels with the portable
// ones on arbitrary words.
func FuzzPopcountKernels(f *testing.F) {
	f.Add([]byte{0xff, 1, 2, 3}, uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n, extra uint8) {
		stride := int(n) + int(extra%4)
		words := make([]uint64, 4*stride+1)
		for i := range words {
			for b := 0; b < 8 && len(data) > 0; b++ {
				words[i] |= uint64(data[0]) << (8 * b)
				data = data[1:]
			}
		}
		a, b := words, words[1:]
		var got, want [16]uint64
		and4x4(a, b, stride, int(n), &got)
		and4x4Generic(a, b, stride, int(n), &want)
		if got != want {
			t.Fatalf("and4x4 n=%d stride=%d: %v, want %v", n, stride, got, want)
		}
		if g, w := andCount(a[:n], b[:n]), andCountGeneric(a[:n], b[:n]); g != w {
			t.Fatalf("andCount n=%d: %d, want %d", n, g, w)
		}
	})
}

// BenchmarkBitProduct times bitProduct on one column band of 16 against
// 512 rows of the BATMAP paper's n = 16,000 shape (bitmaps of 196 words, 5% of
// the bits set), in word pairs per second.
func BenchmarkBitProduct(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols, words = 512, 16, 196
	bm := &bitmaps{words: words, bits: make([]uint64, (rows+cols)*words)}
	for i := range bm.bits {
		for x := 0; x < 64; x++ {
			if rng.IntN(20) == 0 {
				bm.bits[i] |= 1 << x
			}
		}
	}
	t := Tile{Row0: 0, Rows: rows, Col0: rows, Cols: cols, Counts: make([]uint32, rows*cols)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(t.Counts)
		bitProduct(&t, false, bm, bm)
	}
	b.ReportMetric(float64(b.N)*rows*cols*words/b.Elapsed().Seconds()/1e9, "Gwordpairs/s")
}

// TestMMBlock checks the blocks of the bit-packed product: multiples of 4,
// counts within mmCounts (narrow bitmaps make long rows of blocks), and
// enough of them for the threads where the collection allows.
func TestMMBlock(t *testing.T) {
	for _, words := range []int{0, 1, 3, 196, 256, 1000, 100000} {
		for _, k := range []int{1, 5, 100, 16000, 1000000} {
			for _, threads := range []int{1, 16} {
				rows, cols := mmBlock(words, k, k, threads)
				if rows < 4 || cols < 4 || rows%4 != 0 || cols%4 != 0 {
					t.Errorf("words %d, %d sets: blocks of %dx%d", words, k, rows, cols)
				}
				if rows*cols > mmCounts {
					t.Errorf("words %d, %d sets: blocks of %dx%d hold more than %d counts", words, k, rows, cols, mmCounts)
				}
				if bytes := 8 * min(max(words, 1), chunkWords); rows*bytes > 2*mmRowBytes && rows > 4 || cols*bytes > 2*mmColBytes && cols > 4 {
					t.Errorf("words %d, %d sets: blocks of %dx%d over %d-byte bitmaps", words, k, rows, cols, bytes)
				}
			}
		}
	}
	if rows, cols := mmBlock(196, 16000, 16000, 16); rows != 332 || cols != 164 {
		t.Errorf("the BATMAP instance's n = 16,000: blocks of %dx%d, want the 332x164 measured in docs/BATMAP.md", rows, cols)
	}
}
