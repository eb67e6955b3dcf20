// Package synth generates synthetic collections of sets, after the
// artificial data sets of Bellas & Gounaris ("Exploiting GPUs for fast
// intersection of large sets"): k sets whose elements are drawn
// from a uniform, normal or Zipf distribution over a universe, named
// "Distribution-Universe-AvgSize" there (zipf-10^8-10^6), with set sizes
// varying around the average.
//
// A set of size n is n distinct elements, drawn one by one from the
// distribution, duplicates skipped (successive sampling). The authors'
// generator (HeCBench's si-cuda port) draws a fixed number of times into a
// bitmap instead, so that its sets fall short of the nominal size by the
// repeats; here sizes are exact. Generation is deterministic: a Config gives
// the same collection on every machine, Go version and number of workers.
// It uses math/rand/v2's PCG, whose algorithm is fixed, with this package's
// own sampling code and its own floating-point functions (detmath.go).
//
// GenerateBernoulli makes the transactions of the BATMAP paper's
// frequent-pair experiments, each item in each transaction with a given
// probability.
package synth

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xsect/xsect/sets"
)

// Dist is the distribution elements are drawn from.
type Dist int

const (
	// Uniform draws every element of the universe with equal probability.
	Uniform Dist = iota
	// Normal draws floor(x) for x from a normal distribution centred on the
	// middle of the universe, with standard deviation Config.Sigma times
	// the universe, truncated to the universe.
	Normal
	// Zipf draws the element of popularity rank r (1-based) with
	// probability proportional to r^-ZipfS. Ranks map to elements through a
	// fixed pseudo-random permutation of the universe, so that popular
	// elements are spread over it rather than packed at its start.
	Zipf
)

var distNames = [...]string{Uniform: "uniform", Normal: "normal", Zipf: "zipf"}

// String returns "uniform", "normal" or "zipf".
func (d Dist) String() string {
	if d >= 0 && int(d) < len(distNames) {
		return distNames[d]
	}
	return fmt.Sprintf("Dist(%d)", int(d))
}

// ParseDist parses a distribution name, as String writes it (any case).
func ParseDist(s string) (Dist, error) {
	for d, name := range distNames {
		if strings.EqualFold(s, name) {
			return Dist(d), nil
		}
	}
	return 0, fmt.Errorf("synth: unknown distribution %q (want uniform, normal or zipf)", s)
}

// Defaults for the Config fields left zero.
const (
	// DefaultSizeSpread makes set sizes uniform on [0.75, 1.25] x AvgSize.
	DefaultSizeSpread = 0.25
	// DefaultZipfS is the exponent of the paper authors' generator.
	DefaultZipfS = 0.9
	// DefaultSigma puts the universe's ends 4 standard deviations from its
	// middle.
	DefaultSigma = 0.125
)

// MaxUniverse is the largest universe: elements are uint32.
const MaxUniverse = 1 << 32

// Config describes a synthetic collection.
type Config struct {
	Sets     int    // k, the number of sets
	Universe uint64 // elements are drawn from [0, Universe), 1 <= Universe <= 2^32
	AvgSize  int    // average set size, at most Universe
	Dist     Dist   // how elements are drawn: Uniform, Normal or Zipf
	Seed     uint64 // the same Config and Seed give the same collection

	// SizeSpread is the relative half-width of the set sizes: they are
	// uniform on [AvgSize-w, AvgSize+w], w = SizeSpread*AvgSize, narrowed
	// (symmetrically, so that the mean stays AvgSize) to fit in [0,
	// Universe]. Zero means DefaultSizeSpread; a negative value makes every
	// set exactly AvgSize. At most 1.
	SizeSpread float64
	// ZipfS is Zipf's exponent, > 0; zero means DefaultZipfS.
	ZipfS float64
	// Sigma is Normal's standard deviation as a fraction of Universe, in
	// (0, 10]; zero means DefaultSigma.
	Sigma float64
	// Workers generate sets in parallel; zero means GOMAXPROCS. The output
	// does not depend on it.
	Workers int
}

