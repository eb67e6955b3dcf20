package cli

import (
	"flag"
	"strconv"

	"github.com/xsect/xsect/internal/flagalias"
)

func init() {
	register(&command{
		name:    "intersect",
		summary: "intersect the sets held in files",
		usage:   "[--count] [--technique NAME] FILE... | --from FILE ID...",
		help: `
Each FILE holds one set: all the integers in the file, in any line layout, in
any order, duplicates allowed (a binary FILE contributes the union of its
sets). With --from, the arguments are instead the 0-based ids (line numbers)
of sets in the collection FILE. Prints the intersection of all the sets, one element per line in
increasing order, or with --count one line with its size.

--technique runs one named pairwise method (see --technique list; --method is
its old name); the default, auto, picks by CPU features and by the sizes of the sets. --device gpu runs
the pairwise steps on the GPU with a GPU method (ip, ip-obs, obs, ip-hi, hi,
bitmap, bitmap-dynamic); --device auto, the default, does so when a GPU is
present and it would beat the CPU on all its cores, start included (the CPU
is timed on a slice of the inputs when they hold 2^26 elements or more).
The pairwise steps follow each other, so they run on one GPU: the first of
--gpus.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			count := fs.Bool("count", false, "print only the size of the intersection")
			from := fs.String("from", "", "take the sets by id from the collection `FILE`")
			methodName := fs.String("technique", "auto", "pairwise method `NAME`, or \"list\" to list the methods of --device")
			flagalias.Declare(fs, "technique", "method")
			device := fs.String("device", "auto", deviceFlagHelp)
			gpusValue := gpusFlag(fs)
			memory := memoryFlag(fs)
			return func(env *Env, args []string) error {
				if *methodName == "list" {
					out := output(env)
					for _, name := range listMethods(*device) {
						out.WriteString(name + "\n")
					}
					return out.Flush()
				}
				if err := checkMethod(*device, *methodName); err != nil {
					return err
				}
				gpus, err := parseGPUs(*gpusValue, *device)
				if err != nil {
					return err
				}
				prewarm(*device, gpus)
				b, err := newBudget(*memory)
				if err != nil {
					return err
				}
				inputs, err := loadInputs(env, *from, args, b)
				if err != nil {
					return err
				}
				method, err := choosePairwise(env, *device, *methodName, inputs, *count, gpus)
				if err != nil {
					return err
				}
				out := output(env)
				if *count {
					n := method.CountAll(inputs...)
					if err := method.err(); err != nil {
						return err
					}
					out.WriteString(strconv.Itoa(n) + "\n")
					return out.Flush()
				}
				result := method.IntersectAll(nil, inputs...)
				if err := method.err(); err != nil {
					return err
				}
				var buf []byte
				for _, x := range result {
					buf = strconv.AppendUint(buf[:0], uint64(x), 10)
					buf = append(buf, '\n')
					out.Write(buf)
				}
				return out.Flush()
			}
		},
	})
}

// loadInputs returns the sets to intersect: one per file, or with from, the
// sets of that collection named by id.
// loadInputs reads the sets to intersect, within the budget b: together,
// as they are all kept.
func loadInputs(env *Env, from string, args []string, b budget) ([][]uint32, error) {
	if len(args) == 0 {
		if from != "" {
			return nil, usagef("no set ID given")
		}
		return nil, usagef("no FILE given")
	}
	inputs := make([][]uint32, len(args))
	if from == "" {
		spent := int64(0)
		for i, path := range args {
			s, err := loadOneSet(env, path, b.left(spent))
			if err != nil {
				return nil, err
			}
			inputs[i] = s
			spent += 4 * int64(cap(s))
		}
		return inputs, nil
	}
	c, _, err := loadCollection(env, from, b)
	if err != nil {
		return nil, err
	}
	for i, arg := range args {
		id, err := strconv.Atoi(arg)
		if err != nil || id < 0 || id >= c.Len() {
			return nil, usagef("set id %q: want an integer in [0, %d) for %s", arg, c.Len(), from)
		}
		inputs[i] = c.Set(id)
	}
	return inputs, nil
}

// loadOneSet reads all the integers in the file at path as one set.
func loadOneSet(env *Env, path string, b budget) ([]uint32, error) {
	c, _, err := loadCollection(env, path, b)
	if err != nil {
		return nil, err
	}
	if c.Len() == 1 {
		return c.Set(0), nil
	}
	// The union is at most as large as the elements.
	if err := b.check(path+": the union of its sets", memoryOf(c)+4*int64(len(c.Elements))); err != nil {
		return nil, err
	}
	return c.Union(), nil
}
