package xsect_test

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmePackages checks README.md against the module's tree: its
// table of public packages names every package a user of the module can
// import (outside internal/ and testdata/, commands aside), each with a
// job, and nothing that is not one; it names each command (`cmd/xsect`)
// and each nested module (`beam/`), which the table leaves to the text.
func TestReadmePackages(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	table := readmeTable(t, readme, "Public packages")
	libs, cmds, nested := walkModule(t)
	checkTable(t, table, libs, "public packages", "no public package of the module")
	for _, c := range cmds {
		if !strings.Contains(readme, "`"+c+"`") {
			t.Errorf("README.md does not name the command `%s`", c)
		}
	}
	for _, m := range nested {
		if !strings.Contains(readme, "`"+m+"/`") {
			t.Errorf("README.md does not name the nested module `%s/`", m)
		}
	}
	if len(libs) < 10 || len(cmds) == 0 || len(nested) == 0 {
		t.Errorf("found %d public packages, %d commands, %d nested modules: the walk missed some", len(libs), len(cmds), len(nested))
	}
}

// TestReadmeInternalPackages checks README.md's table of the packages
// under internal/ against the tree: it names each of them (nested ones by
// their path below internal/, `gpurt/gputest`), each with a job, and
// nothing that is not one.
func TestReadmeInternalPackages(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	table := readmeTable(t, string(b), "Under them, in `internal/`")
	var pkgs []string
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		var noGo *build.NoGoError
		switch {
		case errors.As(err, &noGo) || err == nil && len(pkg.GoFiles) == 0:
		case err != nil:
			return err
		default:
			pkgs = append(pkgs, strings.TrimPrefix(filepath.ToSlash(path), "internal/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, table, pkgs, "internal packages", "no package under internal/")
	if len(pkgs) < 20 {
		t.Errorf("found %d internal packages: the walk missed some", len(pkgs))
	}
}

// checkTable checks a table of README.md (readmeTable) against the
// packages it must list: it names each of them, each with a job, and
// nothing else (which is what none says).
func checkTable(t *testing.T, table map[string]string, pkgs []string, what, none string) {
	t.Helper()
	for _, p := range pkgs {
		if _, ok := table[p]; !ok {
			t.Errorf("README.md: the table of %s does not name %s", what, p)
		}
	}
	for p, job := range table {
		if !slices.Contains(pkgs, p) {
			t.Errorf("README.md: the table of %s names %s, which is %s", what, p, none)
		}
		if job == "" {
			t.Errorf("README.md: the table of %s gives %s no job", what, p)
		}
	}
}

// readmeTable returns the rows of README.md's first table after the line
// that holds intro: each package named in backquotes in a row's first
// cell, with the row's second cell, its job.
func readmeTable(t *testing.T, readme, intro string) map[string]string {
	t.Helper()
	start := strings.Index(readme, intro)
	if start < 0 {
		t.Fatalf("README.md: no %q before the table", intro)
	}
	lines := strings.Split(readme[start:], "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "| package |") {
		i++
	}
	if i+2 >= len(lines) {
		t.Fatalf("README.md: no table (| package | job |) after %q", intro)
	}
	name := regexp.MustCompile("`([^`]+)`")
	rows := map[string]string{}
	for _, line := range lines[i+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("README.md: a row of the table after %q without two cells: %q", intro, line)
		}
		names := name.FindAllStringSubmatch(cells[1], -1)
		if len(names) == 0 {
			t.Errorf("README.md: a row of the table after %q names no package: %q", intro, line)
		}
		for _, m := range names {
			rows[m[1]] = strings.TrimSpace(cells[2])
		}
	}
	return rows
}

// walkModule returns the module's public library packages and commands
// (slash paths from the root), and its nested modules' folders, whose
// packages are not the module's.
func walkModule(t *testing.T) (libs, cmds, nested []string) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(path)
		if n := d.Name(); rel != "." && (n == "internal" || n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); rel != "." && err == nil {
			nested = append(nested, rel)
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		var noGo *build.NoGoError
		switch {
		case errors.As(err, &noGo) || err == nil && len(pkg.GoFiles) == 0:
			// no package here, or tests alone (the root's)
		case err != nil:
			return err
		case pkg.Name == "main":
			cmds = append(cmds, rel)
		default:
			libs = append(libs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return libs, cmds, nested
}
