package intersect

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/xsect/xsect/internal/cpufeat"
)

// A Profile is a dispatch: which method Count and Intersect run for two
// sets, by the larger set's size and the ratio of the sizes. The package
// starts with a profile built in for the kind of CPU it runs on (measured
// on such a CPU); package intersect/tune measures one on the running CPU,
// and UseProfile installs it.
//
// Sets whose sizes are within the smallest first step's ratio of each other
// go to that step's method, a block method. For the others the tier is the
// first whose Values reaches the larger set's size (the last beyond them);
// the ratio then picks its step, except that a smaller set of at most
// GallopUpTo values gallops, and that search-simd serves the smaller sets of
// at most SearchPasses passes where the ladder is the last step. Between two
// tiers whose steps both hold the ladder ("ladder-avx512"), the ratio from
// which it serves glides from one tier's to the other's, geometrically in
// the size, and so do the search passes.
type Profile struct {
	// CPU names the processor the profile was measured on, as CPU returns
	// it.
	CPU string `json:"cpu"`
	// Source says where it comes from: "built-in" for the tables compiled
	// into the package, "measured" for one measured by package tune.
	Source string `json:"source"`
	// Tiers are the profile's tiers, in increasing Values.
	Tiers []ProfileTier `json:"tiers"`
}

// A ProfileTier is the steps of a Profile fitted for one size of the
// larger set.
type ProfileTier struct {
	// Values is the size of the larger set the tier was fitted at.
	Values int `json:"values"`
	// Steps are the methods by ratio, in increasing UpTo, the last with
	// UpTo 0. The first is a block method.
	Steps []ProfileStep `json:"steps"`
	// SearchPasses, where the last step is the ladder, is how many passes
	// of search-simd (64 values each) take as long as the ladder's walk:
	// search-simd serves smaller sets of at most that many whole passes.
	// 0: the ladder serves every ratio from its step on.
	SearchPasses float64 `json:"search_passes,omitempty"`
	// GallopUpTo is the largest smaller set that gallops whatever the
	// ratio, from the first tier's size on; 0 for none.
	GallopUpTo int `json:"gallop_up_to,omitempty"`
}

// A ProfileStep is a method and the ratios it serves.
type ProfileStep struct {
	// UpTo is the largest ratio large:small (large <= small*UpTo) the
	// method serves, above the step before, at most 2^31-1; 0 for every
	// ratio beyond.
	UpTo int `json:"up_to"`
	// Method is the method's name, as Methods lists it.
	Method string `json:"method"`
}

// ErrProfile is the error UseProfile returns (wrapped, with what is wrong)
// for a profile it cannot follow on this CPU: no tier, sizes or ratios out
// of order, a method this CPU does not run.
var ErrProfile = errors.New("intersect: invalid profile")

// CPU names the processor this package runs on, as far as the dispatch
// depends on it: the architecture, the vendor, family and model, the L2
// cache, and whether the SIMD methods are built in.
func CPU() string {
	s := runtime.GOARCH
	if cpufeat.Vendor != "" {
		s += fmt.Sprintf(" %s family %d model %d", cpufeat.Vendor, cpufeat.Family, cpufeat.Model)
	}
	if cpufeat.L2Size > 0 {
		s += fmt.Sprintf(", L2 %d KiB", cpufeat.L2Size>>10)
	}
	if !hasSIMD() {
		s += ", portable methods only"
	}
	return s
}

// hasSIMD reports whether this build runs any method beyond the portable
// ones.
func hasSIMD() bool { return len(methods) > 3 }

// ActiveProfile returns the profile Count and Intersect follow now.
func ActiveProfile() Profile {
	p := active.Load().profile
	p.Tiers = slices.Clone(p.Tiers)
	for i := range p.Tiers {
		p.Tiers[i].Steps = slices.Clone(p.Tiers[i].Steps)
	}
	return p
}

// UseProfile makes Count and Intersect follow p from now on, in every
// goroutine; calls already running finish with the profile before. p must
// name only methods this CPU runs; its CPU is not checked (see package
// tune for loading a profile measured on this CPU). The error wraps
// ErrProfile.
func UseProfile(p Profile) error {
	dp, err := profileDispatcher(p)
	if err != nil {
		return err
	}
	active.Store(dp)
	return nil
}

// CheckProfile reports what keeps UseProfile from following p on this CPU,
// as UseProfile would (the error wraps ErrProfile), or nil.
func CheckProfile(p Profile) error {
	_, err := profileDispatcher(p)
	return err
}

// profileDispatcher returns the dispatcher of p, or why there is none.
func profileDispatcher(p Profile) (*dispatcher, error) {
	d, err := profileDispatch(p)
	if err != nil {
		return nil, err
	}
	source := p.Source
	if source == "" {
		source = "measured"
	}
	return newDispatcher(d, profileL2, source)
}

// maxRatio is the largest ratio a step may name: far past any that pays,
// and a product of it and a set's size does not overflow.
const maxRatio = math.MaxInt32

// profileL2 is the L2 size a dispatch built from a Profile is set with:
// its tiers' l2 are then their sizes in values.
const profileL2 = 4

// profileDispatch checks p's shape (sizes and ratios in order, two steps
// or more a tier) and returns it as a dispatch; newDispatcher checks its
// methods.
func profileDispatch(p Profile) (dispatch, error) {
	bad := func(format string, args ...any) (dispatch, error) {
		return nil, fmt.Errorf("%w: %s", ErrProfile, fmt.Sprintf(format, args...))
	}
	if len(p.Tiers) == 0 {
		return bad("no tier")
	}
	d := make(dispatch, len(p.Tiers))
	for i, t := range p.Tiers {
		if t.Values < 0 || i > 0 && t.Values <= p.Tiers[i-1].Values {
			return bad("tier %d: size %d does not increase from the tier before", i, t.Values)
		}
		if len(t.Steps) == 0 {
			return bad("tier %d: no step", i)
		}
		steps := make([]step, len(t.Steps))
		for k, s := range t.Steps {
			last := k == len(t.Steps)-1
			switch {
			case last && s.UpTo != 0:
				return bad("tier %d: the last step's ratio is %d, want 0", i, s.UpTo)
			case !last && s.UpTo < 1:
				return bad("tier %d: step %d's ratio is %d, want 1 or more", i, k, s.UpTo)
			case !last && k > 0 && s.UpTo <= t.Steps[k-1].UpTo:
				return bad("tier %d: step %d's ratio %d does not increase", i, k, s.UpTo)
			case s.UpTo > maxRatio:
				return bad("tier %d: step %d's ratio %d is over %d", i, k, s.UpTo, maxRatio)
			}
			steps[k] = step{upTo: s.UpTo, method: s.Method}
		}
		if len(steps) < 2 {
			return bad("tier %d: one step; want a block method and a method for skewed sets", i)
		}
		if t.SearchPasses < 0 || t.GallopUpTo < 0 {
			return bad("tier %d: negative search passes or gallop size", i)
		}
		d[i] = tier{l2: float64(t.Values), steps: steps, searchPasses: t.SearchPasses, gallopUpTo: t.GallopUpTo}
	}
	return d, nil
}

// profileSteps returns steps as a Profile's.
func profileSteps(steps []step) []ProfileStep {
	ps := make([]ProfileStep, len(steps))
	for i, s := range steps {
		ps[i] = ProfileStep{UpTo: s.upTo, Method: s.method}
	}
	return ps
}
