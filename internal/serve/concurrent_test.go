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

// TestConcurrentQueue checks the default queue: the device's, or a full
// batch for each batch a Concurrent backend runs at once where that is
// more; a queue given is kept.
func TestConcurrentQueue(t *testing.T) {
	batch, _, gpuQueue := DefaultsFor("gpu")
	for _, tc := range []struct {
		queue, backend int
		want           int
	}{{0, 0, gpuQueue}, {0, 2, max(gpuQueue, 2*batch)}, {0, 6, 6 * batch}, {1000, 6, 1000}} {
		b := newRefBackend([][]uint32{{0}})
		b.device = "gpu"
		cfg := Config{Queue: tc.queue}
		if tc.queue > 0 {
			cfg.MaxQueries = tc.queue
		}
		s, _ := newTestServer(t, cfg, concurrentBackend{b, tc.backend}, nil)
		if got := s.Config().Queue; got != tc.want {
			t.Errorf("--queue %d, backend's concurrency %d: queue %d, want %d", tc.queue, tc.backend, got, tc.want)
		}
	}
}
