package allpairs

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/sets"
)

// refPairs is the reference: every pair of r × s (s == nil: i < j in r)
// that q keeps, counted through a map from element to sets and a map of
// pair counts, sorted.
func refPairs(r, s *sets.Collection, q Query) []Pair {
	self := s == nil
	if self {
		s = r
	}
	inv := map[uint32][]int{}
	for j := 0; j < s.Len(); j++ {
		for _, e := range s.Set(j) {
			inv[e] = append(inv[e], j)
		}
	}
	counts := map[[2]int]int{}
	for i := 0; i < r.Len(); i++ {
		for _, e := range r.Set(i) {
			for _, j := range inv[e] {
				if !self || j > i {
					counts[[2]int{i, j}]++
				}
			}
		}
	}
	var out []Pair
	if refKeep(q, 0, 1, 1) {
		// Disjoint pairs may qualify: visit every pair.
		for i := 0; i < r.Len(); i++ {
			j0 := 0
			if self {
				j0 = i + 1
			}
			for j := j0; j < s.Len(); j++ {
				c := counts[[2]int{i, j}]
				if refKeep(q, c, r.SetLen(i), s.SetLen(j)) {
					out = append(out, Pair{I: uint32(i), J: uint32(j), Count: uint32(c)})
				}
			}
		}
	} else {
		for ij, c := range counts {
			if refKeep(q, c, r.SetLen(ij[0]), s.SetLen(ij[1])) {
				out = append(out, Pair{I: uint32(ij[0]), J: uint32(ij[1]), Count: uint32(c)})
			}
		}
	}
	slices.SortFunc(out, sets.ComparePairs)
	return out
}

func refKeep(q Query, c, a, b int) bool {
	if c < q.MinOverlap {
		return false
	}
	if !q.IsContainment() {
		return true
	}
	if a == 0 || b == 0 {
		return false
	}
	m := min(a, b)
	// c/m >= num/den, in big-enough integers for the tests' ratios.
	return uint64(c)*q.Containment.Den >= q.Containment.Num*uint64(m)
}

// refLargest applies Options.Largest to the reference: the kept ids.
func refSelect(c *sets.Collection, dropEmpty bool, largest int) []int {
	var ids []int
	for i := 0; i < c.Len(); i++ {
		if !(dropEmpty && c.SetLen(i) == 0) {
			ids = append(ids, i)
		}
	}
	if largest > 0 && largest < len(ids) {
		slices.SortStableFunc(ids, func(a, b int) int { return c.SetLen(b) - c.SetLen(a) })
		ids = ids[:largest]
		slices.Sort(ids)
	}
	return ids
}

func subset(c *sets.Collection, ids []int) *sets.Collection {
	out := sets.New()
	for _, i := range ids {
		out.Add(c.Set(i))
	}
	return out
}

// refQuery runs the reference with Largest applied, mapping ids back.
func refQuery(r, s *sets.Collection, q Query, largest int) []Pair {
	rid := refSelect(r, q.IsContainment(), largest)
	var sid []int
	var sc *sets.Collection
	if s != nil {
		sid = refSelect(s, q.IsContainment(), largest)
		sc = subset(s, sid)
	}
	ps := refPairs(subset(r, rid), sc, q)
	for x := range ps {
		ps[x].I = uint32(rid[ps[x].I])
		if s == nil {
			ps[x].J = uint32(rid[ps[x].J])
		} else {
			ps[x].J = uint32(sid[ps[x].J])
		}
	}
	sets.SortPairs(ps)
	return ps
}

func randomCollection(rng *rand.Rand, k, universe, maxSize int) *sets.Collection {
	c := sets.New()
	for i := 0; i < k; i++ {
		n := rng.IntN(maxSize + 1)
		s := make([]uint32, n)
		for x := range s {
			s[x] = uint32(rng.IntN(universe))
		}
		c.AddUnsorted(s)
	}
	return c
}

