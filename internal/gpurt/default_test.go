package gpurt

import (
	"testing"
	"time"
)

// TestDefault checks the default device: opened once, shared with Open(0),
// kept open when others close it; without a GPU, the same error each time.
func TestDefault(t *testing.T) {
	Prewarm()
	if !DefaultStarted() {
		t.Error("DefaultStarted() = false after Prewarm")
	}
	d1, err1 := Default()
	d2, err2 := Default()
	if d1 != d2 || err1 != err2 {
		t.Fatalf("Default() = %p, %v, then %p, %v", d1, err1, d2, err2)
	}
	if w := OpenWait(time.Second); w != 0 {
		t.Errorf("OpenWait(1s) = %v once Default has returned, want 0", w)
	}
	if err := Available(); err != nil {
		if err1 == nil {
			t.Fatalf("Default() succeeded while Available() = %v", err)
		}
		return
	}
	if err1 != nil {
		t.Fatal(err1)
	}
	d3, err := Open(0)
	if err != nil || d3 != d1 {
		t.Fatalf("Open(0) = %p, %v; want the default device %p", d3, err, d1)
	}
	d3.Close()
	if err := d1.Do(func(c *Ctx) error { _, _, err := c.MemInfo(); return err }); err != nil {
		t.Fatalf("the default device after another Open's Close: %v", err)
	}
}
