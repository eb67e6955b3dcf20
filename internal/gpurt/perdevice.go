package gpurt

import "sync"

// PerDevice holds an engine's state for each device, made at first use
// and kept with the device (owners are never closed). The zero value is
// ready to use.
type PerDevice[T any] struct {
	mu sync.Mutex
	m  map[*Device]T
}

// Get returns d's state, calling newState for it on the first call for d.
// newState runs with p locked, so it should be cheap.
func (p *PerDevice[T]) Get(d *Device, newState func() T) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[d]
	if !ok {
		if p.m == nil {
			p.m = map[*Device]T{}
		}
		v = newState()
		p.m[d] = v
	}
	return v
}
