//go:build amd64 && !purego

package intersect

import (
	"fmt"
	"testing"
)

// TestDispatchTables runs Count and Intersect under every kind of CPU's
// dispatch whose methods this CPU has, across the crossovers of testPairs,
// and checks that every table is well formed on any CPU.
func TestDispatchTables(t *testing.T) {
	tables := map[string][]step{"zen4": zen4Dispatch, "zen5": zen5Dispatch, "intel": intelDispatch, "avx2": avx2Dispatch}
	// Every method the tables may name, whether or not this CPU runs it.
	known := map[string]bool{"avx2": true, "avx512": true, "vp2intersect": true, "gallop": true,
		"search-simd": true, "skip-avx512": true, "lanes-avx512": true, "ladder-avx512": true}
	saved := [...]any{gallopRatio, gallopCount, gallopIntersect, blockCount, blockIntersect}
	defer func() {
		gallopRatio = saved[0].(int)
		gallopCount = saved[1].(func(a, b []uint32) int)
		gallopIntersect = saved[2].(func(dst, a, b []uint32) []uint32)
		blockCount = saved[3].(func(a, b []uint32) int)
		blockIntersect = saved[4].(func(dst, a, b []uint32) []uint32)
	}()
	for name, steps := range tables {
		t.Run(name, func(t *testing.T) {
			if err := checkSteps(steps, known); err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				if _, ok := methodNamed(s.method); !ok {
					t.Skipf("this CPU has no %s", s.method)
				}
			}
			setDispatch(steps)
			for _, p := range testPairs() {
				checkMethod(t, autoMethod, p)
				checkMethod(t, autoMethod, pair{p.name + " swapped", p.b, p.a})
			}
		})
	}
}

// checkSteps reports a table that names an unknown method or whose steps'
// ratios do not increase up to a last step of 0.
func checkSteps(steps []step, known map[string]bool) error {
	if len(steps) < 2 || steps[len(steps)-1].upTo != 0 {
		return fmt.Errorf("%v: want a block step, then steps ending in one of upTo 0", steps)
	}
	for i, s := range steps {
		if !known[s.method] {
			return fmt.Errorf("%v: unknown method %q", steps, s.method)
		}
		if i > 0 && i < len(steps)-1 && s.upTo <= steps[i-1].upTo {
			return fmt.Errorf("%v: step %d's ratio %d does not increase", steps, i, s.upTo)
		}
	}
	return nil
}
