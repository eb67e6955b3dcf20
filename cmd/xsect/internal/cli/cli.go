// Package cli implements the xsect command line: one subcommand per file,
// each registered in init, run by Main.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/flagalias"
	"github.com/xsect/xsect/setio"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1 // a failure while running
	ExitUsage   = 2 // bad usage or bad input
)

// Env is what a command reads and writes; tests substitute buffers.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	stdinTaken bool           // an input "-" has read Stdin
	uncatch    func()         // stops Main's catching of signals, for a command that handles them
	started    time.Time      // when Main began, for --explain's account of the process
	closers    []func() error // run when the command ends: the inputs' mappings
	phases     []phase        // the command's phases so far, for --explain's account (mark)
	profile    string         // where the pairwise dispatch comes from (useSavedProfile)
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // the argument synopsis after the name, e.g. "[flags] FILE..."
	help    string // paragraphs shown by --help
	// setup declares the flags; run does the work with the positional args.
	setup func(fs *flag.FlagSet) func(env *Env, args []string) error
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

// usageError marks bad usage: the command prints its usage and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Main runs the command line args (without the program name) and returns the
// exit status.
func Main(args []string, env *Env) int {
	env.started = time.Now()
	slices.SortFunc(commands, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	env.uncatch = catchSignals()
	defer env.uncatch()
	if len(args) == 0 {
		io.WriteString(env.Stderr, topUsage())
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			return Main([]string{args[1], "--help"}, env)
		}
		return writeHelp(env, topUsage())
	}
	for _, c := range commands {
		if c.name == name {
			return runCommand(c, args[1:], env)
		}
	}
	fmt.Fprintf(env.Stderr, "xsect: unknown command %q\n\n", name)
	io.WriteString(env.Stderr, topUsage())
	return ExitUsage
}

func topUsage() string {
	var b strings.Builder
	b.WriteString("xsect: fast set intersection on CPUs and GPUs\n\nUsage: xsect COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString("\nA FILE \"-\" is standard input, an output \"-\" standard output.\n")
	b.WriteString("Run 'xsect COMMAND --help' for a command's flags.\n")
	return b.String()
}

// writeHelp writes help asked for on standard output: a failed write (a
// full disk, a closed pipe) is a failure, not a success.
func writeHelp(env *Env, help string) int {
	if _, err := io.WriteString(namedWriter{env.Stdout, "standard output"}, help); err != nil {
		fmt.Fprintf(env.Stderr, "xsect: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

func runCommand(c *command, args []string, env *Env) int {
	defer func() {
		for _, close := range env.closers {
			close()
		}
		env.closers = nil
	}()
	// A command's budget sets the runtime's memory limit for its run.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	flags := flag.NewFlagSet("xsect "+c.name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	run := c.setup(flags)
	usage := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage: xsect %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
		hasFlags := false
		flags.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			b.WriteString("\nFlags:\n")
			flags.SetOutput(&b)
			flags.PrintDefaults()
			flags.SetOutput(io.Discard)
		}
		return b.String()
	}
	pos, err := parseInterspersed(flags, args)
	if errors.Is(err, flag.ErrHelp) {
		return writeHelp(env, usage())
	}
	if err == nil {
		err = emptyFlag(flags)
	}
	if err == nil {
		if err = flagalias.Resolve(flags); err != nil {
			err = usageError{err.Error()}
		}
	}
	if err == nil {
		env.profile, err = useSavedProfile(env)
	}
	if err == nil {
		err = run(env, pos)
	}
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "xsect %s: %v\n", c.name, err)
	var ue usageError
	switch {
	case errors.As(err, &ue) || isFlagError(err):
		io.WriteString(env.Stderr, "\n"+usage())
		return ExitUsage
	case errors.Is(err, setio.ErrBadInput), errors.Is(err, fs.ErrNotExist), errors.Is(err, errBadInput):
		return ExitUsage
	}
	return ExitFailure
}

// errBadInput marks input errors found by the commands themselves.
var errBadInput = errors.New("bad input")

// flagError wraps errors from the flag package, which are usage errors.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

// emptyFlag rejects a string flag given an empty value (-o ""): every
// one wants a nonempty value, and taking "" for "not given" would quietly
// do something else (write to standard output, join a collection with
// itself).
func emptyFlag(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if s, ok := g.Get().(string); ok && s == "" {
				err = usagef("%s: empty value", flagName(f.Name))
			}
		}
	})
	return err
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// flagName is a flag as the help shows it: -o, --min-support.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// maxThreads bounds --threads: more goroutines than that only cost memory
// (each engine keeps buffers per thread).
const maxThreads = 1 << 12

// checkThreads rejects a --threads outside [0, maxThreads]; 0 means every
// core.
func checkThreads(n int) error {
	if n < 0 || n > maxThreads {
		return usagef("--threads %d: want 1 to %d, or 0 for every core", n, maxThreads)
	}
	return nil
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments ("xsect intersect a b --count"); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// Parse stops at the first non-flag, or just after "--", after
		// which everything is positional.
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
