// Package flagalias keeps a flag's old name working after the flag is
// renamed: the old name is declared as an alias, which the help marks as
// one, and Resolve hands its value to the flag after parsing. The xsect
// and xsect-beam commands share it (--engine, --algorithm and --method
// are aliases of --technique).
package flagalias

import (
	"flag"
	"fmt"
)

// Declare declares old on fs as an alias of the flag name, which must be
// declared already.
func Declare(fs *flag.FlagSet, name, old string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("flagalias: no flag -" + name + " to alias as -" + old)
	}
	arg, _ := flag.UnquoteUsage(f)
	fs.Var(&alias{name: name}, old, "same as --"+name+" `"+arg+"` (its old name)")
}

// alias is the value of an old name: what it was given, kept apart from
// the flag until Resolve.
type alias struct {
	name  string // the flag it stands for
	value string
}

// String is empty until the alias is given, so that the help shows no
// default for it.
func (a *alias) String() string {
	if a == nil {
		return ""
	}
	return a.value
}

func (a *alias) Set(s string) error { a.value = s; return nil }

// Get makes the alias a flag.Getter of a string, like the flag it stands for.
func (a *alias) Get() any { return a.value }

// Resolve, after fs is parsed, sets each flag whose alias was given to the
// alias's value. An alias and its flag both given with different values is
// an error, which names both.
func Resolve(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.Visit(func(f *flag.Flag) {
		a, ok := f.Value.(*alias)
		if !ok || err != nil {
			return
		}
		if given[a.name] {
			if v := fs.Lookup(a.name).Value.String(); v != a.value {
				err = fmt.Errorf("--%s %q and --%s %q disagree (--%s is the old name of --%s): give one", f.Name, a.value, a.name, v, f.Name, a.name)
			}
			return
		}
		err = fs.Set(a.name, a.value)
	})
	return err
}
