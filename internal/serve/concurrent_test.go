package serve

import "testing"

// concurrentBackend says how many searches it runs at once.
type concurrentBackend struct {
	*refBackend
	n int
}

func (b concurrentBackend) Concurrency() int { return b.n }

// TestConcurrentDefault checks where the concurrency in force comes from:
// the flag when given, else a Concurrent backend's own number, else the
// device's default.
func TestConcurrentDefault(t *testing.T) {
	_, gpuConc, _ := DefaultsFor("gpu")
	for _, tc := range []struct {
		given, backend int
		want           int
	}{{0, 6, 6}, {3, 6, 3}, {0, 0, gpuConc}, {5, 0, 5}} {
		b := newRefBackend([][]uint32{{0}})
		b.device = "gpu"
		s, _ := newTestServer(t, Config{Concurrency: tc.given}, concurrentBackend{b, tc.backend}, nil)
		if got := s.Config().Concurrency; got != tc.want {
			t.Errorf("--concurrency %d, backend's %d: %d in force, want %d", tc.given, tc.backend, got, tc.want)
		}
	}
}
