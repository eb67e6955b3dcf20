package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/pairsort"
	"github.com/xsect/xsect/internal/sigexit"
)

// output buffers a command's standard output. Its errors say "writing
// standard output".
func output(env *Env) *bufio.Writer { return bufio.NewWriterSize(stdout(env), 1<<16) }

// stdout is a command's standard output, unbuffered, named in its errors.
func stdout(env *Env) namedWriter { return namedWriter{env.Stdout, "standard output"} }

// namedWriter names its destination in its errors, instead of the name of
// the file under it (a hidden temporary one, or /dev/stdout).
type namedWriter struct {
	w    io.Writer
	name string
}

func (w namedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		err = fmt.Errorf("writing %s: %w", w.name, pathErr(err))
	}
	return n, err
}

// pathErr strips the file name from an *fs.PathError or *os.LinkError,
// leaving the system's reason.
func pathErr(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// outputFile is where a command writes a result: standard output ("-"),
// or a file. A regular file, new or existing, is written under a hidden
// temporary name in its directory, renamed over it by commit: the path
// holds its old content or the whole new one, never a part, and a failed
// or interrupted run leaves nothing behind. Anything else at the path (a
// device such as /dev/null, a FIFO) is written in place, as the shell's >
// would: it cannot be replaced, and must not be. A symbolic link is
// followed: its target is written, the link stays.
//
// A new file is created with mode 0666 less the umask, like the files of
// every Unix tool; an existing one keeps its permission bits, as with cp
// onto it or sort -o (its owner, when that is not the user, does not
// carry over to the replacement).
//
// Errors name the path as the user gave it, never the temporary file.
type outputFile struct {
	path   string // as given, for messages
	w      *bufio.Writer
	raw    io.Writer     // under w: large writes go there at once
	f      *os.File      // nil for standard output
	temp   string        // the temporary file renamed to target; "" when written in place
	target string        // path with its symbolic links resolved
	err    error         // the first error
	done   bool          // committed or aborted
	mapped *mappedOutput // a stream's chunks, from several goroutines; nil when written with write(2)
}

// openOutput opens path for writing: "-" is standard output; an empty
// name, a directory, or a path where no file can be created is bad usage,
// found before any work is done.
func openOutput(env *Env, path string) (*outputFile, error) {
	if path == "" {
		return nil, usagef("empty output file name")
	}
	if path == "-" {
		return &outputFile{path: path, w: output(env), raw: stdout(env)}, nil
	}
	o := &outputFile{path: path}
	target, fi, inPlace, err := resolveOutput(path)
	if err != nil {
		return nil, outputError{fmt.Errorf("creating %s: %w", path, pathErr(err))}
	}
	if fi != nil && fi.IsDir() {
		return nil, outputError{fmt.Errorf("creating %s: is a directory", path)}
	}
	if inPlace || fi != nil && !fi.Mode().IsRegular() {
		// O_APPEND: a name such as /dev/stdout opens anew what the
		// shell may have opened with >>; writing from offset 0 would
		// overwrite it.
		flags := os.O_WRONLY
		if inPlace {
			flags |= os.O_APPEND
		}
		f, err := os.OpenFile(path, flags, 0)
		if err != nil {
			return nil, outputError{fmt.Errorf("creating %s: %w", path, pathErr(err))}
		}
		o.f, o.target = f, path
	} else {
		f, temp, err := createTemp(target)
		if err != nil {
			return nil, outputError{fmt.Errorf("creating %s: %w", path, err)}
		}
		o.f, o.temp, o.target = f, temp, target
		if fi != nil {
			if err := f.Chmod(fi.Mode().Perm()); err != nil {
				o.abort()
				return nil, fmt.Errorf("creating %s: %w", path, pathErr(err))
			}
		}
	}
	o.raw = namedWriter{o.f, path}
	o.w = bufio.NewWriterSize(o.raw, 1<<20)
	return o, nil
}

// outputError is an output path where nothing can be written: exit
// status 2, like a bad input.
type outputError struct{ error }

func (e outputError) Is(target error) bool { return target == errBadInput }
func (e outputError) Unwrap() error        { return e.error }

// maxLinks bounds the symbolic links followed, as the kernel's does.
const maxLinks = 40

// resolveOutput follows the symbolic links from path to the file they
// name, which need not exist (a dangling link is written through, as the
// shell's > does). It returns that file's path and, if it exists, its
// FileInfo. inPlace is set for names of open file descriptors
// (/dev/stdout, /dev/fd/N, /proc/...): their links may name pipes or
// files opened for appending, to be written where they are.
func resolveOutput(path string) (target string, fi fs.FileInfo, inPlace bool, err error) {
	for range maxLinks {
		if descriptorName(path) {
			fi, err := os.Stat(path)
			if err != nil {
				return "", nil, false, err
			}
			return path, fi, true, nil
		}
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil, false, nil
		}
		if err != nil {
			return "", nil, false, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, fi, false, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", nil, false, err
		}
		if !isAbs(link) {
			dir, _ := splitPath(path)
			link = dir + link
		}
		path = link
	}
	return "", nil, false, errors.New("too many levels of symbolic links")
}

