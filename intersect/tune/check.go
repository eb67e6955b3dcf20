package tune

import (
	"math"

	"github.com/xsect/xsect/intersect"
)

// A labelled profile is one Check times Count under.
type labelled struct {
	label   string
	profile intersect.Profile
}

// A Judgement is how close Count came to the fastest method under one
// profile, over the pairs Check timed.
type Judgement struct {
	// Label names the profile, as Check was given it.
	Label string
	// Pairs is how many pairs were timed; Within5 and Within10 how many of
	// them Count took at most 5% and 10% longer than the fastest method.
	Pairs, Within5, Within10 int
	// GeoMean is the geometric mean of Count's time over the fastest
	// method's, and Max the largest of them; 1 is as fast as the fastest.
	GeoMean, Max float64
	// Worst is the pair of Max.
	Worst Timing
}

// CheckSizes returns the sizes Check times for a profile fitted at sizes:
// between each two (their geometric mean) and half again past the last,
// which the fit did not see.
func CheckSizes(sizes []int) []int {
	var out []int
	for i := 1; i < len(sizes); i++ {
		out = append(out, int(math.Sqrt(float64(sizes[i-1])*float64(sizes[i]))))
	}
	if n := len(sizes); n > 0 {
		out = append(out, sizes[n-1]*3/2)
	}
	return out
}

// Check times Count under each profile (labels[i] names profiles[i]) and
// the candidate methods on pairs of o.Sizes (which should be sizes the
// profiles were not fitted at: CheckSizes), the ratios of o.Ratios and the
// tiny smaller sets, at selectivity 30% and from the seed o.Seed+1: shapes
// a fit at 1% did not see. It returns the timings and, per profile, how far
// Count was from the fastest method. The dispatch in use before is in use
// after.
func Check(o Options, labels []string, profiles []intersect.Profile) ([]Timing, []Judgement, error) {
	o = o.withDefaults()
	var autos []labelled
	for i, p := range profiles {
		autos = append(autos, labelled{labels[i], p})
	}
	var plan []shape
	for _, size := range o.Sizes {
		plan = append(plan, shapes(size, o.Ratios, 0.3)...)
	}
	ts, err := timeShapes(plan, o, o.Seed+1, autos)
	if err != nil {
		return nil, nil, err
	}
	return ts, Judge(ts, labels), nil
}

// Judge returns, for each label, how Count's timings under it ("auto " +
// label) compare with the fastest method's on the same pair.
func Judge(ts []Timing, labels []string) []Judgement {
	type key struct{ large, small int }
	best := map[key]float64{}
	for _, t := range ts {
		k := key{t.Large, t.Small}
		if b, ok := best[k]; timed(t.Method) && (!ok || t.Seconds < b) {
			best[k] = t.Seconds
		}
	}
	var js []Judgement
	for _, l := range labels {
		j := Judgement{Label: l}
		var logs float64
		for _, t := range ts {
			b, ok := best[key{t.Large, t.Small}]
			if t.Method != "auto "+l || !ok || b <= 0 {
				continue
			}
			q := t.Seconds / b
			j.Pairs++
			logs += math.Log(q)
			if q <= 1.05 {
				j.Within5++
			}
			if q <= 1.10 {
				j.Within10++
			}
			if q > j.Max {
				j.Max, j.Worst = q, t
			}
		}
		if j.Pairs > 0 {
			j.GeoMean = math.Exp(logs / float64(j.Pairs))
		}
		js = append(js, j)
	}
	return js
}

// Sizes returns the sizes p's tiers were fitted at.
func Sizes(p intersect.Profile) []int {
	var s []int
	for _, t := range p.Tiers {
		s = append(s, t.Values)
	}
	return s
}