// skewedCollection has a few elements in most sets and set sizes that
// differ by 100x, the shape where heavy/light splits and galloping matter.
func skewedCollection(rng *rand.Rand, k, universe int) *sets.Collection {
	c := sets.New()
	for i := 0; i < k; i++ {
		n := 1 + int(float64(universe/4)*rng.Float64()*rng.Float64()*rng.Float64())
		s := make([]uint32, 0, n+3)
		for x := 0; x < n; x++ {
			s = append(s, uint32(rng.IntN(universe)))
		}
		for h := 0; h < 3; h++ {
			if rng.IntN(10) < 8-2*h {
				s = append(s, uint32(h*7))
			}
		}
		c.AddUnsorted(s)
	}
	return c
}

func techniques(t *testing.T) []string {
	t.Helper()
	names := Techniques()
	for _, want := range []string{"scancount", "merge", "bitmap", "bitmap-dynamic", "mm", "mmjoin", "prefix", "batmap"} {
		if !slices.Contains(names, want) {
			t.Errorf("technique %s is not registered", want)
		}
	}
	return names
}

// checkAll runs every technique that can run the query on the CPU and
// compares its pairs and its count with the reference.
func checkAll(t *testing.T, name string, r, s *sets.Collection, q Query, largest int) {
	t.Helper()
	check(t, name, r, s, q, largest, false)
}

// check is checkAll; quick runs each technique once, on 3 threads, and
// counts only with the planner's choice (for larger inputs).
func check(t *testing.T, name string, r, s *sets.Collection, q Query, largest int, quick bool) {
	t.Helper()
	want := refQuery(r, s, q, largest)
	// Every layout of scan-count.
	for v := 0; v < 3; v++ {
		if quick && v > 0 {
			break
		}
		force := func(plans []scanPlan) scanPlan {
			sp := plans[min(v, len(plans)-1)]
			if sp.blockRows > 0 {
				sp.blockRows = 1 + v%3 // tiny blocks: many of them
			}
			return sp
		}
		got, err := Collect(context.Background(), r, s, q, Options{Technique: "scancount", Threads: 3, Largest: largest, forceScan: force})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: scancount layout %d: %v\n%s", name, v, err, diffPairs(got, want))
		}
	}
	// Tiles taken band by band, without a list of them, as for a million
	// tiny sets.
	for _, tech := range []string{"mm", "merge", "bitmap", "bitmap-dynamic"} {
		if quick {
			break
		}
		got, err := Collect(context.Background(), r, s, q, Options{Technique: tech, Device: "cpu", Threads: 3, Largest: largest, maxListed: 1})
		if errors.Is(err, ErrCannotRun) {
			continue
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %s, tiles band by band: %v\n%s", name, tech, err, diffPairs(got, want))
		}
	}
	// Both layouts of MMJoin's index part, with what the optimiser made
	// heavy.
	if !quick {
		for _, em := range []bool{false, true} {
			force := func(sp *MMJoinSplit) { sp.elementMajor = em }
			got, err := Collect(context.Background(), r, s, q, Options{Technique: "mmjoin", Threads: 3, Largest: largest, forceMMJoin: force})
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s: mmjoin element-major %v: %v\n%s", name, em, err, diffPairs(got, want))
			}
		}
	}
	ran := 0
	for _, tech := range techniques(t) {
		for _, threads := range []int{3, 1} {
			if quick && threads == 1 {
				break
			}
			opt := Options{Device: "cpu", Technique: tech, Threads: threads, Largest: largest}
			got, err := Collect(context.Background(), r, s, q, opt)
			if errors.Is(err, ErrCannotRun) {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", name, tech, err)
			}
			ran++
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %s (%d threads), query %+v: got %d pairs, want %d\n%s", name, tech, threads, q, len(got), len(want), diffPairs(got, want))
			}
			if quick {
				continue
			}
			n, _, err := Count(context.Background(), r, s, q, opt)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("%s: %s: Count = %d, %v; want %d", name, tech, n, err, len(want))
			}
		}
	}
	if ran == 0 {
		t.Fatalf("%s: no technique ran", name)
	}
	// The planner's own choice.
	got, err := Collect(context.Background(), r, s, q, Options{Largest: largest})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%s: auto: %v\n%s", name, err, diffPairs(got, want))
	}
	if n, _, err := Count(context.Background(), r, s, q, Options{Largest: largest}); err != nil || n != int64(len(want)) {
		t.Fatalf("%s: auto: Count = %d, %v; want %d", name, n, err, len(want))
	}
}

