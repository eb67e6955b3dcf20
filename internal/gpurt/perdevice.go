package gpurt

import "sync"

// PerDevice holds an engine's state for each device, made at first use
// and kept with the device. The zero value is ready to use.
type PerDevice[T comparable] struct {
	mu sync.Mutex
	m  map[*Device]T
}

// Get returns d's state, calling newState for it on the first call for d.
// newState runs with p locked, so it should be cheap.
func (p *PerDevice[T]) Get(d *Device, newState func() T) T {
	v, _ := p.Open(d, func() (T, error) { return newState(), nil })
	return v
}

// Open is Get for a state whose making can fail: it returns d's state,
// calling open for it until a call succeeds. open runs with p locked, so
// calls for other devices wait for it.
func (p *PerDevice[T]) Open(d *Device, open func() (T, error)) (T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[d]; ok {
		return v, nil
	}
	v, err := open()
	if err != nil {
		return v, err
	}
	if p.m == nil {
		p.m = map[*Device]T{}
	}
	p.m[d] = v
	return v, nil
}

// Forget drops d's state if it is v, for a state that has been closed:
// the next Get or Open makes a new one.
func (p *PerDevice[T]) Forget(d *Device, v T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.m[d]; ok && cur == v {
		delete(p.m, d)
	}
}
