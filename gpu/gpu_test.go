package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/intersect"
)

// TestPairwise cross-checks every method of the public engine against the
// CPU, on host sets and on resident ones.
func TestPairwise(t *testing.T) {
	gputest.Need(t, Available())
	p, err := OpenPairwise(0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, sizes := range [][2]int{{0, 10}, {1, 1}, {1000, 50000}, {30000, 30000}} {
		a, b := settest.RandomSet(rng, sizes[0], 0, 1<<20), settest.RandomSet(rng, sizes[1], 0, 1<<20)
		want := intersect.Intersect(nil, a, b)
		for _, m := range Methods() {
			got, err := p.Intersect(nil, a, b, m)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%v %v: Intersect = %d elements, %v; want %d", m, sizes, len(got), err, len(want))
			}
			ra, _ := p.Upload(a)
			rb, _ := p.Upload(b)
			n, _, err := p.CountSets(ra, rb, m)
			if err != nil || n != len(want) {
				t.Fatalf("%v %v: CountSets = %d, %v; want %d", m, sizes, n, err, len(want))
			}
			p.Free(ra)
			p.Free(rb)
		}
	}
}

func TestNoGPU(t *testing.T) {
	if Available() == nil {
		t.Skip("a GPU is present")
	}
	if _, err := OpenPairwise(0); err == nil {
		t.Fatal("OpenPairwise succeeded without a GPU")
	}
	if _, err := Devices(); err == nil {
		t.Fatal("Devices succeeded without a GPU")
	}
}
