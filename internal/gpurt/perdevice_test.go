package gpurt

import (
	"errors"
	"sync"
	"testing"
)

func TestPerDevice(t *testing.T) {
	var p PerDevice[*int]
	a, b := new(Device), new(Device)
	made := 0
	newState := func() *int { made++; v := made; return &v }
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() {
			d := a
			if i%2 == 1 {
				d = b
			}
			got[i] = p.Get(d, newState)
		})
	}
	wg.Wait()
	if made != 2 {
		t.Fatalf("made %d states for 2 devices", made)
	}
	for i := range got {
		if got[i] != got[i%2] {
			t.Errorf("Get %d returned another state than Get %d on the same device", i, i%2)
		}
	}
	if got[0] == got[1] {
		t.Error("two devices share a state")
	}
	if s := p.Get(a, func() *int { t.Fatal("made a state again"); return nil }); s != got[0] {
		t.Error("a later Get returned another state")
	}
	// A zero T is kept as well (the map tells made from missing).
	var q PerDevice[int]
	calls := 0
	for range 3 {
		if v := q.Get(a, func() int { calls++; return 0 }); v != 0 {
			t.Errorf("Get = %d, want 0", v)
		}
	}
	if calls != 1 {
		t.Errorf("made a zero state %d times, want 1", calls)
	}
}

func TestPerDeviceOpenForget(t *testing.T) {
	var p PerDevice[*int]
	d := new(Device)
	fail := errors.New("cannot open")
	if _, err := p.Open(d, func() (*int, error) { return nil, fail }); err != fail {
		t.Fatalf("Open = %v, want the opener's error", err)
	}
	one, two := new(int), new(int)
	if v, err := p.Open(d, func() (*int, error) { return one, nil }); err != nil || v != one {
		t.Fatalf("Open after a failure = %p, %v; want the new state", v, err)
	}
	if v, _ := p.Open(d, func() (*int, error) { return two, nil }); v != one {
		t.Error("Open made a state again")
	}
	p.Forget(d, two) // not d's state: kept
	if v := p.Get(d, func() *int { return two }); v != one {
		t.Error("Forget dropped a state it was not given")
	}
	p.Forget(d, one)
	if v := p.Get(d, func() *int { return two }); v != two {
		t.Error("after Forget, Get did not make a new state")
	}
}
