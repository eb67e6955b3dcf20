package intersect

import (
	"fmt"
	"math"
	"sync/atomic"
)

// The dispatch: which method Count and Intersect run for sets of given
// sizes. Each architecture's init sets its own (intersect_amd64.go: tables
// per kind of CPU, measured there); UseProfile replaces it with one
// measured on the running CPU (package intersect/tune).

// A step of a dispatch: method serves the size ratios large:small up to
// upTo (large <= small*upTo), above the step before it; the last step's
// upTo is 0 and it serves every ratio beyond.
type step struct {
	upTo   int
	method string
}

// A tier is the steps, in increasing ratio, fitted for a larger set of l2
// times the core's L2 cache (cpufeat.L2Size) in bytes (a Profile's tiers
// are set with an L2 of profileL2, so that l2 is their size). The first tier
// serves every smaller set and the last every larger one. A size between
// two tiers' takes the larger tier's steps, but where both have a ladder
// step its ladder starts between the two tiers' starts, geometrically in
// the size (glideStarts): the ladder wins from a lower ratio the nearer the
// larger set is, and that ratio moves steadily with the size (1:5 to 1:64
// from 1 to 8 MB on Zen 4).
//
// Where a tier's last step is the ladder, search-simd takes over from it
// for the smallest sets: at ratios this high the ladder's time hardly
// depends on the smaller set (it walks the larger at its longest stride),
// while search-simd searches 64 values at a time, each pass costing about
// the same. So search-simd serves a smaller set of at most searchPasses
// passes (rounded down): the ladder's time over a pass's, fitted at the
// tier's size, geometric in the size between two tiers that both have
// one, and growing with the size beyond the last tier, as the ladder's
// walk does. 0: the ladder serves every ratio from its start.
//
// And a smaller set of at most gallopUpTo values gallops, whatever the
// ratio: a few binary searches from one value to the next cost less than
// a pass of search-simd or the ladder's walk. It holds from the first
// tier's size on (below, the ladder's walk is short), the larger tier's
// between two.
type tier struct {
	l2           float64
	steps        []step
	searchPasses float64
	gallopUpTo   int
}

// A dispatch is the methods Count and Intersect run on one kind of CPU:
// its tiers in increasing size (one tier serves every size). Each tier's
// first step is a block method.
type dispatch []tier

// glideMethod is the method whose start glides between tiers.
const glideMethod = "ladder-avx512"

// glidePoints is how many sizes between two tiers' have their ladder start
// computed ahead.
const glidePoints = 64

// A dispatcher is what Count and Intersect run: the block method for sets
// within ratio of each other, and pick's method for the others.
type dispatcher struct {
	ratio                   int // skewed: small*ratio < large
	blockCount, gallopCount func(a, b []uint32) int
	blockIntersect          func(dst, a, b []uint32) []uint32
	gallopIntersect         func(dst, a, b []uint32) []uint32
	pick                    func(small, large int) Method // the method of the skewed sets
	profile                 Profile                       // what it was built from
}

// skewed reports whether sets of these sizes go to pick's method rather
// than the block method.
func (d *dispatcher) skewed(small, large int) bool { return small*d.ratio < large }

// active is the dispatcher in use; UseProfile replaces it while other
// goroutines intersect.
var active atomic.Pointer[dispatcher]

func init() {
	// The portable dispatch; the architecture files replace it with
	// theirs in their init.
	setDispatch(portableDispatch, 0, "built-in")
}

// portableDispatch is the methods of every CPU: the branch-free merge up
// to 1:32, galloping beyond.
var portableDispatch = dispatch{{0, []step{{32, "branchless"}, {0, "gallop"}}, 0, 0}}

