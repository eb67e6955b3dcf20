package engine

import (
	"slices"
	"testing"
)

type engine struct {
	name string
	kind Kind
}

func (e engine) Name() string { return e.name }
func (e engine) Kind() Kind   { return e.kind }

func newTest() *Registry[engine] { return NewRegistry[engine]("test") }

func TestRegistry(t *testing.T) {
	r := newTest()
	for _, e := range []engine{{"mm", CPU}, {"scan", CPU}, {"mm", GPU}} {
		r.Register(e)
	}
	if got := r.Engines(); !slices.Equal(got, []engine{{"mm", CPU}, {"scan", CPU}, {"mm", GPU}}) {
		t.Errorf("Engines = %v, want registration order", got)
	}
	if got := r.Names(); !slices.Equal(got, []string{"mm", "scan"}) {
		t.Errorf("Names = %v, want [mm scan]", got)
	}
	restore := r.With(engine{"extra", GPU})
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
	r.Register(engine{"mm", CPU})
	defer func() {
		if recover() == nil {
			t.Error("registering mm on cpu twice did not panic")
		}
	}()
	r.Register(engine{"mm", CPU})
}
