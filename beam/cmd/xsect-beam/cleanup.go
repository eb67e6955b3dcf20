package main

import (
	"os"
	"sync"

	"github.com/xsect/xsect/beam/pipeline"
	"github.com/xsect/xsect/internal/sigexit"
)

// runTemp is the run's own temporary folder, made $TMPDIR of the process
// while the pipeline runs. Beam's universal runner in loopback mode (the
// default, Prism's) creates a file beamloopbackworker-N in $TMPDIR for a
// worker binary that it never uses, and neither closes nor removes it
// (runnerlib.Execute, Beam 2.77): every run would leave one. Made in a
// folder of the run's own, it goes with the folder, and so does whatever
// else the SDK, or a worker process it starts, puts there.
var runTemp struct {
	sync.Mutex
	dir      string // "" when there is none
	old      string // $TMPDIR before, if set
	oldIsSet bool
}

// makeRunTemp makes the run's temporary folder in $TMPDIR (or /tmp) and
// makes it $TMPDIR.
func makeRunTemp() error {
	runTemp.Lock()
	defer runTemp.Unlock()
	dir, err := os.MkdirTemp("", "xsect-beam-")
	if err != nil {
		return err
	}
	runTemp.old, runTemp.oldIsSet = os.LookupEnv("TMPDIR")
	runTemp.dir = dir
	return os.Setenv("TMPDIR", dir)
}

// removeRunTemp removes the run's temporary folder, with what it holds,
// and restores $TMPDIR. It may be called more than once.
func removeRunTemp() {
	runTemp.Lock()
	defer runTemp.Unlock()
	if runTemp.dir == "" {
		return
	}
	os.RemoveAll(runTemp.dir)
	runTemp.dir = ""
	if runTemp.oldIsSet {
		os.Setenv("TMPDIR", runTemp.old)
	} else {
		os.Unsetenv("TMPDIR")
	}
}

// catchSignals makes a hangup, an interrupt or a termination remove what
// the run is writing, its tiles' partial files (which can be gigabytes)
// and its temporary folder, before the process ends by that signal
// (sigexit.Catch). stop undoes it.
func catchSignals() (stop func()) {
	return sigexit.Catch(func() {
		pipeline.Abandon()
		removeRunTemp()
	})
}
