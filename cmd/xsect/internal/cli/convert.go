package cli

import (
	"flag"

	"github.com/xsect/xsect/setio"
)

func init() {
	register(&command{
		name:    "convert",
		summary: "convert a collection between the text and binary formats",
		usage:   "[--to binary|text] IN OUT",
		help: `
Reads IN (text, gzip-compressed text or binary, detected by content) and
writes it to OUT in the format given by --to. OUT "-" is standard output. The
output file appears only once it is complete.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			to := fs.String("to", "binary", "output format: binary or text")
			memory := memoryFlag(fs)
			return func(env *Env, args []string) error {
				if len(args) != 2 {
					return usagef("want IN and OUT, got %d arguments", len(args))
				}
				if *to != "binary" && *to != "text" {
					return usagef("unknown format %q (binary or text)", *to)
				}
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				out, err := openOutput(env, args[1])
				if err != nil {
					return err
				}
				defer out.abort()
				c, _, err := loadCollection(env, args[0], b)
				if err != nil {
					return err
				}
				if *to == "binary" {
					err = setio.WriteBinary(out, c)
				} else {
					err = setio.WriteText(out, c)
				}
				if err != nil {
					return err
				}
				return out.commit()
			}
		},
	})
}
