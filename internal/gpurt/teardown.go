package gpurt

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The driver tears a process's GPUs down (their contexts, device memory,
// pinned host memory) when the last of the process's files of the driver
// closes: at its exit, on the user's clock, before the shell sees it end.
// On an H200 that is 0.1 s for a bare context and 0.75 s with 4 GiB of
// pinned host memory (docs/GPU.md). A program can hand its files to a
// helper process that holds them until the program has ended, so the
// teardown follows the exit instead of preceding it.

// TeardownEnv names the environment variable that turns the hand-off off:
// with XSECT_GPU_TEARDOWN=exit, HandOffTeardown does nothing and the
// process pays the teardown at its exit, as a process that does not call
// it does. The helper that HandOffTeardown starts is marked by
// XSECT_GPU_TEARDOWN=helper.
const TeardownEnv = "XSECT_GPU_TEARDOWN"

// LingerEnv names the environment variable that sets how long the helper
// keeps the driver started once the teardown is done, as a Go duration
// ("3s"; "0" turns it off; DefaultLinger where unset or malformed, at most
// MaxLinger). The driver starts in 10-20 ms in a process while another
// process has started it, and in 180-200 ms once none has for 2 s (on the
// H200 host, docs/GPU.md): a command run within that time of the last
// saves the difference. The helper holds no context and no memory of a
// GPU meanwhile, and it holds nothing of the driver after a signal
// (HandOffTeardownAfterSignal).
const LingerEnv = "XSECT_GPU_LINGER"

// DefaultLinger and MaxLinger bound LingerEnv.
const (
	DefaultLinger = 3 * time.Second
	MaxLinger     = time.Minute
)

// lingerFor reads LingerEnv's value v.
func lingerFor(v string) time.Duration {
	if v == "" {
		return DefaultLinger
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return DefaultLinger
	}
	return min(max(d, 0), MaxLinger)
}

// HandOffCost is what handing the teardown off adds to a process that
// opened a GPU, in place of CloseCost: starting the helper (0.4-0.8 ms on
// the H200 host).
const HandOffCost = time.Millisecond

// handOff is set by TeardownHelper where the program can hand its
// teardown off.
var handOff atomic.Bool

// TeardownHelper must be the first call in the main function of a program
// that calls HandOffTeardown. In the helper process HandOffTeardown
// starts (the same program, run again), it holds the driver's files it was
// given until the program that started it has ended, closes them (the
// teardown), keeps the driver started for the time LingerEnv sets, and
// then exits without returning. Everywhere else it returns at once; from
// then on, unless TeardownEnv turns the hand-off off, CloseLeft counts the
// hand-off (HandOffCost) instead of the teardown.
func TeardownHelper() {
	switch os.Getenv(TeardownEnv) {
	case "helper":
		holdUntilParentExits()
		lingerAfterTeardown(lingerFor(os.Getenv(LingerEnv)))
		os.Exit(0)
	case "exit":
		return
	}
	handOff.Store(handOffSupported)
}

// HandsOffTeardown reports whether the process hands its GPUs' teardown
// off at its exit (TeardownHelper was called, on a system where it can).
func HandsOffTeardown() bool { return handOff.Load() }

// ExitCost is what a process that opened a GPU pays for it at its exit:
// HandOffCost where it hands the teardown off, CloseCost where it does
// not.
func ExitCost() time.Duration {
	if HandsOffTeardown() {
		return HandOffCost
	}
	return CloseCost
}

// HandOffTeardown, called at the end of a program that called
// TeardownHelper, after its output is written and just before it exits,
// passes the process's files of the GPU driver, and those given to
// HandOffClose, to a helper process that holds them until this process has
// ended: the driver's teardown then runs after the exit, in the helper,
// instead of before it. It does nothing where neither a GPU was opened nor
// a file handed off, or where the hand-off is off. The process keeps its
// files, so work still in flight is unharmed, but what it opens of the
// driver after the call is torn down at its exit. On an error the process
// pays the teardown at its exit, as without it.
func HandOffTeardown() error { return handOffTeardown(lingerFor(os.Getenv(LingerEnv))) }

// HandOffTeardownAfterSignal is HandOffTeardown for a process that a
// signal ends: its helper ends with the teardown, keeping nothing of the
// driver started after it (LingerEnv).
func HandOffTeardownAfterSignal() error { return handOffTeardown(0) }

func handOffTeardown(linger time.Duration) error {
	if !HandsOffTeardown() {
		return nil
	}
	closeAfterExit.Lock()
	defer closeAfterExit.Unlock()
	fds := make([]uintptr, len(closeAfterExit.files))
	for i, f := range closeAfterExit.files {
		fds[i] = f.Fd()
	}
	_, _, err := startTeardownHelper(linger, fds)
	return err
}

// closeAfterExit holds the files HandOffClose was given, open until the
// process ends.
var closeAfterExit struct {
	sync.Mutex
	files []*os.File
}

// HandOffClose adds f to what HandOffTeardown hands to its helper: the last
// close of f then follows the process's exit as the GPUs' teardown does.
// It is for a file whose last close is costly, such as one a rename has
// just replaced, whose blocks the file system frees then (ext4: 0.25-0.8 s
// for 1.4 GB). f must not be closed by anyone else; where the hand-off is
// off or fails, the process's exit closes it. It does nothing where
// HandsOffTeardown is false, and the helper keeps the driver started
// (LingerEnv) only where it was also handed the driver's files.
func HandOffClose(f *os.File) {
	if !HandsOffTeardown() {
		f.Close()
		return
	}
	closeAfterExit.Lock()
	closeAfterExit.files = append(closeAfterExit.files, f)
	closeAfterExit.Unlock()
}