func diffPairs(got, want []Pair) string {
	var b strings.Builder
	g := map[[2]uint32]uint32{}
	for _, p := range got {
		g[[2]uint32{p.I, p.J}] = p.Count
	}
	w := map[[2]uint32]uint32{}
	for _, p := range want {
		w[[2]uint32{p.I, p.J}] = p.Count
	}
	n := 0
	for k, c := range w {
		if gc, ok := g[k]; !ok || gc != c {
			if n++; n <= 5 {
				fmt.Fprintf(&b, "  pair %v: got %d (present %v), want %d\n", k, gc, ok, c)
			}
		}
	}
	for k, c := range g {
		if _, ok := w[k]; !ok {
			if n++; n <= 10 {
				fmt.Fprintf(&b, "  extra pair %v count %d\n", k, c)
			}
		}
	}
	if len(got) > 1 {
		for x := 1; x < len(got); x++ {
			if got[x] == got[x-1] {
				fmt.Fprintf(&b, "  duplicate %v\n", got[x])
				break
			}
		}
	}
	return b.String()
}

var queries = []Query{
	{MinOverlap: 1},
	{MinOverlap: 0},
	{MinOverlap: 3},
	{Containment: Ratio{1, 1}},
	{Containment: Ratio{4, 5}},
	{Containment: Ratio{1, 3}, MinOverlap: 2},
	{Containment: Ratio{0, 1}},
}

func edgeCollections() map[string]*sets.Collection {
	return map[string]*sets.Collection{
		"empty":        sets.New(),
		"one set":      sets.FromSets([]uint32{1, 2, 3}),
		"one empty":    sets.FromSets(nil),
		"empty sets":   sets.FromSets(nil, []uint32{1}, nil, []uint32{1, 2}, nil),
		"identical":    sets.FromSets([]uint32{5, 6, 7}, []uint32{5, 6, 7}, []uint32{5, 6, 7}),
		"duplicated":   sets.FromSets([]uint32{1, 9}, []uint32{2}, []uint32{1, 9}, []uint32{2}, []uint32{1, 2, 9}),
		"extremes":     sets.FromSets([]uint32{0, 4294967295}, []uint32{0}, []uint32{4294967295}, []uint32{0, 1, 4294967295}),
		"disjoint":     sets.FromSets([]uint32{1, 2}, []uint32{3, 4}, []uint32{5}),
		"nested":       sets.FromSets([]uint32{1}, []uint32{1, 2}, []uint32{1, 2, 3}, []uint32{1, 2, 3, 4}, []uint32{2, 3}),
		"sparse ids":   sets.FromSets([]uint32{7, 1 << 31, 3e9}, []uint32{7, 3e9}, []uint32{1 << 31}),
		"all elements": sets.FromSets([]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []uint32{3}),
	}
}

func TestEdgeCases(t *testing.T) {
	edges := edgeCollections()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range edges {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		c := edges[name]
		for _, q := range queries {
			checkAll(t, name, c, nil, q, 0)
			checkAll(t, name+" x itself", c, c, q, 0)
			checkAll(t, name+" x nested", c, edges["nested"], q, 0)
		}
	}
}

func TestRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 12; round++ {
		k := 1 + rng.IntN(90)
		u := 1 + rng.IntN(400)
		r := randomCollection(rng, k, u, 1+rng.IntN(60))
		var s *sets.Collection
		if round%3 == 2 {
			s = randomCollection(rng, 1+rng.IntN(70), u, 1+rng.IntN(80))
		}
		q := queries[round%len(queries)]
		largest := 0
		if round%4 == 1 {
			largest = 1 + rng.IntN(k)
		}
		checkAll(t, fmt.Sprintf("random %d", round), r, s, q, largest)
	}
}

