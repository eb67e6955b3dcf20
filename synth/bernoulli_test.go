package synth

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"testing"
)

func TestGenerateBernoulli(t *testing.T) {
	c, err := GenerateBernoulli(1000, 0.05, 100000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	occ := int64(len(c.Elements))
	if occ < 100000 || occ > 100000+1000 {
		t.Fatalf("%d occurrences, want just past 100000", occ)
	}
	// About n·p items a transaction: 100000/50 = 2000 transactions.
	if m := c.Len(); m < 1800 || m > 2200 {
		t.Fatalf("%d transactions, want about 2000", m)
	}
	d, _ := GenerateBernoulli(1000, 0.05, 100000, 1)
	if !slices.Equal(c.Elements, d.Elements) {
		t.Fatal("same seed, different instance")
	}
	full, _ := GenerateBernoulli(5, 1, 12, 1)
	if full.Len() != 3 || len(full.Elements) != 15 {
		t.Fatalf("p = 1: %d transactions, %d occurrences", full.Len(), len(full.Elements))
	}
	for _, bad := range [][3]float64{{0, 0.5, 10}, {10, 0, 10}, {10, 1.5, 10}, {10, math.NaN(), 10}, {10, 0.5, -1}} {
		if _, err := GenerateBernoulli(int(bad[0]), bad[1], int64(bad[2]), 1); err == nil {
			t.Errorf("GenerateBernoulli%v accepted", bad)
		}
	}
}

// TestGenerateBernoulliSame pins instances, so that a change to the
// generator that changes them (and the measurements made on them) shows.
func TestGenerateBernoulliSame(t *testing.T) {
	for _, tc := range []struct {
		n            int
		p            float64
		occurrences  int64
		seed         uint64
		transactions int
		sum          uint64 // FNV-1a of the offsets and elements, little-endian
	}{
		{4000, 0.05, 1e6, 1, 5002, 0xea3c2bbff04e96c0},
		{1000, 0.05, 100000, 1, 1998, 0xf4b756bc94ed5254},
		{8, 0.9, 100000, 5, 13866, 0x461ae105bf66f3d6},
	} {
		c, err := GenerateBernoulli(tc.n, tc.p, tc.occurrences, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		binary.Write(h, binary.LittleEndian, c.Offsets)
		binary.Write(h, binary.LittleEndian, c.Elements)
		if c.Len() != tc.transactions || h.Sum64() != tc.sum {
			t.Errorf("GenerateBernoulli(%d, %v, %d, %d): %d transactions, sum %#x; want %d, %#x",
				tc.n, tc.p, tc.occurrences, tc.seed, c.Len(), h.Sum64(), tc.transactions, tc.sum)
		}
	}
}