// setDispatch makes Count and Intersect use d's methods by the size of the
// larger set and the ratio, for a core whose L2 cache holds l2Size bytes
// (0: unknown, and only the last tier is used), and says where d comes
// from (source, as in Profile.Source).
func setDispatch(d dispatch, l2Size int, source string) {
	dp, err := newDispatcher(d, l2Size, source)
	if err != nil {
		panic(err) // a built-in table this CPU cannot follow
	}
	active.Store(dp)
}

// newDispatcher returns the dispatcher of d, for a core whose L2 cache holds
// l2Size bytes. Sizes within the smallest first step's ratio of each other
// go to that step's block method directly, the others through the tiers.
// It fails, with ErrProfile, where a tier names a method this CPU lacks,
// starts with one that is not a block method, or has search passes where
// its last step is not the ladder or this CPU has no search-simd.
func newDispatcher(d dispatch, l2Size int, source string) (*dispatcher, error) {
	bad := func(i int, format string, args ...any) (*dispatcher, error) {
		return nil, fmt.Errorf("%w: tier %d: %s", ErrProfile, i, fmt.Sprintf(format, args...))
	}
	dp := &dispatcher{profile: Profile{CPU: CPU(), Source: source}}
	type resolved struct {
		size  int // the larger set, in values, the tier was fitted for
		steps []step
		ms    []Method
		glide int   // the index of its ladder step, or -1
		start []int // from the tier before: the ladder's start at glidePoints sizes, or nil
		// The smaller sets search-simd takes over from the ladder: up to
		// searchUpTo values, or from the tier before up to searchUpTos[p]
		// at glidePoints sizes; searchPasses and gallopUpTo are the tier's.
		searchUpTo   int
		searchUpTos  []int
		searchPasses float64
		gallopUpTo   int
	}
	search, _ := methodNamed("search-simd")
	gallop, _ := methodNamed("gallop")
	ts := make([]resolved, len(d))
	for i, t := range d {
		ms := make([]Method, len(t.steps))
		for k, st := range t.steps {
			m, ok := methodNamed(st.method)
			if !ok {
				return bad(i, "this CPU has no method %q", st.method)
			}
			ms[k] = m
		}
		if !ms[0].Block {
			return bad(i, "the first step's method %s is not a block method", ms[0].Name)
		}
		ts[i] = resolved{size: int(t.l2 * float64(l2Size) / 4), steps: t.steps, ms: ms, glide: -1,
			searchPasses: t.searchPasses, gallopUpTo: t.gallopUpTo}
		for k, st := range t.steps {
			if k > 0 && st.method == glideMethod {
				ts[i].glide = k
				break
			}
		}
		if t.searchPasses > 0 {
			if t.steps[len(t.steps)-1].method != glideMethod || search.Count == nil {
				return bad(i, "search passes where the last step is not %s, or without search-simd", glideMethod)
			}
			ts[i].searchUpTo = searchBatch * int(t.searchPasses)
		}
		if i > 0 && ts[i].size > ts[i-1].size {
			if ts[i].glide > 0 && ts[i-1].glide > 0 {
				ts[i].start = glideStarts(ts[i-1].size, ts[i].size, ts[i-1].steps[ts[i-1].glide-1].upTo, t.steps[ts[i].glide-1].upTo)
			}
			if t.searchPasses > 0 && d[i-1].searchPasses > 0 {
				ts[i].searchUpTos = searchUpTos(ts[i-1].size, ts[i].size, d[i-1].searchPasses, t.searchPasses)
			}
		}
		if dp.ratio == 0 || t.steps[0].upTo < dp.ratio {
			dp.ratio = t.steps[0].upTo
			dp.blockCount, dp.blockIntersect = ts[i].ms[0].Count, ts[i].ms[0].Intersect
		}
	}
	last := &ts[len(ts)-1]
	pick := func(small, large int) Method {
		i := 0
		for i < len(ts)-1 && large > ts[i].size {
			i++
		}
		t := &ts[i]
		if small <= t.gallopUpTo && large >= ts[0].size {
			return gallop
		}
		// t is the first tier whose size reaches large, so the one before
		// it, if any, ends below large; at t's own size t serves alone.
		var k int
		var p int // where large lies between the tier before and t
		between := i > 0 && large < t.size
		if between {
			lo := ts[i-1].size
			p = (large - lo - 1) * glidePoints / (t.size - lo)
		}
		switch {
		case t.start == nil || !between:
			k = stepFor(t.steps, small, large)
		case small*t.start[p] >= large:
			// Between two tiers: the steps before the ladder end where it
			// starts here.
			k = stepFor(t.steps[:t.glide], small, large)
		default:
			k = t.glide + stepFor(t.steps[t.glide:], small, large)
		}
		if k < len(t.ms)-1 || t.searchUpTo == 0 {
			return t.ms[k]
		}
		upTo := t.searchUpTo
		switch {
		case between && t.searchUpTos != nil:
			upTo = t.searchUpTos[p]
		case large > t.size && t.size > 0:
			// Beyond the last tier the ladder's walk grows with the size.
			upTo = searchBatch * int(t.searchPasses*float64(large)/float64(t.size))
		}
		if small <= upTo {
			return search
		}
		return t.ms[k]
	}
	if len(ts) == 1 && len(last.ms) == 2 && last.searchUpTo == 0 && last.gallopUpTo == 0 {
		dp.gallopCount, dp.gallopIntersect = last.ms[1].Count, last.ms[1].Intersect
	} else {
		dp.gallopCount = func(a, b []uint32) int { return pick(len(a), len(b)).Count(a, b) }
		dp.gallopIntersect = func(dst, a, b []uint32) []uint32 { return pick(len(a), len(b)).Intersect(dst, a, b) }
	}
	dp.pick = pick
	for _, t := range ts {
		dp.profile.Tiers = append(dp.profile.Tiers, ProfileTier{Values: t.size, Steps: profileSteps(t.steps),
			SearchPasses: t.searchPasses, GallopUpTo: t.gallopUpTo})
	}
	return dp, nil
}