func TestSkewed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	r := skewedCollection(rng, 300, 2000)
	s := skewedCollection(rng, 200, 2000)
	for _, q := range []Query{{MinOverlap: 1}, {MinOverlap: 4}, {Containment: Ratio{1, 1}}, {Containment: Ratio{9, 10}}} {
		checkAll(t, "skewed", r, nil, q, 0)
		checkAll(t, "skewed R x S", r, s, q, 0)
	}
}

// refCounts returns the full count matrix of the kept sets.
func checkTiles(t *testing.T, name string, r, s *sets.Collection, largest int) {
	t.Helper()
	rid := refSelect(r, false, largest)
	self := s == nil
	sc := r
	sid := rid
	if !self {
		sid = refSelect(s, false, largest)
		sc = s
	}
	rs, ss := subset(r, rid), subset(sc, sid)
	want := func(x, y int) uint32 {
		if self && x >= y {
			return 0
		}
		in := map[uint32]bool{}
		for _, e := range rs.Set(x) {
			in[e] = true
		}
		var c uint32
		for _, e := range ss.Set(y) {
			if in[e] {
				c++
			}
		}
		return c
	}
	shapes := [][2]int{{1, 1}, {3, 5}, {16, 16}, {1000, 7}, {64, 1000}}
	for _, tech := range techniques(t) {
		for _, sh := range shapes {
			seen := map[[2]int]bool{}
			_, err := Tiles(context.Background(), r, s, sh[0], sh[1], Options{Device: "cpu", Technique: tech, Threads: 3, Largest: largest}, func(tl *Tile) error {
				key := [2]int{tl.Row0, tl.Col0}
				if seen[key] {
					return fmt.Errorf("tile %v twice", key)
				}
				seen[key] = true
				for x := 0; x < tl.Rows; x++ {
					if tl.RowIDs[x] != uint32(rid[tl.Row0+x]) {
						return fmt.Errorf("row id %d = %d, want %d", tl.Row0+x, tl.RowIDs[x], rid[tl.Row0+x])
					}
					for y := 0; y < tl.Cols; y++ {
						if g, w := tl.At(x, y), want(tl.Row0+x, tl.Col0+y); g != w {
							return fmt.Errorf("tile (%d,%d) entry (%d,%d) = %d, want %d", tl.Row0, tl.Col0, x, y, g, w)
						}
					}
				}
				return nil
			})
			if errors.Is(err, ErrCannotRun) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %s tiles %v: %v", name, tech, sh, err)
			}
			// Every tile of the grid with a pair above the diagonal.
			for r0 := 0; r0 < rs.Len(); r0 += sh[0] {
				for c0 := 0; c0 < ss.Len(); c0 += sh[1] {
					need := !self || r0 < min(c0+sh[1], ss.Len())-1
					if need != seen[[2]int{r0, c0}] {
						t.Fatalf("%s: %s tiles %v: tile (%d,%d) delivered %v, want %v", name, tech, sh, r0, c0, seen[[2]int{r0, c0}], need)
					}
				}
			}
		}
	}
}

func TestTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	r := randomCollection(rng, 70, 300, 40)
	s := randomCollection(rng, 45, 300, 60)
	checkTiles(t, "self", r, nil, 0)
	checkTiles(t, "cross", r, s, 0)
	checkTiles(t, "largest", r, s, 20)
	checkTiles(t, "edge", edgeCollections()["empty sets"], nil, 0)
	checkTiles(t, "empty", sets.New(), nil, 0)
}

