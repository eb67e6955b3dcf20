package engine

import (
	"fmt"
	"slices"
	"sync"
)

// Registry is the list of a workload's engines, safe for concurrent use.
// Each engine is known by its technique and its kind of device, and a pair
// of them may be registered once.
type Registry[E Named] struct {
	workload string // for panics

	mu      sync.Mutex
	engines []E
}

// NewRegistry returns an empty registry for the named workload.
func NewRegistry[E Named](workload string) *Registry[E] {
	return &Registry[E]{workload: workload}
}

// Register adds e after the engines registered before it. It panics if an
// engine with the same name and kind is registered already.
func (r *Registry[E]) Register(e E) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.engines {
		if o.Name() == e.Name() && o.Kind() == e.Kind() {
			panic(fmt.Sprintf("%s: engine %s on %s registered twice", r.workload, e.Name(), e.Kind()))
		}
	}
	r.engines = append(r.engines, e)
}

// Engines returns the registered engines in the order they were added.
func (r *Registry[E]) Engines() []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.engines)
}

// Names returns the names of the registered engines, sorted, once each.
func (r *Registry[E]) Names() []string {
	var names []string
	for _, e := range r.Engines() {
		if !slices.Contains(names, e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// With adds e until the returned function is called, which restores the
// engines as they were: for tests and benchmarks.
func (r *Registry[E]) With(e E) (restore func()) {
	r.mu.Lock()
	saved := slices.Clone(r.engines)
	r.mu.Unlock()
	r.Register(e)
	return func() {
		r.mu.Lock()
		r.engines = saved
		r.mu.Unlock()
	}
}
