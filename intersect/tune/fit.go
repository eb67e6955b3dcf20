package tune

import (
	"math"
	"slices"
	"strings"

	"github.com/xsect/xsect/intersect"
)

// switchCost is what a change of method between two ratios costs the
// fit, in the logarithm of the time lost at one ratio: a method must gain
// more than that over the ratios it serves to be switched to (and twice
// that to be switched to and back). Closer timings are within the noise of
// a shared machine, and switching on them only moves the crossovers about.
const switchCost = 0.05

// The methods the dispatch treats apart.
const (
	ladder = "ladder-avx512"
	search = "search-simd"
	gallop = "gallop"
)

// Fit returns the profile that the timings of Measure call for: a tier at
// each size timed, its steps the methods that lose the least time over the
// ratios timed (each ratio's time over its fastest method's, with a cost
// for every change of method, so that timings within a few percent do not
// switch), each crossover at the geometric mean of the two ratios around
// it. The first step is a block method. Where the ladder is the last step and search-simd beats it only for
// the smallest sets, those become the tier's search passes; the tier
// gallops up to the largest tiny smaller set at which galloping, and every
// smaller one, was fastest.
func Fit(timings []Timing) intersect.Profile {
	p := intersect.Profile{CPU: intersect.CPU(), Source: "measured"}
	bySize := map[int][]Timing{}
	var sizes []int
	for _, t := range timings {
		if _, ok := bySize[t.Large]; !ok {
			sizes = append(sizes, t.Large)
		}
		bySize[t.Large] = append(bySize[t.Large], t)
	}
	slices.Sort(sizes)
	for _, size := range sizes {
		if t, ok := fitTier(size, bySize[size]); ok {
			p.Tiers = append(p.Tiers, t)
		}
	}
	return p
}

// A row is the timings of one pair: seconds by method.
type row struct {
	small int
	ratio int
	times map[string]float64
}

// rows groups ts by the smaller set's size, in increasing ratio (the
// tiny smaller sets apart, in increasing size).
func rows(size int, ts []Timing) (grid, tiny []row) {
	bySmall := map[int]map[string]float64{}
	for _, t := range ts {
		if bySmall[t.Small] == nil {
			bySmall[t.Small] = map[string]float64{}
		}
		bySmall[t.Small][t.Method] = t.Seconds
	}
	for small, times := range bySmall {
		r := row{small, size / small, times}
		if small < 64 {
			tiny = append(tiny, r)
		} else {
			grid = append(grid, r)
		}
	}
	slices.SortFunc(grid, func(a, b row) int { return b.small - a.small })
	slices.SortFunc(tiny, func(a, b row) int { return a.small - b.small })
	// Two smaller sets of one ratio (size/small rounds down): the first.
	grid = slices.CompactFunc(grid, func(a, b row) bool { return a.ratio == b.ratio })
	return grid, tiny
}

// fastest returns the fastest method of r among those keep accepts, and
// its time.
func fastest(r row, keep func(string) bool) (string, float64) {
	best, bt := "", math.Inf(1)
	for m, t := range r.times {
		if keep(m) && (t < bt || t == bt && m < best) {
			best, bt = m, t
		}
	}
	return best, bt
}

// timed reports whether m is a method's timing, not Count's under a
// profile.
func timed(m string) bool { return !strings.HasPrefix(m, "auto ") }

