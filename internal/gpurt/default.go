package gpurt

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The default device is the first GPU, opened once for the whole process:
// every engine that runs on "the GPU" uses it, so that the process holds
// one CUDA context however many engines it runs.
var (
	defaultStart atomic.Int64 // unix nanoseconds when opening began; 0 before
	defaultDone  atomic.Bool  // opening has ended, opened or failed
)

var openDefault = sync.OnceValues(func() (*Device, error) {
	defaultStart.CompareAndSwap(0, time.Now().UnixNano())
	defer defaultDone.Store(true)
	return Open(0)
})

// Default returns the first GPU, opened at the first call (or by Prewarm)
// and never closed. Later calls wait for the first and return the same
// device, or the same error. Open(0) returns it too while it is open.
func Default() (*Device, error) { return openDefault() }

// Prewarm starts opening the default device in the background (the
// driver and a context: a few tenths of a second), so
// that a command can do it while it reads its input. It returns at once;
// calling it again does nothing.
func Prewarm() {
	if defaultStart.CompareAndSwap(0, time.Now().UnixNano()) {
		go openDefault()
	}
}

// PrewarmGPUs is Prewarm for a choice of GPUs (ParseGPUs; nil: all): it
// starts opening the default device only where the choice includes GPU 0,
// and the choice's set (OpenSet) in the background. It returns at once.
func PrewarmGPUs(list []int) {
	if list == nil || slices.Contains(list, 0) {
		Prewarm()
	}
	go OpenSet(list)
}

// DefaultStarted reports whether opening the default device has begun
// (by Default or Prewarm). A process that opens a GPU pays the context's
// teardown at its exit, whatever runs on it.
func DefaultStarted() bool { return defaultStart.Load() != 0 }

// OpenWait estimates how long a call of Default still waits for the
// device, given how long opening it takes: all of opening if it has not
// begun, what is left of it since it began, and 0 once it has ended.
// Planners add it to a GPU engine's estimate.
func OpenWait(opening time.Duration) time.Duration {
	return openWait(opening, defaultStart.Load(), defaultDone.Load(), time.Now())
}

// openWait is OpenWait's arithmetic, apart from the clock and the state.
func openWait(opening time.Duration, start int64, done bool, now time.Time) time.Duration {
	switch {
	case done:
		return 0
	case start == 0:
		return opening
	}
	return max(0, opening-now.Sub(time.Unix(0, start)))
}
