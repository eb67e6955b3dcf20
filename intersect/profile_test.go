package intersect

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// keepProfile restores, once t ends, the dispatch in use when it began.
func keepProfile(t *testing.T) {
	d := active.Load()
	t.Cleanup(func() { active.Store(d) })
}

// TestActiveProfileRoundTrip checks that the built-in dispatch, read as a
// Profile and installed again, picks the same method for every shape.
func TestActiveProfileRoundTrip(t *testing.T) {
	keepProfile(t)
	p := ActiveProfile()
	if p.Source != "built-in" || p.CPU != CPU() || len(p.Tiers) == 0 {
		t.Fatalf("ActiveProfile() = %+v: want the built-in profile of %q", p, CPU())
	}
	before := active.Load()
	if err := UseProfile(p); err != nil {
		t.Fatalf("UseProfile(ActiveProfile()): %v", err)
	}
	after := active.Load()
	if before == after || after.ratio != before.ratio {
		t.Fatalf("ratio %d after, %d before", after.ratio, before.ratio)
	}
	for _, large := range []int{1, 1000, 100_000, 250_000, 300_000, 393_216, 450_000, 1 << 20, 3_000_000, 10_000_000} {
		for _, small := range []int{1, 2, 4, 8, 12, 16, 24, 64, 65, 192, 193, 1000, 10_000, 100_000} {
			if small > large || small*after.ratio >= large {
				continue
			}
			if b, a := before.pick(small, large).Name, after.pick(small, large).Name; a != b {
				t.Errorf("%d x %d: %s after the round trip, %s before", small, large, a, b)
			}
		}
	}
	if got := ActiveProfile(); !reflect.DeepEqual(got.Tiers, p.Tiers) || got.Source != "built-in" {
		t.Errorf("ActiveProfile after UseProfile = %+v, want %+v", got, p)
	}
}

// TestUseProfileRejects checks that UseProfile refuses a profile it cannot
// follow, with ErrProfile, and keeps the dispatch before.
func TestUseProfileRejects(t *testing.T) {
	keepProfile(t)
	ok := []ProfileStep{{32, "branchless"}, {0, "gallop"}}
	for _, c := range []struct {
		name string
		p    Profile
	}{
		{"no tier", Profile{}},
		{"no step", Profile{Tiers: []ProfileTier{{Values: 10}}}},
		{"one step", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{0, "branchless"}}}}}},
		{"unknown method", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{32, "branchless"}, {0, "quantum"}}}}}},
		{"search first", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{32, "gallop"}, {0, "branchless"}}}}}},
		{"last ratio", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{32, "branchless"}, {64, "gallop"}}}}}},
		{"zero ratio", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{0, "branchless"}, {0, "gallop"}}}}}},
		{"ratios out of order", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{32, "branchless"}, {16, "merge"}, {0, "gallop"}}}}}},
		{"sizes out of order", Profile{Tiers: []ProfileTier{{Values: 100, Steps: ok}, {Values: 100, Steps: ok}}}},
		{"negative size", Profile{Tiers: []ProfileTier{{Values: -1, Steps: ok}}}},
		{"search passes without the ladder", Profile{Tiers: []ProfileTier{{Steps: ok, SearchPasses: 2}}}},
		{"negative gallop", Profile{Tiers: []ProfileTier{{Steps: ok, GallopUpTo: -1}}}},
		{"ratio too large", Profile{Tiers: []ProfileTier{{Steps: []ProfileStep{{maxRatio + 1, "branchless"}, {0, "gallop"}}}}}},
	} {
		before := active.Load()
		err := UseProfile(c.p)
		if !errors.Is(err, ErrProfile) {
			t.Errorf("%s: UseProfile(%+v) = %v, want ErrProfile", c.name, c.p, err)
		}
		if active.Load() != before {
			t.Errorf("%s: the dispatch changed", c.name)
		}
	}
}

// TestUseProfileExact installs random profiles over every method this CPU
// runs, and checks Count and Intersect against the reference: whatever a
// measured profile says, the answers stay exact.
func TestUseProfileExact(t *testing.T) {
	keepProfile(t)
	var blocks, all []string
	for _, m := range Methods() {
		all = append(all, m.Name)
		if m.Block {
			blocks = append(blocks, m.Name)
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	pairs := testPairs()
	for range 8 {
		var p Profile
		values := 0
		for range 1 + r.IntN(3) {
			values += 1 + r.IntN(5000)
			steps := []ProfileStep{{1 + r.IntN(8), blocks[r.IntN(len(blocks))]}}
			for range r.IntN(4) {
				steps = append(steps, ProfileStep{steps[len(steps)-1].UpTo + 1 + r.IntN(100), all[r.IntN(len(all))]})
			}
			steps = append(steps, ProfileStep{0, all[r.IntN(len(all))]})
			p.Tiers = append(p.Tiers, ProfileTier{Values: values, Steps: steps, GallopUpTo: r.IntN(20)})
		}
		if err := UseProfile(p); err != nil {
			t.Fatalf("UseProfile(%+v): %v", p, err)
		}
		if s := ActiveProfile().Source; s != "measured" {
			t.Errorf("a profile without a source: Source %q, want measured", s)
		}
		for _, pr := range pairs {
			checkMethod(t, autoMethod, pr)
			checkMethod(t, autoMethod, pair{pr.name + " swapped", pr.b, pr.a})
		}
		if t.Failed() {
			t.Fatalf("with profile %+v", p)
		}
	}
}