// fitTier fits the tier of size from its timings; false if there are
// none at a ratio that leaves the smaller set 64 values, or no block
// method's at the lowest.
func fitTier(size int, ts []Timing) (intersect.ProfileTier, bool) {
	grid, tiny := rows(size, ts)
	if len(grid) == 0 {
		return intersect.ProfileTier{}, false
	}
	win := methodsByRatio(grid)
	if win == nil {
		return intersect.ProfileTier{}, false // no block method timed
	}
	var t intersect.ProfileTier
	t.Values = size
	var firstSearch int // the ratio index where a last run of search-simd starts
	for i, m := range win {
		if i > 0 && m == win[i-1] {
			continue
		}
		if n := len(t.Steps); n > 0 {
			t.Steps[n-1].UpTo = crossover(grid[i-1].ratio, grid[i].ratio)
		}
		t.Steps = append(t.Steps, intersect.ProfileStep{Method: m})
		firstSearch = i
	}
	if len(t.Steps) == 1 {
		// One method at every ratio: it serves every ratio the grid
		// reached, and the next fastest beyond (the dispatch wants a
		// method for the skewed sets).
		last := grid[len(grid)-1]
		next, _ := fastest(last, func(m string) bool { return timed(m) && m != t.Steps[0].Method })
		if next == "" {
			return intersect.ProfileTier{}, false
		}
		t.Steps[0].UpTo = last.ratio
		t.Steps = append(t.Steps, intersect.ProfileStep{Method: next})
	}
	n := len(t.Steps)
	if n >= 3 && t.Steps[n-1].Method == search && t.Steps[n-2].Method == ladder {
		// search-simd beats the ladder for the smallest sets only: up to
		// between the largest of them and the smallest set the ladder
		// served (the geometric mean), in passes.
		t.SearchPasses = math.Floor(100*math.Sqrt(float64(grid[firstSearch].small)*float64(grid[firstSearch-1].small))/64) / 100
		t.Steps = t.Steps[:n-1]
		t.Steps[n-2].UpTo = 0
	} else if t.Steps[n-1].Method == ladder {
		// The ladder's walk over a pass of search-simd, at the highest
		// ratio timed.
		last := grid[len(grid)-1]
		if tl, ok := last.times[ladder]; ok {
			if ts, ok := last.times[search]; ok && ts > 0 {
				passes := float64((last.small + 63) / 64)
				t.SearchPasses = math.Floor(100*tl/(ts/passes)) / 100
			}
		}
	}
	// Galloping: up to the largest tiny set at which it, and every smaller
	// one, was fastest.
	for _, r := range tiny {
		tg, ok := r.times[gallop]
		if !ok {
			break
		}
		_, bt := fastest(r, func(m string) bool { return timed(m) && m != gallop })
		if tg > bt {
			break
		}
		t.GallopUpTo = r.small
	}
	return t, true
}

// methodsByRatio returns the method of each row: the sequence that loses
// the least time over the rows, the log of each row's time over its
// fastest summed, with switchCost for each change of method. The first
// row's is a block method. nil if no block method was timed there.
func methodsByRatio(grid []row) []string {
	var names []string
	for _, r := range grid {
		for m := range r.times {
			if timed(m) && !slices.Contains(names, m) {
				names = append(names, m)
			}
		}
	}
	slices.Sort(names)
	inf := math.Inf(1)
	cost := make([][]float64, len(grid)) // cost[i][k]: the least for rows to i, ending with names[k]
	from := make([][]int, len(grid))
	for i, r := range grid {
		_, best := fastest(r, timed)
		cost[i], from[i] = make([]float64, len(names)), make([]int, len(names))
		for k, m := range names {
			t, ok := r.times[m]
			switch {
			case !ok || i == 0 && !blockMethod(m):
				cost[i][k] = inf
				continue
			case i == 0:
				cost[i][k] = math.Log(t / best)
				continue
			}
			prev, pk := cost[i-1][k], k
			for j := range names {
				if c := cost[i-1][j] + switchCost; c < prev {
					prev, pk = c, j
				}
			}
			cost[i][k], from[i][k] = prev+math.Log(t/best), pk
		}
	}
	last := len(grid) - 1
	k := slices.Index(cost[last], slices.Min(cost[last]))
	if math.IsInf(cost[last][k], 1) {
		return nil
	}
	win := make([]string, len(grid))
	for i := last; i >= 0; i-- {
		win[i] = names[k]
		k = from[i][k]
	}
	return win
}

// crossover returns the ratio up to which the method fastest at lo serves,
// where another is fastest at hi: their geometric mean, rounded down, at
// least lo.
func crossover(lo, hi int) int {
	return max(lo, int(math.Sqrt(float64(lo)*float64(hi))))
}

// blockMethod reports whether this CPU runs the method called name and it
// is a block method: the first step of a tier must be.
func blockMethod(name string) bool {
	m, err := intersect.Lookup(name)
	return err == nil && m.Block
}