func isAbs(path string) bool {
	return strings.HasPrefix(path, "/") || strings.HasPrefix(path, string(os.PathSeparator))
}

// descriptorName reports whether path names an open file descriptor
// rather than a file.
func descriptorName(path string) bool {
	switch path {
	case "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(path, "/dev/fd/") || strings.HasPrefix(path, "/proc/")
}

func splitPath(path string) (dir, base string) {
	i := strings.LastIndexAny(path, "/"+string(os.PathSeparator))
	if i < 0 {
		return "", path
	}
	return path[:i+1], path[i+1:]
}

// directWrite is the size from which a write skips the buffer: the chunks
// of lines a streamOut's workers format (10^8 pairs are 1.4 GB of text,
// written one chunk at a time) are written without a copy.
const directWrite = 64 << 10

// Write writes to the output's buffer, or p itself after what is buffered
// where p is large; once a write has failed, every later one fails with
// that error.
func (o *outputFile) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	if len(p) >= directWrite {
		if o.err = o.w.Flush(); o.err != nil {
			return 0, o.err
		}
		n, err := o.raw.Write(p)
		o.err = err
		return n, err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

// startChunks readies the output for a stream's chunks and returns how
// many goroutines may call writeChunk at once: mappedWriters for a file
// xsect creates (a temporary one), through shared mappings where the
// system allows them, else 1. Nothing but writeChunk may write to the
// output until endChunks.
func (o *outputFile) startChunks() int {
	if o.temp == "" || o.err != nil {
		return 1
	}
	if o.err = o.w.Flush(); o.err != nil {
		return 1
	}
	off, err := o.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 1
	}
	if o.mapped = newMappedOutput(o.f, off, o.path); o.mapped == nil {
		return 1
	}
	return mappedWriters
}

// writeChunk writes a chunk of a stream, as many at once as startChunks
// said.
func (o *outputFile) writeChunk(p []byte) error {
	if o.mapped != nil {
		return o.mapped.write(p)
	}
	_, err := o.Write(p)
	return err
}

// endChunks ends a stream's chunks: what follows is written after them.
// No writeChunk may be running or follow.
func (o *outputFile) endChunks() error {
	if o.mapped != nil {
		if err := o.mapped.close(); err != nil && o.err == nil {
			o.err = err
		}
		o.mapped = nil
	}
	return o.err
}

// commit completes the output: it flushes the buffer and, for a file,
// closes it and renames a temporary file over its target. On failure it
// aborts. It may be called once.
func (o *outputFile) commit() error {
	if o.err == nil {
		o.err = o.w.Flush()
	}
	if o.err != nil || o.f == nil {
		o.abort()
		return o.err
	}
	o.done = true
	err := o.f.Close()
	if o.temp != "" {
		temps.Lock()
		if err == nil {
			old := openReplaced(o.target, gpurt.HandsOffTeardown())
			err = os.Rename(o.temp, o.target)
			if old != nil {
				if err == nil {
					gpurt.HandOffClose(old)
				} else {
					old.Close()
				}
			}
		}
		if err != nil {
			os.Remove(o.temp)
		}
		delete(temps.names, o.temp)
		temps.Unlock()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", o.path, pathErr(err))
	}
	return nil
}

// handOffReplaced is the size from which a file that an output replaces is
// kept open for the helper that outlives the process (gpurt.HandOffClose):
// the rename would free its blocks, on ext4 0.2-0.6 ms a MB (0.27-0.8 s for
// 1.4 GB of pairs), and starting the helper costs about 1 ms.
const handOffReplaced = 16 << 20

// openReplaced returns the regular file at target opened, where a rename
// over it is about to free handOffReplaced bytes or more and the process
// can hand its last close off (handsOff), and nil otherwise.
func openReplaced(target string, handsOff bool) *os.File {
	if !handsOff {
		return nil
	}
	fi, err := os.Lstat(target)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < handOffReplaced {
		return nil
	}
	f, err := os.Open(target)
	if err != nil {
		return nil
	}
	return f
}

// abort closes the output and removes its temporary file; after commit, or
// a second time, it does nothing.
func (o *outputFile) abort() {
	if o.done {
		return
	}
	o.done = true
	if o.f == nil {
		return
	}
	o.f.Close()
	if o.temp != "" {
		temps.Lock()
		os.Remove(o.temp)
		delete(temps.names, o.temp)
		temps.Unlock()
	}
}

// temps are the temporary files of the outputs being written, which a
// signal that ends the process removes first.
var temps struct {
	sync.Mutex
	names map[string]bool
}

// createTemp creates a hidden temporary file in target's directory, mode
// 0666 less the umask (the system applies it, and a default ACL of the
// directory), and registers it for removal on a signal.
func createTemp(target string) (*os.File, string, error) {
	dir, base := splitPath(target)
	temps.Lock()
	defer temps.Unlock()
	for range 100 {
		name := dir + "." + base + ".tmp" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			err = pathErr(err)
			if !errors.Is(err, fs.ErrNotExist) {
				shown := "."
				if dir != "" {
					shown = dir[:max(len(dir)-1, 1)] // without its final separator
				}
				err = fmt.Errorf("cannot create a file in %s: %w", shown, err)
			}
			return nil, "", err
		}
		if temps.names == nil {
			temps.names = map[string]bool{}
		}
		temps.names[name] = true
		return f, name, nil
	}
	return nil, "", errors.New("cannot find an unused temporary name")
}

