//go:build !purego && (linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package invindex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Guard turns a panic into the error of Changed only when the file did
// change: a panic on an unchanged file is a bug, and goes on. An index
// read into memory never changes.
func TestGuard(t *testing.T) {
	ixs := testIndexes(t)
	data := encode(t, ixs[0])
	path := filepath.Join(t.TempDir(), "ix")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	guarded := func() (err error) {
		defer ix.Guard(&err)()
		panic("a bug")
	}
	repanicked := func() (r any) {
		defer func() { r = recover() }()
		guarded()
		return nil
	}
	if r := repanicked(); r != "a bug" {
		t.Errorf("a panic on an unchanged file: recovered %v, want the panic to go on", r)
	}
	if err := ix.Changed(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := guarded(); !errors.Is(err, ErrChanged) {
		t.Errorf("a panic on a changed file: %v, want ErrChanged", err)
	}
	if err := ix.Changed(); !errors.Is(err, ErrChanged) {
		t.Errorf("Changed: %v, want ErrChanged", err)
	}
	mem, err := Decode(data, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Changed(); err != nil {
		t.Errorf("an index in memory: %v", err)
	}
}
