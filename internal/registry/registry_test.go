package registry

import (
	"slices"
	"testing"
)

type engine struct{ name, device string }

func newTest() *Registry[engine] {
	return New("test", func(e engine) (string, string) { return e.name, e.device })
}

func TestRegistry(t *testing.T) {
	r := newTest()
	for _, e := range []engine{{"mm", "cpu"}, {"scan", "cpu"}, {"mm", "gpu"}} {
		r.Register(e)
	}
	if got := r.Engines(); !slices.Equal(got, []engine{{"mm", "cpu"}, {"scan", "cpu"}, {"mm", "gpu"}}) {
		t.Errorf("Engines = %v, want registration order", got)
	}
	if got := r.Names(); !slices.Equal(got, []string{"mm", "scan"}) {
		t.Errorf("Names = %v, want [mm scan]", got)
	}
	restore := r.With(engine{"extra", "gpu"})
	if n := len(r.Engines()); n != 4 {
		t.Errorf("With: %d engines, want 4", n)
	}
	restore()
	if n := len(r.Engines()); n != 3 {
		t.Errorf("after restore: %d engines, want 3", n)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	r := newTest()
	r.Register(engine{"mm", "cpu"})
	defer func() {
		if recover() == nil {
			t.Error("registering mm on cpu twice did not panic")
		}
	}()
	r.Register(engine{"mm", "cpu"})
}
