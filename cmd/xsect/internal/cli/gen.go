package cli

import (
	"flag"
	"fmt"
	"math"
	"runtime"

	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/synth"
)

func init() {
	register(&command{
		name:    "gen",
		summary: "generate a synthetic collection (uniform, normal, zipf)",
		usage:   "[flags]",
		help: `
Generates k sets of elements drawn from [0, universe) with a uniform, normal or
zipf distribution, as in the experiments of Bellas & Gounaris, and writes them
as text (one set per line) or in xsect's binary format. The output depends only
on the flags: the same seed gives the same collection on every machine.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			k := fs.Int("sets", 1000, "number of sets `k`")
			universe := fs.Uint64("universe", 1_000_000, "elements are drawn from [0, `U`), U <= 2^32")
			avg := fs.Int("avg-size", 10_000, "average set size")
			dist := fs.String("dist", "uniform", "element distribution: uniform, normal or zipf")
			seed := fs.Uint64("seed", 1, "random seed")
			spread := fs.Float64("size-spread", synth.DefaultSizeSpread, "set sizes vary uniformly within avg-size*(1±`f`); 0 for equal sizes")
			zipfS := fs.Float64("zipf-s", synth.DefaultZipfS, "exponent of the zipf distribution")
			sigma := fs.Float64("sigma", synth.DefaultSigma, "standard deviation of the normal distribution, as a fraction of the universe")
			format := fs.String("format", "text", "output format: text or binary")
			out := fs.String("o", "-", "output `file` (- for standard output)")
			memory := memoryFlag(fs)
			return func(env *Env, args []string) error {
				if len(args) != 0 {
					return usagef("unexpected arguments %q", args)
				}
				d, err := synth.ParseDist(*dist)
				if err != nil {
					return usageError{err.Error()}
				}
				if *format != "text" && *format != "binary" {
					return usagef("unknown format %q (text or binary)", *format)
				}
				switch {
				case *k < 0:
					return usagef("--sets %d is negative", *k)
				case *avg < 0:
					return usagef("--avg-size %d is negative", *avg)
				case *universe == 0 || *universe > 1<<32:
					return usagef("--universe %d: want 1 to 2^32", *universe)
				case uint64(*avg) > *universe:
					return usagef("--avg-size %d exceeds --universe %d: a set holds distinct elements", *avg, *universe)
				case !(*spread >= 0 && *spread <= 1):
					return usagef("--size-spread %v: want a fraction in [0, 1]", *spread)
				case !(*zipfS > 0) || math.IsInf(*zipfS, 0):
					return usagef("--zipf-s %v: want a finite exponent above 0", *zipfS)
				case !(*sigma > 0 && *sigma <= 10):
					return usagef("--sigma %v: want a fraction of the universe in (0, 10]", *sigma)
				}
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				// The sets at their largest, and a bitmap of the universe
				// for each worker (one worker only when it exceeds 64 MiB).
				elems := float64(*k) * float64(*avg) * (1 + *spread)
				bitmaps := float64(*universe / 8)
				if bitmaps <= 64<<20 {
					bitmaps *= float64(runtime.GOMAXPROCS(0))
				}
				need := 8*float64(*k+1) + 4*elems + bitmaps
				if err := b.check(fmt.Sprintf("a collection of %d sets of up to %.0f elements", *k, float64(*avg)*(1+*spread)), int64(min(need, 1<<62))); err != nil {
					return err
				}
				if *spread == 0 {
					*spread = -1 // synth's Config reads 0 as "the default"
				}
				w, err := openOutput(env, *out)
				if err != nil {
					return err
				}
				defer w.abort()
				c, err := synth.Generate(synth.Config{Sets: *k, Universe: *universe, AvgSize: *avg, Dist: d, Seed: *seed,
					SizeSpread: *spread, ZipfS: *zipfS, Sigma: *sigma})
				if err != nil {
					return usageError{err.Error()}
				}
				if *format == "binary" {
					err = setio.WriteBinary(w, c)
				} else {
					err = setio.WriteText(w, c)
				}
				if err != nil {
					return err
				}
				return w.commit()
			}
		},
	})
}
