package synth

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xsect/xsect/sets"
)

func generate(t *testing.T, cfg Config) *sets.Collection {
	t.Helper()
	c, err := Generate(cfg)
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	return c
}

func TestParseDist(t *testing.T) {
	for _, d := range []Dist{Uniform, Normal, Zipf} {
		for _, s := range []string{d.String(), strings.ToUpper(d.String())} {
			if got, err := ParseDist(s); err != nil || got != d {
				t.Errorf("ParseDist(%q) = %v, %v", s, got, err)
			}
		}
	}
	if _, err := ParseDist("gauss"); err == nil || !strings.Contains(err.Error(), `"gauss"`) {
		t.Errorf("ParseDist(gauss) = %v", err)
	}
	if s := Dist(7).String(); s != "Dist(7)" {
		t.Errorf("Dist(7) = %s", s)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Sets: 10, Universe: 100, AvgSize: 10}
	for _, tc := range []struct {
		edit func(*Config)
		msg  string
	}{
		{func(c *Config) { c.Sets = -1 }, "Sets = -1"},
		{func(c *Config) { c.Universe = 0 }, "Universe = 0"},
		{func(c *Config) { c.Universe = 1<<32 + 1 }, "Universe = 4294967297"},
		{func(c *Config) { c.AvgSize = -5 }, "AvgSize = -5"},
		{func(c *Config) { c.AvgSize = 101 }, "AvgSize = 101 exceeds Universe = 100"},
		{func(c *Config) { c.Dist = 3 }, "unknown distribution 3"},
		{func(c *Config) { c.SizeSpread = 1.5 }, "SizeSpread = 1.5"},
		{func(c *Config) { c.SizeSpread = math.NaN() }, "SizeSpread = NaN"},
		{func(c *Config) { c.ZipfS = -1 }, "ZipfS = -1"},
		{func(c *Config) { c.ZipfS = math.Inf(1) }, "ZipfS = +Inf"},
		{func(c *Config) { c.Sigma = -0.1 }, "Sigma = -0.1"},
		{func(c *Config) { c.Sigma = 11 }, "Sigma = 11"},
		{func(c *Config) { c.Sets, c.Universe, c.AvgSize = 1<<30, 1<<32, 1<<20 }, "too many"},
	} {
		cfg := ok
		tc.edit(&cfg)
		c, err := Generate(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || c != nil {
			t.Errorf("%+v: %v, want an error saying %q", cfg, err, tc.msg)
		}
	}
}

// check verifies a generated collection against its Config: sizes in the
// promised range, elements distinct, sorted and inside the universe.
func check(t *testing.T, cfg Config, c *sets.Collection) {
	t.Helper()
	if err := c.Validate(); err != nil { // strictly increasing: distinct
		t.Fatalf("%+v: %v", cfg, err)
	}
	if c.Len() != cfg.Sets {
		t.Fatalf("%+v: %d sets", cfg, c.Len())
	}
	full, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := full.sizeRange()
	for i := range c.Len() {
		s := c.Set(i)
		if len(s) < lo || len(s) > hi {
			t.Fatalf("%+v: set %d has %d elements, want %d to %d", cfg, i, len(s), lo, hi)
		}
		if len(s) > 0 && uint64(s[len(s)-1]) >= cfg.Universe {
			t.Fatalf("%+v: set %d has %d, outside the universe", cfg, i, s[len(s)-1])
		}
	}
}

func TestGenerateShapes(t *testing.T) {
	for _, d := range []Dist{Uniform, Normal, Zipf} {
		for _, c := range []struct {
			universe uint64
			avg      int
			spread   float64
		}{
			{1, 0, 0}, {1, 1, 0}, {2, 1, 0}, {2, 2, 0}, {64, 10, 0}, {65, 64, 0}, {65, 65, 0},
			{1000, 0, 0}, {1000, 999, -1}, {1000, 1000, 0}, {1000, 600, 1}, {1000, 100, 1},
			{1 << 26, 1000, 0}, {1<<26 + 1, 1000, 0}, {1 << 32, 1000, 0}, {1 << 32, 100, -1},
			{3_000_000_000, 50_000, 0.1},
		} {
			if d != Uniform && uint64(c.avg)*2 > c.universe && c.avg < int(c.universe) && c.universe > 100 {
				continue // dense non-uniform sets: see TestDrawBudget
			}
			cfg := Config{Sets: 20, Universe: c.universe, AvgSize: c.avg, Dist: d, Seed: 7, SizeSpread: c.spread}
			if d == Normal && c.universe <= 65 {
				cfg.Sigma = 1 // a narrow normal does not reach every element of a tiny universe
			}
			check(t, cfg, generate(t, cfg))
		}
	}
}

func TestSizes(t *testing.T) {
	cfg := Config{Sets: 20000, Universe: 1 << 20, AvgSize: 100, Seed: 3}
	c := generate(t, cfg)
	check(t, cfg, c)
	st := sets.Measure(c)
	if math.Abs(st.AvgSize-100) > 0.2 || st.MinSize != 75 || st.MaxSize != 125 {
		t.Errorf("sizes: avg %v, min %d, max %d; want about 100, 75, 125", st.AvgSize, st.MinSize, st.MaxSize)
	}
	// Uniform on [75, 125]: each of 51 sizes about 392 times.
	count := map[int]int{}
	for i := range c.Len() {
		count[c.SetLen(i)]++
	}
	for n := 75; n <= 125; n++ {
		if count[n] < 300 || count[n] > 490 {
			t.Errorf("size %d occurs %d times, want about 392", n, count[n])
		}
	}
	// Fixed sizes, and a range narrowed by the universe's end.
	c = generate(t, Config{Sets: 100, Universe: 1000, AvgSize: 37, SizeSpread: -1, Seed: 3})
	if st := sets.Measure(c); st.MinSize != 37 || st.MaxSize != 37 {
		t.Errorf("fixed sizes: %d to %d", st.MinSize, st.MaxSize)
	}
	c = generate(t, Config{Sets: 2000, Universe: 1000, AvgSize: 990, SizeSpread: 1, Seed: 3})
	if st := sets.Measure(c); st.MinSize != 980 || st.MaxSize != 1000 || math.Abs(st.AvgSize-990) > 0.5 {
		t.Errorf("narrowed sizes: %d to %d, avg %v", st.MinSize, st.MaxSize, st.AvgSize)
	}
}

func hashCollection(c *sets.Collection) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, o := range c.Offsets {
		for i := range b {
			b[i] = byte(o >> (8 * i))
		}
		h.Write(b[:])
	}
	for _, e := range c.Elements {
		h.Write([]byte{byte(e), byte(e >> 8), byte(e >> 16), byte(e >> 24)})
	}
	return h.Sum64()
}

