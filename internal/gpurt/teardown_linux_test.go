package gpurt

import (
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(TeardownEnv) == "helper" {
		TeardownHelper() // does not return
	}
	os.Exit(m.Run())
}

// TestTeardownHelperHolds starts this test binary as the teardown helper
// with one end of a pipe standing for a file handed off (HandOffClose):
// the helper must hold it while its parent lives and let it go once the
// parent's end of its standard input closes, as the parent's exit closes
// it.
func TestTeardownHelperHolds(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, parent, err := startTeardownHelper(0, []uintptr{w.Fd()})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if pid < 0 {
		t.Fatal("no helper started for a file handed off")
	}
	eof := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		eof <- err
	}()
	select {
	case err := <-eof:
		t.Fatalf("the helper let its files go while its parent lives (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	syscall.Close(parent)
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper still holds its files 30 s after its parent's end")
	}
	var status syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &status, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !status.Exited() || status.ExitStatus() != 0 {
		t.Errorf("the helper ended with %v, want exit status 0", status)
	}
}

// TestTeardownHelperClosesBeforeLinger checks that a lingering helper lets
// the files it was given go once its parent has ended, not after the
// linger (where a GPU is there; without one it ends at once).
func TestTeardownHelperClosesBeforeLinger(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, parent, err := startHelper("/proc/self/exe", []uintptr{w.Fd()}, MaxLinger)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var status syscall.WaitStatus
		syscall.Wait4(pid, &status, 0, nil)
	}()
	syscall.Close(parent)
	r.SetReadDeadline(time.Now().Add(MaxLinger / 2))
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("the helper still holds its files %v after its parent's end (%v), with a linger of %v", MaxLinger/2, err, MaxLinger)
	}
}

func TestLingerFor(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": DefaultLinger, "0": 0, "0s": 0, "5s": 5 * time.Second, "250ms": 250 * time.Millisecond,
		"-1s": 0, "1h": MaxLinger, "soon": DefaultLinger,
	} {
		if got := lingerFor(v); got != want {
			t.Errorf("lingerFor(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestExitCost(t *testing.T) {
	defer handOff.Store(handOff.Load())
	handOff.Store(false)
	if got := ExitCost(); got != CloseCost {
		t.Errorf("ExitCost without the hand-off = %v, want CloseCost %v", got, CloseCost)
	}
	handOff.Store(true)
	if got := ExitCost(); got != HandOffCost {
		t.Errorf("ExitCost with the hand-off = %v, want HandOffCost %v", got, HandOffCost)
	}
	if !DefaultStarted() && CloseLeft() != HandOffCost {
		t.Errorf("CloseLeft with the hand-off before any GPU opens = %v, want %v", CloseLeft(), HandOffCost)
	}
}

// TestHandOffClose checks that a file handed off is kept for the helper
// where the hand-off is on, and closed at once where it is off.
func TestHandOffClose(t *testing.T) {
	defer handOff.Store(handOff.Load())
	for _, on := range []bool{false, true} {
		handOff.Store(on)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		HandOffClose(w)
		closeAfterExit.Lock()
		kept := slices.Contains(closeAfterExit.files, w)
		closeAfterExit.files = slices.DeleteFunc(closeAfterExit.files, func(f *os.File) bool { return f == w })
		closeAfterExit.Unlock()
		if kept != on {
			t.Errorf("hand-off %v: file kept for the helper %v", on, kept)
		}
		if !on {
			// Closed: the read end sees the end at once.
			r.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadAll(r); err != nil {
				t.Errorf("hand-off off: the file was not closed (%v)", err)
			}
		} else {
			w.Close()
		}
		r.Close()
	}
}

func TestHandOffWithoutGPU(t *testing.T) {
	if Probed() {
		t.Skip("the driver has been asked in this process")
	}
	defer handOff.Store(handOff.Load())
	handOff.Store(true)
	if err := HandOffTeardown(); err != nil {
		t.Errorf("HandOffTeardown where no GPU was opened: %v", err)
	}
}

// TestTeardownHelperLingers (last: it asks for the driver) checks the
// helper's end once its parent has ended: after the linger where the
// driver starts (a GPU is there), and where it does not long before the
// linger, which is then made long (the helper's own start, a test binary
// on a loaded machine, may take a second).
func TestTeardownHelperLingers(t *testing.T) {
	noGPU := Available()
	linger := 2 * time.Second
	if noGPU != nil {
		linger = time.Minute
	}
	pid, parent, err := startHelper("/proc/self/exe", nil, linger)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	syscall.Close(parent)
	var status syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &status, 0, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !status.Exited() || status.ExitStatus() != 0 {
		t.Errorf("the helper ended with %v, want exit status 0", status)
	}
	if noGPU == nil {
		if took < linger || took > linger+30*time.Second {
			t.Errorf("with a GPU, the helper ended %v after its parent, want the linger, %v, and its driver's start", took, linger)
		}
	} else if took > linger/2 {
		t.Errorf("without a GPU (%v), the helper ended %v after its parent, want long before its linger of %v", noGPU, took, linger)
	}
}
