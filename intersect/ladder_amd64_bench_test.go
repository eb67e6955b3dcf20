//go:build amd64 && !purego

package intersect

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var ladderSizes = flag.String("ladder.sizes", "100000,250000,500000,1000000", "BenchmarkLadderKernels: comma-separated sizes of the larger set")

// BenchmarkLadderKernels times Count of every ladder kernel, whatever
// ladderFor would pick, at each size of the larger set and ratio: what
// ladders' ratios and ladderWide come from.
//
//	go test -run - -bench LadderKernels -benchtime 20ms -count 5 ./intersect/ [-args -ladder.sizes 375000,450000]
func BenchmarkLadderKernels(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*ladderSizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2000 {
			b.Fatalf("-ladder.sizes: %q is not a size of at least 2000", f)
		}
		sizes = append(sizes, n)
	}
	for _, large := range sizes {
		for _, ratio := range []int{12, 16, 24, 32, 48, 64, 96, 128, 160, 200, 256, 320, 400, 560, 800, 1400, 2000} {
			x, y := randomPair(large/ratio, large, large/ratio/100)
			for _, l := range ladders {
				b.Run(fmt.Sprintf("n=%s/r=1:%d/stride=%d", sizeName(large), ratio, l.stride), func(b *testing.B) {
					for range b.N {
						e, m := ladderCut(x, y, l.stride)
						n, j := l.count(x[:e], y[:m])
						_ = n + countTail(x[e:], y[j:])
					}
					reportElems(b, len(x)+len(y))
				})
			}
		}
	}
}

// randomPair returns a set of small values and one of large values, drawn
// at random from 100 times as many, that share common values: the gaps
// vary as a random sample's do (benchPair's are nearly even, which orders
// the ladder kernels differently).
func randomPair(small, large, common int) (a, b []uint32) {
	r := rand.New(rand.NewPCG(uint64(small), uint64(large)))
	universe := uint64(100 * large)
	b = randomSet(r, large, universe)
	inA := map[uint32]bool{}
	for _, i := range r.Perm(large)[:common] {
		a = append(a, b[i])
		inA[b[i]] = true
	}
	for len(a) < small {
		v := uint32(r.Uint64N(universe))
		if _, found := slices.BinarySearch(b, v); !found && !inA[v] {
			a = append(a, v)
			inA[v] = true
		}
	}
	slices.Sort(a)
	return a, b
}
