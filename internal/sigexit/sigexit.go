// Package sigexit lets a command that a hangup, an interrupt or a
// termination stops remove what it was writing (temporary files, partial
// outputs) and still end by that signal, as it would have uncaught: the
// shell sees 128 plus the signal's number (130 for SIGINT, 143 for
// SIGTERM) and a script that was interrupted stops. The xsect and
// xsect-beam commands share it.
package sigexit

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Catch makes SIGHUP, SIGINT and SIGTERM run cleanup, then end the
// process by the signal. Signals ignored when the process started (nohup,
// a background job) stay ignored. cleanup must not return before it has
// made sure that nothing more is left behind (holding the locks that
// creating files takes, for one): the process ends once it returns. stop
// undoes Catch; it may be called more than once.
func Catch(cleanup func()) (stop func()) {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return func() {} // Notify with none would catch every signal
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cleanup()
			dieOf(s)
		case <-done:
		}
	}()
	return sync.OnceFunc(func() {
		signal.Stop(ch)
		close(done)
	})
}

// dieOf ends the process by signal s, or where that cannot be done,
// exits with status 128 plus its number.
func dieOf(s os.Signal) {
	signal.Reset(s)
	if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(s) == nil {
		time.Sleep(time.Second) // the signal is on its way
	}
	n := 0
	if sn, ok := s.(syscall.Signal); ok {
		n = int(sn)
	}
	os.Exit(128 + n)
}
