package allpairs

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/sets"
)

// ExpectedPairs estimates how many pairs the caller gets, for the
// estimates of what reporting them costs (ReportSeconds): every pair of a
// tile plan, and otherwise the share of a sample that qualifies, times
// the pairs that can. With one threshold for every pair, only sets of at
// least that many elements can, which in skewed collections leaves a
// small share. The sample is every such pair where there are at most
// expectedSample, else that many drawn at random (the same for the same
// problem). Made once per problem.
func (p *Problem) ExpectedPairs() float64 {
	if _, _, ok := p.Tiled(); ok {
		return float64(p.Stats.Pairs)
	}
	return p.Memo("allpairs.expected", func() any { return expectedPairs(p) }).(float64)
}

// expectedSample bounds ExpectedPairs' sample: at most this many pairs,
// and about expectedElements elements in all (about 4,000 pairs of sets
// of 2,000). Two standard deviations of the share found, from 8192
// pairs, are 22% of a share of 1%, 10% of a share of 5%: enough to tell
// a report that bounds a run from one that does not.
const (
	expectedSample   = 8192
	expectedElements = 1 << 24
)

func expectedPairs(p *Problem) float64 {
	need, constant := p.ConstNeed()
	eligible := func(c *sets.Collection) []int32 {
		var ids []int32
		for i := range c.Len() {
			if !constant || c.SetLen(i) >= int(need) {
				ids = append(ids, int32(i))
			}
		}
		return ids
	}
	er := eligible(p.R)
	es := er
	if !p.Self {
		es = eligible(p.S)
	}
	var pairs float64
	if p.Self {
		pairs = float64(len(er)) * float64(len(er)-1) / 2
	} else {
		pairs = float64(len(er)) * float64(len(es))
	}
	if pairs < 1 {
		return 0
	}
	elems := func(c *sets.Collection, ids []int32) float64 {
		var n int64
		for _, i := range ids {
			n += int64(c.SetLen(int(i)))
		}
		return float64(n) / float64(len(ids))
	}
	var is, js []int32
	if pairs <= expectedSample {
		// Few enough to count them all.
		for a, i := range er {
			for b, j := range es {
				if !p.Self || b > a {
					is, js = append(is, i), append(js, j)
				}
			}
		}
	} else {
		avg := max(elems(p.R, er)+elems(p.S, es), 1)
		n := int(min(expectedSample, max(256, expectedElements/avg)))
		rng := rand.New(rand.NewPCG(uint64(len(er)), uint64(len(es))))
		is, js = make([]int32, n), make([]int32, n)
		for x := range is {
			a, b := randomPair(rng, len(er), len(es), p.Self)
			is[x], js[x] = er[a], es[b]
		}
	}
	n := len(is)
	var hits atomic.Int64
	par.For(n, min(p.Threads, 8), func(lo, hi int) {
		var h int64
		for x := lo; x < hi; x++ {
			i, j := int(is[x]), int(js[x])
			if uint32(intersect.Count(p.R.Set(i), p.S.Set(j))) >= p.Need(i, j) {
				h++
			}
		}
		hits.Add(h)
	})
	return float64(hits.Load()) / float64(n) * pairs
}