// The same Config gives the same collection, whatever the number of
// workers; the golden hashes pin it across machines and Go versions (they
// change only if the generator does, which breaks reproducing data sets).
func TestDeterminism(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		hash uint64
	}{
		{Config{Sets: 50, Universe: 1e6, AvgSize: 1000, Dist: Uniform, Seed: 1}, 0x59cdf5dd7a515ed6},
		{Config{Sets: 50, Universe: 1e6, AvgSize: 1000, Dist: Normal, Seed: 1}, 0x103ae7e865214239},
		{Config{Sets: 50, Universe: 1e6, AvgSize: 1000, Dist: Zipf, Seed: 1}, 0x9e3efb4d6d6c60c3},
		{Config{Sets: 20, Universe: 1e9, AvgSize: 5000, Dist: Zipf, Seed: 2, ZipfS: 1.3}, 0x755b4077d9606178},
		{Config{Sets: 20, Universe: 1000, AvgSize: 800, Dist: Uniform, Seed: 2}, 0xf9b675f8a34cc6d9},
		{Config{Sets: 20, Universe: 1 << 32, AvgSize: 5000, Dist: Normal, Seed: 2, Sigma: 0.001}, 0xb084a150aeeb6aad},
	} {
		var first *sets.Collection
		for _, w := range []int{1, 2, 7} {
			cfg := tc.cfg
			cfg.Workers = w
			c := generate(t, cfg)
			check(t, cfg, c)
			if first == nil {
				first = c
			} else if !slices.Equal(c.Elements, first.Elements) || !slices.Equal(c.Offsets, first.Offsets) {
				t.Errorf("%+v: %d workers change the output", tc.cfg, w)
			}
		}
		if h := hashCollection(first); h != tc.hash {
			t.Errorf("%+v: hash %#x, want %#x", tc.cfg, h, tc.hash)
		}
		other := tc.cfg
		other.Seed++
		if slices.Equal(generate(t, other).Elements, first.Elements) {
			t.Errorf("%+v: another seed gives the same sets", tc.cfg)
		}
	}
}

