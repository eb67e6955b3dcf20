package pairs

import (
	"context"
	"fmt"

	"github.com/xsect/xsect/intersect"
)

// eclat intersects the tidlists of every pair of frequent items with
// package intersect (SIMD block comparison, or galloping for lists of
// very different lengths): Eclat's vertical approach, restricted to pairs.
// It needs little memory beyond the tidlists.
type eclat struct{ cpu }

func (eclat) Name() string { return "eclat" }

func (eclat) Estimate(d *Data) (Estimate, error) {
	f := d.Frequent()
	// Each tidlist takes part in f-1 intersections.
	steps := float64(d.Occurrences) * float64(max(f-1, 0))
	c := d.unitCosts()
	sec := (steps*c.eclatElement + float64(triangle(f))*c.eclatPair) / float64(d.Threads)
	// The tidlists, the weights' suffix sums, forItems' order.
	mem := d.VerticalBytes() + 8*int64(f+1) + forItemsBytes(f) + writersBytes(d.Threads)
	return Estimate{Seconds: sec, Memory: mem, Detail: fmt.Sprintf("%d intersections, %.3g tidlist elements", triangle(f), steps)}, nil
}

func (eclat) Run(ctx context.Context, d *Data, out *Output) error {
	f := d.Frequent()
	v := d.Vertical()
	writers := make([]*Writer, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
	}
	need := d.MinSupport
	var suffix int64 // Σ support of ranks after a, for the weights
	rest := make([]int64, f+1)
	for a := f - 1; a >= 0; a-- {
		suffix += int64(d.Support[a])
		rest[a] = suffix
	}
	weight := func(a int) int64 { return int64(f-a-1)*int64(d.Support[a]) + rest[a+1] }
	err := forItems(ctx, d.Threads, f, weight, out, "pairs", func(w, a int) {
		ta := v.Set(a)
		wr := writers[w]
		for b := a + 1; b < f; b++ {
			if c := intersect.Count(ta, v.Set(b)); c >= need {
				wr.Add(uint32(a), uint32(b), uint32(c))
			}
		}
	})
	for _, wr := range writers {
		wr.Close()
	}
	return err
}
