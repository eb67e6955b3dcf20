package intersect

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// aliased is an Intersect call whose dst shares memory with its inputs.
type aliased struct {
	name   string
	dst    []uint32
	inputs [][]uint32 // the sets, inside the same buffer as dst
	prefix []uint32   // dst's content before the call
}

// aliasings lays the sets out in one buffer, with gaps, in the order given
// and reversed, and returns calls with dst at the start of the buffer, at
// the start, in the middle and at the end of each set, with and without a
// prefix, and with a capacity that ends inside a set.
func aliasings(sets ...[]uint32) []aliased {
	var out []aliased
	for _, reversed := range []bool{false, true} {
		order := slices.Clone(sets)
		if reversed {
			slices.Reverse(order)
		}
		var offs []int
		n := 3
		for _, s := range order {
			offs = append(offs, n)
			n += len(s) + 5
		}
		// Each layout gets a fresh buffer: the calls overwrite the sets.
		layout := func() ([]uint32, [][]uint32) {
			buf := make([]uint32, n)
			for i := range buf {
				buf[i] = 1<<32 - 1 - uint32(i)
			}
			in := make([][]uint32, len(sets))
			for k, s := range order {
				copy(buf[offs[k]:], s)
				// full slice expression: a set's capacity ends with it
				v := buf[offs[k] : offs[k]+len(s) : offs[k]+len(s)]
				if reversed {
					in[len(sets)-1-k] = v
				} else {
					in[k] = v
				}
			}
			return buf, in
		}
		add := func(name string, lo, hi, max int) {
			buf, in := layout()
			out = append(out, aliased{
				name:   fmt.Sprintf("%s (reversed %v)", name, reversed),
				dst:    buf[lo:hi:max],
				inputs: in,
				prefix: slices.Clone(buf[lo:hi]),
			})
		}
		add("buffer[:0]", 0, 0, n)
		add("buffer[:3]", 0, 3, n)
		add("buffer[end:]", n, n, n)
		for k, s := range order {
			o, l := offs[k], len(s)
			for _, at := range []int{0, 1, l / 2, l} {
				at = min(at, l)
				add(fmt.Sprintf("set %d [%d:%d]", k, at, at), o+at, o+at, n)
			}
			add(fmt.Sprintf("set %d [:1]", k), o, min(o+1, o+l), n)
			add(fmt.Sprintf("set %d [:0] capacity to its middle", k), o, o, o+l/2)
		}
	}
	return out
}

// checkAliased checks one call's result: the prefix, then want.
func checkAliased(t *testing.T, what string, c aliased, got, want []uint32) {
	t.Helper()
	if len(got) != len(c.prefix)+len(want) || !slices.Equal(got[:len(c.prefix)], c.prefix) || !slices.Equal(got[len(c.prefix):], want) {
		t.Fatalf("%s, dst %s: got %d values, want %d after the prefix of %d", what, c.name, len(got), len(want), len(c.prefix))
	}
}

func TestIntersectAliased(t *testing.T) {
	pairs := testPairs()
	if testing.Short() {
		pairs = pairs[:len(pairs)/4]
	}
	for _, m := range allMethods() {
		t.Run(m.Name, func(t *testing.T) {
			for _, p := range pairs {
				want := reference(p.a, p.b)
				for _, c := range aliasings(p.a, p.b) {
					got := m.Intersect(c.dst, c.inputs[0], c.inputs[1])
					checkAliased(t, p.name, c, got, want)
				}
				// The same set twice.
				a := slices.Clone(p.a)
				if got := m.Intersect(a[:0], a, a); !slices.Equal(got, p.a) {
					t.Fatalf("%s: Intersect(a[:0], a, a) = %d values, want %d", p.name, len(got), len(p.a))
				}
			}
		})
	}
}

func TestIntersectAllAliased(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var groups [][][]uint32
	for _, u := range []uint64{300, 1 << 12, 1 << 20} {
		for _, n := range []int{1, 17, 100, 1000, 5000} {
			groups = append(groups,
				[][]uint32{randomSet(r, n, u), randomSet(r, n/2, u), randomSet(r, 2*n, u)},
				[][]uint32{randomSet(r, n, u), randomSet(r, n, u), randomSet(r, n, u), randomSet(r, n+3, u)})
		}
	}
	for _, m := range allMethods() {
		t.Run(m.Name, func(t *testing.T) {
			for _, g := range groups {
				want := g[0]
				for _, s := range g[1:] {
					want = reference(want, s)
				}
				for _, c := range aliasings(g...) {
					got := m.IntersectAll(c.dst, c.inputs...)
					checkAliased(t, fmt.Sprintf("%d sets of %d", len(g), len(g[0])), c, got, want)
				}
			}
		})
	}
	// The package functions.
	for _, g := range groups {
		want := reference(reference(g[0], g[1]), g[2])
		for _, c := range aliasings(g[:3]...) {
			checkAliased(t, "IntersectAll", c, IntersectAll(c.dst, c.inputs...), want)
		}
	}
}

func TestIntersectParallelAliased(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	// Past parallelMin, so that the parts are really used, and below it.
	for _, p := range []pair{
		{"large", randomSet(r, 100_000, 1<<18), randomSet(r, 150_000, 1<<18)},
		{"large skewed", randomSet(r, 70_000, 1<<20), randomSet(r, 1_000_000, 1<<20)},
		{"small", randomSet(r, 1000, 1<<12), randomSet(r, 3000, 1<<12)},
	} {
		want := reference(p.a, p.b)
		for _, workers := range []int{1, 2, 4} {
			for _, c := range aliasings(p.a, p.b) {
				checkAliased(t, fmt.Sprintf("%s, %d workers", p.name, workers), c, IntersectParallel(c.dst, c.inputs[0], c.inputs[1], workers), want)
			}
		}
	}
}

func TestOverlaps(t *testing.T) {
	buf := make([]uint32, 100)
	for _, c := range []struct {
		name string
		dst  []uint32
		x    []uint32
		want bool
	}{
		{"dst = x[:0]", buf[10:10], buf[10:20], true},
		{"spare capacity ends where x starts", buf[0:5:10], buf[10:20], false},
		{"spare capacity ends one into x", buf[0:5:11], buf[10:20], true},
		{"x ends where the spare capacity starts", buf[20:20], buf[10:20], false},
		{"x ends one into the spare capacity", buf[19:19], buf[10:20], true},
		{"x inside dst's content, no spare capacity", buf[0:50:50], buf[10:20], false},
		{"x inside dst's content, spare capacity after", buf[0:50], buf[10:20], false},
		{"x inside the spare capacity", buf[0:0], buf[10:20], true},
		{"x empty", buf[0:0], buf[10:10], false},
		{"dst nil", nil, buf[10:20], false},
		{"another array", make([]uint32, 0, 100), buf, false},
	} {
		if got := overlaps(c.dst, c.x); got != c.want {
			t.Errorf("%s: overlaps = %v, want %v", c.name, got, c.want)
		}
	}
}