// frequencies counts how many sets hold each element.
func frequencies(c *sets.Collection, universe uint64) []int {
	f := make([]int, universe)
	for _, e := range c.Elements {
		f[e]++
	}
	return f
}

func TestUniformShape(t *testing.T) {
	for _, avg := range []int{100, 900} { // drawn, and complement
		cfg := Config{Sets: 5000, Universe: 1000, AvgSize: avg, SizeSpread: -1, Seed: 11}
		f := frequencies(generate(t, cfg), cfg.Universe)
		// Each element is in a set with probability avg/1000: chi-square
		// over the 1000 elements, about 999 +- 45.
		p := float64(avg) / 1000
		want := float64(cfg.Sets) * p
		chi := 0.0
		for _, n := range f {
			chi += (float64(n) - want) * (float64(n) - want) / (want * (1 - p))
		}
		if chi < 999-5*45 || chi > 999+5*45 {
			t.Errorf("avg %d: chi-square %.0f over 999 degrees of freedom", avg, chi)
		}
	}
}

func TestNormalShape(t *testing.T) {
	for _, sigma := range []float64{0, 0.01} {
		cfg := Config{Sets: 2000, Universe: 1e6, AvgSize: 100, Dist: Normal, Seed: 5, Sigma: sigma}
		c := generate(t, cfg)
		s := cfg.Sigma
		if s == 0 {
			s = DefaultSigma
		}
		mu, sd := 5e5, s*1e6
		var sum, sq float64
		within := 0
		for _, e := range c.Elements {
			x := float64(e) + 0.5
			sum += x
			sq += (x - mu) * (x - mu)
			if math.Abs(x-mu) < sd {
				within++
			}
		}
		n := float64(len(c.Elements))
		mean, std := sum/n, math.Sqrt(sq/n)
		// 200,000 draws: the mean is within sd/450 (3 standard errors),
		// the spread within 1%, the share within one sigma 0.6827 +- 0.003.
		// (Truncation at 4 sigma removes 6e-5 of the mass: negligible.)
		if math.Abs(mean-mu) > sd/150 || math.Abs(std/sd-1) > 0.01 || math.Abs(float64(within)/n-0.6827) > 0.005 {
			t.Errorf("sigma %v: mean %.0f (want %.0f), std %.0f (want %.0f), within 1 sigma %.4f", s, mean, mu, std, sd, float64(within)/n)
		}
	}
}

func TestZipfShape(t *testing.T) {
	cfg := Config{Sets: 4000, Universe: 1e5, AvgSize: 50, Dist: Zipf, Seed: 9, ZipfS: 1}
	c := generate(t, cfg)
	f := frequencies(c, cfg.Universe)
	sorted := slices.Sorted(slices.Values(f))
	top, median := sorted[len(sorted)-1], sorted[len(sorted)/2]
	if top < 3900 || median > 2 {
		t.Errorf("most frequent element in %d of 4000 sets, median %d: want nearly all, and a handful", top, median)
	}
	// Popular elements are spread over the universe, not packed at 0.
	d := newDrawer(Config{Universe: cfg.Universe, Dist: Zipf, Seed: cfg.Seed, ZipfS: 1})
	var first []uint64
	for r := range uint64(10) {
		first = append(first, d.perm.apply(r))
	}
	if slices.Max(first) < cfg.Universe/10 {
		t.Errorf("the 10 most popular elements %v are packed at the start", first)
	}
	// Below saturation, frequency falls as rank^-s: ranks 100-199 are about
	// 10 times as frequent as ranks 1000-1999.
	band := func(from, to uint64) float64 {
		sum := 0
		for r := from; r < to; r++ {
			sum += f[d.perm.apply(r-1)]
		}
		return float64(sum) / float64(to-from)
	}
	if ratio := band(100, 200) / band(1000, 2000); ratio < 8 || ratio > 12 {
		t.Errorf("frequency ratio of rank bands 100-199 and 1000-1999: %.2f, want about 10", ratio)
	}
}

