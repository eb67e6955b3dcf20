package cli

import (
	"encoding/json"
	"flag"
	"fmt"

	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

func init() {
	register(&command{
		name:    "info",
		summary: "print a collection's statistics",
		usage:   "[--json] FILE...",
		help: `
Prints, for each FILE (text or binary, detected by content), the number of
sets k, the total number of elements, the minimum, average and maximum set
size, the universe (distinct elements), the largest element, the density
(average set size over the universe) and the size skew (largest set over the
average).`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			asJSON := fs.Bool("json", false, "print one JSON object per file")
			memory := memoryFlag(fs)
			return func(env *Env, args []string) error {
				if len(args) == 0 {
					return usagef("no FILE given")
				}
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				// Every file is read before anything is printed: a bad
				// one leaves standard output empty. One at a time: only
				// their statistics are kept.
				stats := make([]sets.Stats, len(args))
				formats := make([]setio.Format, len(args))
				for i, path := range args {
					c, format, err := loadCollection(env, path, b)
					if err != nil {
						return err
					}
					if err := b.check(path+": measuring the collection", memoryOf(c)+sets.MeasureBytes(c)); err != nil {
						return err
					}
					stats[i], formats[i] = sets.Measure(c), format
				}
				out := output(env)
				for i, path := range args {
					st, format := stats[i], formats[i]
					if *asJSON {
						b, err := json.Marshal(struct {
							File   string `json:"file"`
							Format string `json:"format"`
							sets.Stats
						}{path, format.String(), st})
						if err != nil {
							return err
						}
						fmt.Fprintf(out, "%s\n", b)
						continue
					}
					fmt.Fprintf(out, "file         %s (%s)\n", path, format.String())
					fmt.Fprintf(out, "sets         %d\n", st.Sets)
					fmt.Fprintf(out, "elements     %d\n", st.Elements)
					fmt.Fprintf(out, "set size     min %d, avg %.2f, max %d\n", st.MinSize, st.AvgSize, st.MaxSize)
					fmt.Fprintf(out, "universe     %d distinct elements\n", st.Universe)
					fmt.Fprintf(out, "max element  %d\n", st.MaxValue)
					fmt.Fprintf(out, "density      %.3g\n", st.Density)
					fmt.Fprintf(out, "skew         %.3g (max/avg), size CV %.3g\n", st.Skew, st.SizeCV)
					if len(args) > 1 {
						fmt.Fprintln(out)
					}
				}
				return out.Flush()
			}
		},
	})
}
