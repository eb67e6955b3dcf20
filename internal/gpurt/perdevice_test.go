package gpurt

import (
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