// searchBatch is how many values of the smaller set search-simd searches
// at once (asm/intersect/search.go).
const searchBatch = 64

// stepFor returns the index of the step of steps that serves sets of these
// sizes: the first whose upTo covers their ratio, or the last.
func stepFor(steps []step, small, large int) int {
	for k, st := range steps[:len(steps)-1] {
		if small*st.upTo >= large {
			return k
		}
	}
	return len(steps) - 1
}

// geometric returns glidePoints values at sizes evenly spaced in (lo, hi],
// from loV at lo to hiV at hi, geometric in the size.
func geometric(lo, hi int, loV, hiV float64) []float64 {
	vs := make([]float64, glidePoints)
	for p := range vs {
		size := float64(lo) + (float64(p)+0.5)*float64(hi-lo)/glidePoints
		t := math.Log(size/float64(lo)) / math.Log(float64(hi)/float64(lo))
		vs[p] = math.Exp((1-t)*math.Log(loV) + t*math.Log(hiV))
	}
	return vs
}

// glideStarts returns the ratio from which the ladder serves at glidePoints
// sizes evenly spaced in (lo, hi], where it starts from loStart at lo and
// hiStart at hi: geometric in the size.
func glideStarts(lo, hi, loStart, hiStart int) []int {
	starts := make([]int, glidePoints)
	for p, v := range geometric(lo, hi, float64(loStart), float64(hiStart)) {
		starts[p] = int(math.Round(v))
	}
	return starts
}

// searchUpTos returns the largest smaller set search-simd serves at
// glidePoints sizes evenly spaced in (lo, hi], from whole passes of
// loPasses at lo to hiPasses at hi, geometric in the size.
func searchUpTos(lo, hi int, loPasses, hiPasses float64) []int {
	upTos := make([]int, glidePoints)
	for p, v := range geometric(lo, hi, loPasses, hiPasses) {
		upTos[p] = searchBatch * int(v)
	}
	return upTos
}
