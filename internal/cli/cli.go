// Package cli implements the xsect command line: one subcommand per file,
// each registered in init, run by Main.
package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

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

	stdinTaken bool // an input "-" has read Stdin
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
	slices.SortFunc(commands, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	if len(args) == 0 {
		printTopUsage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			return Main([]string{args[1], "--help"}, env)
		}
		printTopUsage(env.Stdout)
		return ExitOK
	}
	for _, c := range commands {
		if c.name == name {
			return runCommand(c, args[1:], env)
		}
	}
	fmt.Fprintf(env.Stderr, "xsect: unknown command %q\n\n", name)
	printTopUsage(env.Stderr)
	return ExitUsage
}

func printTopUsage(w io.Writer) {
	fmt.Fprint(w, "xsect: fast set intersection on CPUs and GPUs\n\nUsage: xsect COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'xsect COMMAND --help' for a command's flags.\n")
}

func runCommand(c *command, args []string, env *Env) int {
	flags := flag.NewFlagSet("xsect "+c.name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	run := c.setup(flags)
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: xsect %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
		hasFlags := false
		flags.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, "\nFlags:\n")
			flags.SetOutput(w)
			flags.PrintDefaults()
			flags.SetOutput(io.Discard)
		}
	}
	pos, err := parseInterspersed(flags, args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(env.Stdout)
		return ExitOK
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
		fmt.Fprintln(env.Stderr)
		printUsage(env.Stderr)
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

// output buffers a command's standard output; commands build their whole
// result before they write, so a failure leaves no partial output.
func output(env *Env) *bufio.Writer { return bufio.NewWriterSize(env.Stdout, 1<<16) }

// tempFile is a file written under a hidden temporary name in its
// destination's directory, which commit renames to the destination: a
// failed command never leaves a partial file behind.
type tempFile struct {
	*os.File
	path string // the destination
}

// createTemp creates the temporary file for path. Its errors name path, as
// the user gave it.
func createTemp(path string) (tempFile, error) {
	dir, base := splitPath(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return tempFile{}, fmt.Errorf("creating %s: %w", path, err)
	}
	return tempFile{f, path}, nil
}

// commit closes the file and renames it to its destination; on failure it
// removes it.
func (t tempFile) commit() error {
	err := t.Close()
	if err == nil {
		err = os.Rename(t.Name(), t.path)
	}
	if err != nil {
		os.Remove(t.Name())
	}
	return err
}

// abort closes and removes the file.
func (t tempFile) abort() {
	t.Close()
	os.Remove(t.Name())
}

// createOutput opens path for writing ("-" is standard output). The file is
// written under a temporary name and renamed on commit, so a failed command
// never leaves a partial file behind.
func createOutput(env *Env, path string) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "-" || path == "" {
		bw := output(env)
		return bw, bw.Flush, func() {}, nil
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, nil, nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	commit = func() error {
		if err := bw.Flush(); err != nil {
			f.abort()
			return err
		}
		return f.commit()
	}
	return bw, commit, f.abort, nil
}

func splitPath(path string) (dir, base string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return ".", path
	}
	return path[:i+1], path[i+1:]
}