func TestErrors(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2}, []uint32{2, 3})
	if _, err := NewPlan(c, nil, Query{}, Options{Technique: "frobnicate"}); err == nil || !strings.Contains(err.Error(), "unknown technique") {
		t.Errorf("unknown technique: %v", err)
	}
	if _, err := NewPlan(c, nil, Query{}, Options{Device: "tpu"}); err == nil {
		t.Error("unknown device accepted")
	}
	if _, err := NewPlan(c, nil, Query{MinOverlap: -1}, Options{}); err == nil {
		t.Error("negative overlap accepted")
	}
	// A bitmap over a huge universe is refused with a reason, not a crash.
	big := sets.New()
	for i := 0; i < 40; i++ {
		s := make([]uint32, 0, 20000)
		for x := 0; x < 20000; x++ {
			s = append(s, uint32(i*20000+x))
		}
		big.Add(s)
	}
	_, err := NewPlan(big, nil, Query{MinOverlap: 1}, Options{Technique: "mm", Memory: 1 << 20})
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "need") {
		t.Errorf("mm over a huge universe: %v", err)
	}
	// The prefix filter needs a threshold.
	if _, err := NewPlan(c, nil, Query{MinOverlap: 0}, Options{Technique: "prefix"}); !errors.Is(err, ErrCannotRun) {
		t.Errorf("prefix without threshold: %v", err)
	}
	// No GPU engine is registered in this package.
	if _, err := NewPlan(c, nil, Query{}, Options{Device: "gpu"}); !errors.Is(err, ErrCannotRun) {
		t.Errorf("gpu: %v", err)
	}
	// A callback's error stops the join and comes back.
	boom := errors.New("boom")
	_, err = Join(context.Background(), c, nil, Query{MinOverlap: 0}, Options{}, func([]Pair) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("callback error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rng := rand.New(rand.NewPCG(1, 1))
	many := randomCollection(rng, 500, 1000, 30)
	if _, _, err := Count(ctx, many, nil, Query{MinOverlap: 1}, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestParseRatio(t *testing.T) {
	cases := []struct {
		in   string
		want Ratio
		ok   bool
	}{
		{"1", Ratio{1, 1}, true},
		{"0.8", Ratio{4, 5}, true},
		{"2/3", Ratio{2, 3}, true},
		{"5e-1", Ratio{1, 2}, true},
		{"0", Ratio{0, 1}, true},
		{"-0.5", Ratio{}, false},
		{"x", Ratio{}, false},
		{"1.5", Ratio{}, false},
		{"1.0000000001", Ratio{}, false},
		{"10/10", Ratio{1, 1}, true},
		{"0.1234567890123456789012345", Ratio{}, false},
	}
	for _, c := range cases {
		got, err := ParseRatio(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseRatio(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestNeedExact(t *testing.T) {
	// 0.9 at size 19 needs 17.1 -> 18; 1/3 at size 3 needs exactly 1.
	for _, c := range []struct {
		r    Ratio
		size int
		want uint32
	}{{Ratio{9, 10}, 19, 18}, {Ratio{1, 3}, 3, 1}, {Ratio{1, 1}, 7, 7}, {Ratio{0, 1}, 5, 0}, {Ratio{3, 2}, 4, 5}, {Ratio{1<<63 + 1, 1<<63 + 2}, 1<<32 - 1, 1<<32 - 1}} {
		if got := needFor(Query{Containment: c.r}, c.size); got != c.want {
			t.Errorf("needFor(%v, %d) = %d, want %d", c.r, c.size, got, c.want)
		}
	}
}

// loadText reads a data file of one set per line (gzip if .gz), at most
// limit sets.
func loadText(t testing.TB, path string, limit int) *sets.Collection {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("real data file missing: %v", err)
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		rd = z
	}
	c := sets.New()
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var s []uint32
	for sc.Scan() && (limit <= 0 || c.Len() < limit) {
		s = s[:0]
		for _, f := range strings.Fields(sc.Text()) {
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			s = append(s, uint32(v))
		}
		c.AddUnsorted(s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRealData(t *testing.T) {
	files := []struct {
		name  string
		limit int
	}{
		{"fimi/retail.dat", 1500},
		{"fimi/chess.dat", 400},
		{"fimi/BMS2.dat", 1500},
		{"fimi/kosarak_head36682.dat", 1200},
		{"containment/msweb.data.test.sets", 1500},
		{"roaring/wikileaks-noquotes.sets", 0},
	}
	if testing.Short() {
		files = files[:2]
	}
	for _, f := range files {
		c := loadText(t, settest.SharedData(t, f.name), f.limit)
		check(t, f.name, c, nil, Query{MinOverlap: 1}, 0, true)
		check(t, f.name+" containment", c, nil, Query{Containment: Ratio{1, 1}}, 0, true)
		check(t, f.name+" containment 0.7", c, nil, Query{Containment: Ratio{7, 10}}, 0, true)
		check(t, f.name+" largest", c, nil, Query{MinOverlap: 2}, 300, true)
	}
	r := loadText(t, settest.SharedData(t, "containment/msweb.data.train.sets"), 800)
	s := loadText(t, settest.SharedData(t, "containment/msweb.data.test.sets"), 900)
	check(t, "msweb test x train", s, r, Query{Containment: Ratio{1, 1}}, 0, true)
	check(t, "msweb test x train overlap", s, r, Query{MinOverlap: 2}, 0, true)
}

func TestExplain(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	c := randomCollection(rng, 50, 100, 20)
	p, err := NewPlan(c, nil, Query{MinOverlap: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.Explain(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"universe", "scancount", "mm", "choice"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Explain lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMMJoinProduct runs MMJoin with an external product, as a device
// engine would, with splits that make many elements heavy.
func TestMMJoinProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	r := skewedCollection(rng, 150, 300)
	s := skewedCollection(rng, 120, 300)
	for _, sc := range []*sets.Collection{nil, s} {
		for _, q := range []Query{{MinOverlap: 1}, {MinOverlap: 0}, {Containment: Ratio{1, 2}}} {
			want := refQuery(r, sc, q, 0)
			plan, err := NewPlan(r, sc, q, Options{Technique: "mmjoin", Threads: 3})
			if err != nil {
				t.Fatal(err)
			}
			p := plan.Problem
			for _, em := range []bool{false, true} {
				p.forceMMJoin = func(sp *MMJoinSplit) { sp.elementMajor = em }
				split := optimiseSplit(p, 1e-6, 0)
				p.forceMMJoin = nil
				if len(split.Columns) == 0 {
					t.Fatal("no heavy columns with a free product")
				}
				inCols := map[uint32]bool{}
				for _, e := range split.Columns {
					inCols[e] = true
				}
				var calls atomic.Int64
				product := func(_ context.Context, row0, rows, col0, cols int, dst []uint32) error {
					calls.Add(1)
					for x := 0; x < rows; x++ {
						a := p.R.Set(int(split.HeavyR[row0+x]))
						for y := 0; y < cols; y++ {
							b := p.S.Set(int(split.HeavyS[col0+y]))
							var n uint32
							for _, e := range a {
								if inCols[e] && slices.Contains(b, e) {
									n++
								}
							}
							dst[x*cols+y] = n
						}
					}
					return nil
				}
				var mu sync.Mutex
				var got []Pair
				out := &Output{p: p, sink: func(b []Pair) error {
					mu.Lock()
					got = append(got, b...)
					mu.Unlock()
					return nil
				}}
				if err := RunMMJoin(context.Background(), p, out, split, product); err != nil {
					t.Fatal(err)
				}
				sets.SortPairs(got)
				if !slices.Equal(got, want) || calls.Load() == 0 {
					t.Fatalf("self %v query %+v element-major %v: %d calls\n%s", sc == nil, q, em, calls.Load(), diffPairs(got, want))
				}
			}
		}
	}
}

// TestIndexFills checks the two ways of building an inverted index against
// each other, on a universe large enough for the bucketed one, with small
// rounds so that sets straddle them.
func TestIndexFills(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	c := randomCollection(rng, 400, 1<<19, 6000)
	df := make([]uint32, 1<<19)
	for _, e := range c.Elements {
		df[e]++
	}
	want := buildIndex(1, c, len(df), df, true) // the direct fill
	for _, threads := range []int{1, 3} {
		chunk := radixChunk
		if threads == 3 {
			chunk = 50000 // many rounds, sets straddling them
		}
		got := &index{start: want.start, post: make([]uint32, len(want.post))}
		got.fillRadix(threads, c, chunk)
		if !slices.Equal(got.post, want.post) {
			t.Fatalf("%d threads: bucketed lists differ from direct ones", threads)
		}
		// And through buildIndex, which takes the bucketed path here.
		if x := buildIndex(threads, c, len(df), df, false); len(want.post) < radixChunk/8 || !slices.Equal(x.post, want.post) {
			t.Fatalf("%d threads: buildIndex lists differ", threads)
		}
		// A view whose offsets do not start at 0.
		view := &sets.Collection{Offsets: c.Offsets[100:], Elements: c.Elements}
		vdf := make([]uint32, len(df))
		for _, e := range c.Elements[c.Offsets[100]:] {
			vdf[e]++
		}
		a, b := buildIndex(threads, view, len(df), vdf, true), buildIndex(threads, view, len(df), vdf, false)
		if !slices.Equal(a.post, b.post) {
			t.Fatalf("%d threads: lists of a view differ", threads)
		}
	}
}

// FuzzParseRatio checks that accepted thresholds are exact and reduced.
func FuzzParseRatio(f *testing.F) {
	for _, s := range []string{"1", "0.8", "2/3", "5e-1", "0", "-1", "x", "1e400", "3/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRatio(s)
		if err != nil {
			return
		}
		var want big.Rat
		if _, ok := want.SetString(strings.TrimSpace(s)); !ok {
			t.Fatalf("%q accepted but not a number", s)
		}
		got := new(big.Rat).SetFrac(new(big.Int).SetUint64(r.Num), new(big.Int).SetUint64(r.Den))
		if r.Den == 0 || got.Cmp(&want) != 0 || want.Sign() < 0 || want.Cmp(big.NewRat(1, 1)) > 0 {
			t.Fatalf("ParseRatio(%q) = %v, want %v", s, r, &want)
		}
	})
}

// bandOrder gives the tiles of a pair plan's bands, each once: those a
// list of every band's blocks holds.
func TestBandOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for range 500 {
		self := rng.IntN(2) == 0
		kr, ks := rng.IntN(40), rng.IntN(40)
		if self {
			ks = kr
		}
		cols, step := 1+rng.IntN(8), rng.IntN(6)
		var want []Tile
		for c0 := 0; c0 < ks; c0 += cols {
			n := min(cols, ks-c0)
			rows := kr
			if self {
				rows = min(kr, c0+n-1)
			}
			st := rows
			if step > 0 {
				st = step
			}
			for r0 := 0; r0 < rows; r0 += st {
				want = append(want, Tile{Row0: r0, Rows: min(st, rows-r0), Col0: c0, Cols: n})
			}
		}
		o := newBandOrder(self, kr, ks, cols, step)
		var got []Tile
		for i := range o.len() {
			got = append(got, o.at(i))
		}
		key := func(a, b Tile) int { return cmp.Or(cmp.Compare(a.Col0, b.Col0), cmp.Compare(a.Row0, b.Row0)) }
		slices.SortFunc(got, key)
		if !slices.EqualFunc(got, want, func(a, b Tile) bool { return key(a, b) == 0 && a.Rows == b.Rows && a.Cols == b.Cols }) {
			t.Fatalf("self %v, %dx%d, bands of %d, blocks of %d: %v, want %v", self, kr, ks, cols, step, got, want)
		}
	}
}

// TestCancelStopsRun: a run cancelled while it works stops within a row of
// its tiles, not at the end of a tile (a band of columns against every
// row: seconds here), for each technique whose tiles are such bands. The
// runs would take a minute or more; the bound leaves a loaded machine
// seconds to notice the cancel.
func TestCancelStopsRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := randomCollection(rng, 40000, 20000, 200)
	for _, tech := range []string{"merge", "bitmap", "bitmap-dynamic"} {
		plan, err := NewPlan(c, nil, Query{MinOverlap: 1}, Options{Technique: tech, CountOnly: true})
		if err != nil {
			t.Fatalf("%s: %v", tech, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err = plan.Count(ctx)
		if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 5*time.Second {
			t.Errorf("%s cancelled after 100 ms: %v after %v, want context.Canceled within seconds", tech, err, took)
		}
		cancel()
	}
}
