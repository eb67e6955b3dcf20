package simjoin

import (
	"context"
	"fmt"
	"testing"

	"github.com/xsect/xsect/internal/simjoin/simjointest"
	"github.com/xsect/xsect/sets"
)

var fuzzThresholds = [...]string{"0.5", "0.9", "0.8", "1", "2/3", "0.7", "1/3", "0.95"}

// FuzzJoin joins small collections drawn from the fuzzer's bytes with
// every algorithm and compares the pairs with the reference. The first
// byte picks the measure, the algorithm, R × S and Distinct, the second
// the threshold; then each byte is an element (its low 5 bits, or the top
// of the range for a high byte, to reach 2^32-1) or, 0xff, the end of a
// set.
func FuzzJoin(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 0xff, 1, 2, 3, 0xff, 2, 3, 4})
	f.Add([]byte{0x13, 1, 1, 2, 0xff, 1, 2, 0xff, 0xff, 0xfe, 0xfd})
	f.Add([]byte{0x2a, 4, 9, 8, 7, 6, 5, 0xff, 9, 8, 7, 6, 0xff, 5, 6, 7, 8, 9})
	f.Add([]byte{0x3f, 2, 1, 0xff, 1, 0xff, 1, 2, 0xff, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 400 {
			return
		}
		mode, ti := data[0], data[1]
		m := Measure(mode & 3)
		alg := algorithms[int(mode>>2&3)%len(algorithms)]
		cross := mode&0x10 != 0
		distinctSets := mode&0x20 != 0
		var th Threshold
		var err error
		if m == Overlap {
			th, err = ParseThreshold(m, fmt.Sprint(1+ti%4))
		} else {
			th, err = ParseThreshold(m, fuzzThresholds[int(ti)%len(fuzzThresholds)])
		}
		if err != nil {
			t.Fatal(err)
		}
		var all [][]uint32
		var cur []uint32
		for _, b := range data[2:] {
			switch {
			case b == 0xff:
				all = append(all, cur)
				cur = nil
			case b >= 0xf0:
				cur = append(cur, 1<<32-1-uint32(b&0x0f))
			default:
				cur = append(cur, uint32(b&31))
			}
		}
		all = append(all, cur)
		r, s := sets.FromSets(all...), (*sets.Collection)(nil)
		if cross {
			half := len(all) / 2
			r, s = sets.FromSets(all[:half]...), sets.FromSets(all[half:]...)
		}
		want := reference(r, s, th, distinctSets)
		pl, err := NewPlan(r, s, Options{Threshold: th, Technique: alg, Distinct: distinctSets, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pl.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		simjointest.ComparePairs(t, fmt.Sprintf("%s %s %s cross=%v distinct=%v", alg, m, th, cross, distinctSets), got, want)
	})
}
