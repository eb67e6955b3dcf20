package cli

import (
	"flag"
	"strings"

	"github.com/xsect/xsect/allpairs"
)

func init() {
	register(&command{
		name:    "containment",
		summary: "set containment join: pairs whose degree of containment reaches D",
		usage:   "[flags] FILE [--with FILE2]",
		help: `
For every pair of nonempty sets of the collection FILE (i < j), or with --with
of a set i of FILE and a set j of FILE2, computes the degree of containment
|Si ∩ Sj| / min(|Si|, |Sj|) and prints one line "i<TAB>j<TAB>degree" for each
pair whose degree is at least --min-degree (default 1: one set contains the
other). D may be a decimal ("0.8"), a fraction ("2/3") or an exponent form;
the comparison is exact, in integers. Empty sets are ignored. The degree is
printed with at least 6 significant digits: the shortest form that reads back
to the same float64 where that has 6 or more ("0.6666666666666666"), else
padded ("0.750000", "1.00000"). --count-only prints only the number of such
pairs. Lines come in no particular order unless --sort.

The planner, --explain, --technique and --device work as for allpairs; the
prefix technique (candidates from each set's rarest elements, verified) is
usually the fastest for high degrees. Techniques: ` + strings.Join(allpairs.Techniques(), ", ") + `.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			jf := joinFlags(fs)
			minDegree := fs.String("min-degree", "1", "report pairs with a degree of containment of at least `D`")
			return func(env *Env, args []string) error {
				d, err := allpairs.ParseRatio(*minDegree)
				if err != nil {
					return usagef("--min-degree: %v", err)
				}
				return jf.run(env, args, allpairs.Query{Containment: d}, true)
			}
		},
	})
}