// withDefaults fills in the zero fields and checks the result.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.SizeSpread == 0 {
		cfg.SizeSpread = DefaultSizeSpread
	} else if cfg.SizeSpread < 0 {
		cfg.SizeSpread = 0
	}
	if cfg.ZipfS == 0 {
		cfg.ZipfS = DefaultZipfS
	}
	if cfg.Sigma == 0 {
		cfg.Sigma = DefaultSigma
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case cfg.Sets < 0:
		return cfg, fmt.Errorf("synth: Sets = %d, want >= 0", cfg.Sets)
	case cfg.Universe == 0 || cfg.Universe > MaxUniverse:
		return cfg, fmt.Errorf("synth: Universe = %d, want 1 to 2^32", cfg.Universe)
	case cfg.AvgSize < 0:
		return cfg, fmt.Errorf("synth: AvgSize = %d, want >= 0", cfg.AvgSize)
	case uint64(cfg.AvgSize) > cfg.Universe:
		return cfg, fmt.Errorf("synth: AvgSize = %d exceeds Universe = %d: sets hold distinct elements", cfg.AvgSize, cfg.Universe)
	case cfg.Dist < Uniform || cfg.Dist > Zipf:
		return cfg, fmt.Errorf("synth: unknown distribution %d", int(cfg.Dist))
	case !(cfg.SizeSpread <= 1):
		return cfg, fmt.Errorf("synth: SizeSpread = %v, want at most 1", cfg.SizeSpread)
	case !(cfg.ZipfS > 0) || math.IsInf(cfg.ZipfS, 0):
		return cfg, fmt.Errorf("synth: ZipfS = %v, want a finite exponent > 0", cfg.ZipfS)
	case !(cfg.Sigma > 0 && cfg.Sigma <= 10):
		return cfg, fmt.Errorf("synth: Sigma = %v, want a fraction of the universe in (0, 10]", cfg.Sigma)
	}
	_, hi := cfg.sizeRange()
	if total := float64(cfg.Sets) * float64(hi); total > 1<<40 {
		return cfg, fmt.Errorf("synth: up to %.3g elements in all: too many", total)
	}
	return cfg, nil
}

// sizeRange is the range of set sizes, centred on AvgSize.
func (cfg Config) sizeRange() (lo, hi int) {
	avg := uint64(cfg.AvgSize)
	w := uint64(float64(cfg.SizeSpread * float64(avg)))
	w = min(w, avg, cfg.Universe-avg)
	return int(avg - w), int(avg + w)
}

// Generate builds the collection cfg describes. It is deterministic: the
// same Config gives the same collection everywhere. Sets are sampled
// without replacement; for Normal and Zipf an error is returned if a set
// needs too many draws, because AvgSize is too close to the number of
// elements the distribution actually reaches.
func Generate(cfg Config) (*sets.Collection, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Set sizes first, from their own stream: they fix the offsets, so that
	// workers can fill the element array in place, in any order.
	lo, hi := cfg.sizeRange()
	sizes := newRNG(cfg.Seed, 0)
	c := &sets.Collection{Offsets: make([]uint64, cfg.Sets+1)}
	for i := range cfg.Sets {
		n := lo
		if hi > lo {
			n += int(sizes.below(uint64(hi - lo + 1)))
		}
		c.Offsets[i+1] = c.Offsets[i] + uint64(n)
	}
	c.Elements = make([]uint32, c.Offsets[cfg.Sets])

	d := newDrawer(cfg)
	workers := min(cfg.Workers, cfg.Sets)
	if d.bitmapBytes() > 64<<20 {
		workers = 1 // each worker has a bitmap of the universe
	}
	// Workers take sets in order; on error the lowest failing set wins, so
	// that the error, too, does not depend on scheduling.
	var next atomic.Int64
	var failed atomic.Int64
	failed.Store(math.MaxInt64)
	errs := make([]error, workers) // a worker stops at its first error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := d.newScratch(hi)
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.Sets) || i > failed.Load() {
					return
				}
				dst := c.Elements[c.Offsets[i]:c.Offsets[i+1]]
				if err := d.fill(dst, newRNG(cfg.Seed, uint64(i)+1), s); err != nil {
					errs[w] = &setError{i, err}
					for {
						f := failed.Load()
						if i >= f || failed.CompareAndSwap(f, i) {
							break
						}
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f != math.MaxInt64 {
		for _, err := range errs {
			if se, ok := err.(*setError); ok && se.set == f {
				return nil, se
			}
		}
	}
	return c, nil
}

// setError is an error in generating one set.
type setError struct {
	set int64
	err error
}

func (e *setError) Error() string { return fmt.Sprintf("synth: set %d: %v", e.set, e.err) }
func (e *setError) Unwrap() error { return e.err }