// The Zipf sampler draws each rank with probability r^-s / sum: chi-square
// against the exact law, over universes held by the alias table alone, by
// the table and a tail, and by the tail mostly.
func TestZipfSampler(t *testing.T) {
	for _, c := range []struct {
		n uint64
		s float64
	}{{1, 1}, {2, 0.9}, {3, 2}, {50, 0.5}, {70000, 1}, {70000, 0.9}, {1 << 20, 1.5}, {1e9, 0.8}} {
		z := newZipf(c.n, c.s)
		g := newRNG(uint64(c.n), 1)
		const draws = 400_000
		// Bins: ranks 1..20 alone, then doubling ranges.
		var edges []uint64
		for r := uint64(1); r <= c.n; {
			edges = append(edges, r)
			if r < 20 {
				r++
			} else {
				r *= 2
			}
		}
		edges = append(edges, c.n+1)
		count := make([]float64, len(edges)-1)
		for range draws {
			r := z.sample(g)
			if r < 1 || r > c.n {
				t.Fatalf("n=%d: rank %d", c.n, r)
			}
			i, _ := slices.BinarySearch(edges, r+1)
			count[i-1]++
		}
		// Exact probabilities: sum r^-s directly up to 2^22, beyond by the
		// Euler-Maclaurin formula on each bin.
		mass := func(a, b uint64) float64 { // sum over [a, b)
			if b-a < 1<<22 {
				s := 0.0
				for r := a; r < b; r++ {
					s += math.Pow(float64(r), -c.s)
				}
				return s
			}
			F := func(x float64) float64 {
				if c.s == 1 {
					return math.Log(x)
				}
				return math.Pow(x, 1-c.s) / (1 - c.s)
			}
			fa, fb := math.Pow(float64(a), -c.s), math.Pow(float64(b), -c.s)
			return F(float64(b)) - F(float64(a)) + (fa-fb)/2 - c.s/12*(math.Pow(float64(b), -c.s-1)-math.Pow(float64(a), -c.s-1))
		}
		p := make([]float64, len(count))
		total := 0.0
		for i := range p {
			p[i] = mass(edges[i], edges[i+1])
			total += p[i]
		}
		chi, df := 0.0, -1
		for i := range p {
			want := draws * p[i] / total
			if want < 5 {
				continue
			}
			chi += (count[i] - want) * (count[i] - want) / want
			df++
		}
		if df > 0 && chi > float64(df)+5*math.Sqrt(2*float64(df))+10 {
			t.Errorf("n=%d s=%v: chi-square %.1f over %d degrees of freedom", c.n, c.s, chi, df)
		}
	}
}

func TestPerm(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 63, 64, 65, 1000, 1<<16 + 1} {
		p := newPerm(n, 12345)
		seen := make([]bool, n)
		for x := range n {
			y := p.apply(x)
			if y >= n || seen[y] {
				t.Fatalf("n=%d: %d -> %d twice or out of range", n, x, y)
			}
			seen[y] = true
		}
	}
}

// Dense sets from a distribution that does not reach enough elements give
// a clear error, the same whatever the workers.
func TestDrawBudget(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		msg string
	}{
		{Config{Sets: 8, Universe: 1e6, AvgSize: 10000, Dist: Normal, Sigma: 1e-5, Seed: 1}, "raise Sigma"},
		{Config{Sets: 8, Universe: 1e5, AvgSize: 50000, Dist: Zipf, ZipfS: 3, Seed: 1}, "lower AvgSize or ZipfS"},
	} {
		var first error
		for _, w := range []int{1, 2, 4} {
			cfg := tc.cfg
			cfg.Workers = w
			c, err := Generate(cfg)
			if err == nil || c != nil || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "synth: set 0: ") {
				t.Fatalf("%+v: %v", cfg, err)
			}
			if first != nil && err.Error() != first.Error() {
				t.Errorf("workers change the error: %v, %v", err, first)
			}
			first = err
			var se *setError
			if !errors.As(err, &se) {
				t.Errorf("%T", err)
			}
		}
	}
	// Dense but reachable: fine.
	cfg := Config{Sets: 10, Universe: 1000, AvgSize: 700, Dist: Zipf, Seed: 1}
	check(t, cfg, generate(t, cfg))
	cfg = Config{Sets: 10, Universe: 1000, AvgSize: 500, Dist: Normal, Seed: 1, Sigma: 0.5}
	check(t, cfg, generate(t, cfg))
}

func ExampleGenerate() {
	c, err := Generate(Config{Sets: 3, Universe: 100, AvgSize: 5, Dist: Zipf, Seed: 1})
	if err != nil {
		panic(err)
	}
	for i := range c.Len() {
		fmt.Println(len(c.Set(i)) >= 4 && len(c.Set(i)) <= 6)
	}
	// Output:
	// true
	// true
	// true
}
