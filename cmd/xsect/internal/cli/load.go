package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// stdinName names standard input ("-" as a FILE) in messages.
const stdinName = "standard input"

// loadCollection reads a collection file of either format, showing progress
// on a terminal for large files. It also returns the format it found. The
// input is opened once and read once, the format told from its first bytes,
// so that pipes and FIFOs (and "-", standard input) work like files. A
// collection that needs more memory than b holds is a memoryError.
func loadCollection(env *Env, path string, b budget) (*sets.Collection, setio.Format, error) {
	in, err := openInput(env, path)
	if err != nil {
		return nil, 0, err
	}
	defer in.Close()
	bar := progress.Start("reading "+in.name, "B", max(in.size, 0))
	defer bar.Done()
	br := bufio.NewReaderSize(bar.Reader(in), 1<<20)
	c, format, err := setio.ReadLimited(br, in.name, in.size, b.Bytes)
	return c, format, b.readError(err)
}

// loadReadOnly is loadCollection for a command that never writes the
// collection: a binary file (not standard input, not a pipe) is mapped
// into memory and used in place (setio.Map), after the checks a read
// makes, rather than copied into the heap, which costs an allocation and
// a copy of the whole file. The mapping lasts until the command ends. Its pages are the page cache's, which the kernel can
// evict, so the budget does not bound them.
func loadReadOnly(env *Env, path string, b budget) (*sets.Collection, error) {
	if path != "-" && isBinaryFile(path) {
		c, close, err := setio.Map(path)
		if err != nil {
			return nil, inputError{err}
		}
		env.closers = append(env.closers, close)
		return c, nil
	}
	c, _, err := loadCollection(env, path, b)
	return c, err
}

// isBinaryFile reports whether path is a regular file in xsect's binary
// format. Any doubt (an error) is false: loadCollection then reports it.
func isBinaryFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	format, err := setio.Detect(bufio.NewReaderSize(f, 16))
	return err == nil && format == setio.Binary
}

// input is an opened input file. Its read errors do not repeat the path,
// which setio puts in front of them.
type input struct {
	f    *os.File
	r    io.Reader
	name string // for messages
	size int64  // the bytes to read, or -1 if unknown
}

func (in *input) Read(p []byte) (int, error) {
	n, err := in.r.Read(p)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return n, err
}

// Close closes the file, unless it is standard input.
func (in *input) Close() error {
	if in.f == nil {
		return nil
	}
	return in.f.Close()
}

// openInput opens path for reading; "-" is standard input, which a
// command can read only once. A file that cannot be opened, or a
// directory, is bad input, named once in the error.
func openInput(env *Env, path string) (*input, error) {
	if path == "-" {
		if env.stdinTaken {
			return nil, usagef("standard input (-) given twice")
		}
		env.stdinTaken = true
		in := &input{r: env.Stdin, name: stdinName, size: -1}
		if f, ok := env.Stdin.(*os.File); ok {
			// A redirected regular file has a size: from where it
			// stands to its end.
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
				if at, err := f.Seek(0, io.SeekCurrent); err == nil && at <= st.Size() {
					in.size = st.Size() - at
				}
			}
		}
		return in, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, badInputFile(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, badInputFile(path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, inputError{fmt.Errorf("%s: is a directory", path)}
	}
	size := int64(-1)
	if st.Mode().IsRegular() && st.Size() > 0 {
		size = st.Size()
	}
	return &input{f: f, r: f, name: path, size: size}, nil
}

// badInputFile is the error for an input file that cannot be opened or
// examined: the path and the system's reason (missing, permission denied),
// which is bad input.
func badInputFile(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return inputError{fmt.Errorf("%s: %w", path, err)}
}

// inputError is an input that cannot be read: exit status 2.
type inputError struct{ error }

func (e inputError) Is(target error) bool { return target == errBadInput }
func (e inputError) Unwrap() error        { return e.error }
