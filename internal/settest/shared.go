package settest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootModule is the module path of the repository's root go.mod.
const rootModule = "github.com/xsect/xsect"

// SharedData returns the path of rel (its elements joined by
// filepath.Join) in the project's real data sets: $XSECT_DATA when it is
// set, else the folder shared/data beside the repository (../shared/data
// from the root, found by walking up to the go.mod of
// github.com/xsect/xsect, so that nested modules and any package depth
// work). When that folder is absent, as in a clone alone, SharedData skips
// tb naming the missing path; CI (.ci/run) insists on the folder, so the
// tests on real data do run there. A missing $XSECT_DATA folder fails tb:
// it was asked for.
func SharedData(tb testing.TB, rel ...string) string {
	tb.Helper()
	dir, err := sharedDataDir()
	switch {
	case errors.Is(err, errSharedAbsent):
		tb.Skip(err)
	case err != nil:
		tb.Fatal(err)
	}
	return filepath.Join(append([]string{dir}, rel...)...)
}

var errSharedAbsent = errors.New("the real data sets are absent")

// sharedDataDir returns the data folder, or an error wrapping
// errSharedAbsent when the default one does not exist.
func sharedDataDir() (string, error) {
	if d := os.Getenv("XSECT_DATA"); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", err
		}
		return d, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(filepath.Dir(root), "shared", "data")
	if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
		return "", &absentError{d}
	} else if err != nil {
		return "", err
	}
	return d, nil
}

type absentError struct{ dir string }

func (e *absentError) Error() string {
	return "no folder " + e.dir + ": the tests on real data need the project's shared data sets beside the repository (or $XSECT_DATA)"
}

func (e *absentError) Unwrap() error { return errSharedAbsent }

// repoRoot returns the folder holding the go.mod of the root module,
// searched upwards from the working directory (a test's package folder).
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(string(b)) == rootModule {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod of " + rootModule + " in " + wd + " or above it")
		}
	}
}

// modulePath returns the path of the module directive of a go.mod file.
func modulePath(gomod string) string {
	for line := range strings.Lines(gomod) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
