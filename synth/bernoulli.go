package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/xsect/xsect/sets"
)

// GenerateBernoulli returns the synthetic instance of the BATMAP paper's
// frequent-pair experiments: every transaction holds each of the items
// 0..n-1 with probability p, independently, and transactions are added
// until they hold at least occurrences items in all. The same arguments
// give the same transactions. Unlike Generate it draws with the math
// package's logarithms (which keeps the instances measured in
// docs/BATMAP.md), so another architecture than amd64 may differ in rare
// positions.
func GenerateBernoulli(n int, p float64, occurrences int64, seed uint64) (*sets.Collection, error) {
	if n < 1 || int64(n) > 1<<32 {
		return nil, fmt.Errorf("synth: %d items: want 1 to 2^32", n)
	}
	if !(p > 0 && p <= 1) {
		return nil, fmt.Errorf("synth: item probability %v: want (0, 1]", p)
	}
	if occurrences < 0 || occurrences > 1<<36 {
		return nil, fmt.Errorf("synth: %d occurrences: want 0 to 2^36", occurrences)
	}
	rng := rand.New(rand.NewPCG(seed, 0xba7a))
	c := &sets.Collection{Offsets: []uint64{0}, Elements: make([]uint32, 0, occurrences+int64(float64(n)*p)+64)}
	// The gap to the next item is geometric: skip = ⌊ln U / ln(1-p)⌋.
	lq := math.Log1p(-p)
	for int64(len(c.Elements)) < occurrences {
		if p == 1 {
			for x := range n {
				c.Elements = append(c.Elements, uint32(x))
			}
		} else {
			x := -1
			for {
				u := 1 - rng.Float64() // (0, 1]
				g := math.Log(u) / lq
				if g >= float64(n-x-1) {
					break
				}
				x += 1 + int(g)
				c.Elements = append(c.Elements, uint32(x))
			}
		}
		c.Offsets = append(c.Offsets, uint64(len(c.Elements)))
	}
	return c, nil
}
