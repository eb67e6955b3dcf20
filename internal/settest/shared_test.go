package settest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records what SharedData does with its testing.TB; Skip and Fatal
// stop it as the real ones do, with a panic that run recovers.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

type stopped struct{}

func (*fakeTB) Helper() {}

func (f *fakeTB) Skip(args ...any) {
	f.skipped = strings.TrimSpace(fmt.Sprint(args...))
	panic(stopped{})
}

func (f *fakeTB) Fatal(args ...any) {
	f.failed = strings.TrimSpace(fmt.Sprint(args...))
	panic(stopped{})
}

func (f *fakeTB) run(rel ...string) (path string) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
		}
	}()
	return SharedData(f, rel...)
}

// writeFile writes content to path, creating its folders.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSharedData(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "xsect")
	writeFile(t, filepath.Join(repo, "go.mod"), "// the root\nmodule github.com/xsect/xsect\n\ngo 1.26.0\n")
	writeFile(t, filepath.Join(repo, "benchmarks", "go.mod"), "module github.com/xsect/xsect/benchmarks\n")
	if err := os.MkdirAll(filepath.Join(repo, "benchmarks", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XSECT_DATA", "")
	data := filepath.Join(tmp, "shared", "data")

	// A clone alone: skipped, naming the missing folder, from any depth and
	// from a nested module.
	for _, wd := range []string{repo, filepath.Join(repo, "benchmarks", "sub")} {
		t.Chdir(wd)
		f := &fakeTB{}
		if p := f.run("fimi", "retail.dat"); p != "" || !strings.Contains(f.skipped, data) || f.failed != "" {
			t.Errorf("from %s without the data: path %q, skipped %q, failed %q", wd, p, f.skipped, f.failed)
		}
	}

	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{}
	if p, want := f.run("fimi", "retail.dat"), filepath.Join(data, "fimi", "retail.dat"); p != want || f.skipped != "" || f.failed != "" {
		t.Errorf("with the data: path %q (want %q), skipped %q, failed %q", p, want, f.skipped, f.failed)
	}

	// $XSECT_DATA wins, and must exist.
	other := t.TempDir()
	t.Setenv("XSECT_DATA", other)
	f = &fakeTB{}
	if p, want := f.run("roaring"), filepath.Join(other, "roaring"); p != want || f.skipped != "" || f.failed != "" {
		t.Errorf("$XSECT_DATA: path %q (want %q), skipped %q, failed %q", p, want, f.skipped, f.failed)
	}
	t.Setenv("XSECT_DATA", filepath.Join(other, "missing"))
	f = &fakeTB{}
	if p := f.run("roaring"); p != "" || f.skipped != "" || !strings.Contains(f.failed, "missing") {
		t.Errorf("missing $XSECT_DATA: path %q, skipped %q, failed %q", p, f.skipped, f.failed)
	}

	// Outside any checkout of the module: a failure, not a skip.
	t.Setenv("XSECT_DATA", "")
	t.Chdir(tmp)
	f = &fakeTB{}
	if p := f.run("x"); p != "" || f.skipped != "" || !strings.Contains(f.failed, "no go.mod") {
		t.Errorf("outside the module: path %q, skipped %q, failed %q", p, f.skipped, f.failed)
	}
}

func TestModulePath(t *testing.T) {
	for _, c := range []struct{ gomod, want string }{
		{"module github.com/xsect/xsect\n", "github.com/xsect/xsect"},
		{"// x\n\tmodule \"github.com/xsect/xsect\"  \ngo 1.26\n", "github.com/xsect/xsect"},
		{"module github.com/xsect/xsect/asm\n", "github.com/xsect/xsect/asm"},
		{"modules x\n", ""},
		{"go 1.26\n", ""},
	} {
		if got := modulePath(c.gomod); got != c.want {
			t.Errorf("modulePath(%q) = %q, want %q", c.gomod, got, c.want)
		}
	}
}
