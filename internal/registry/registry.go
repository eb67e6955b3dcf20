// Package registry keeps the engines that packages add from init, for the
// planners of allpairs and pairs: each engine is known by its technique's
// name and its device, and a pair of them may be registered once.
package registry

import (
	"fmt"
	"slices"
	"sync"
)

// Registry is a list of engines of type E, safe for concurrent use.
type Registry[E any] struct {
	owner string // the package, for panics
	key   func(E) (name, device string)

	mu      sync.Mutex
	engines []E
}

// New returns an empty registry for package owner, whose engines are told
// apart by key.
func New[E any](owner string, key func(E) (name, device string)) *Registry[E] {
	return &Registry[E]{owner: owner, key: key}
}

// Register adds e after the engines registered before it. It panics if an
// engine with the same name and device is registered already.
func (r *Registry[E]) Register(e E) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, device := r.key(e)
	for _, o := range r.engines {
		if n, d := r.key(o); n == name && d == device {
			panic(fmt.Sprintf("%s: engine %s on %s registered twice", r.owner, name, device))
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
		if name, _ := r.key(e); !slices.Contains(names, name) {
			names = append(names, name)
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