// catchSignals makes a hangup, an interrupt or a termination remove the
// temporary files of the outputs, and the runs of a sort in progress,
// before the process ends by that signal (sigexit.Catch), and hand the
// GPUs' teardown off as a normal exit does, with nothing kept after it.
// stop undoes it; it may be called more than once.
func catchSignals() (stop func()) {
	return sigexit.Catch(func() {
		temps.Lock() // held to the end: no file is created or renamed after this
		for name := range temps.names {
			os.Remove(name)
		}
		pairsort.Abandon()
		_ = gpurt.HandOffTeardownAfterSignal()
	})
}

// cpuProfileFlag defines --cpuprofile, for the commands whose run it
// profiles (startCPUProfile).
func cpuProfileFlag(fs *flag.FlagSet) *string {
	return fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
}

// checkProfileOutput finds, before any work, a profile and a result that
// would both go to standard output.
func checkProfileOutput(profile, out string) error {
	if profile == "-" && out == "-" {
		return usagef("--cpuprofile and the output cannot both go to standard output")
	}
	return nil
}

// startCPUProfile starts a CPU profile written to path, an output like the
// others: finish stops it, then commits the file if *err is nil and
// removes it otherwise, so that it appears only if the command succeeds.
// With path "" it profiles nothing, and finish does nothing.
func startCPUProfile(env *Env, path string) (finish func(err *error), err error) {
	if path == "" {
		return func(*error) {}, nil
	}
	prof, err := openOutput(env, path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(prof); err != nil {
		prof.abort()
		return nil, err
	}
	return func(err *error) {
		pprof.StopCPUProfile()
		if *err == nil {
			*err = prof.commit()
		} else {
			prof.abort()
		}
	}, nil
}
