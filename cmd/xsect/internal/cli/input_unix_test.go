//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestInputFIFO reads every encoding from a named pipe.
func TestInputFIFO(t *testing.T) {
	for _, tc := range inputCases(t) {
		fifo := filepath.Join(t.TempDir(), "in.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return // the reader fails the test
			}
			w.Write(tc.data)
			w.Close()
		}()
		code, stdout, stderr := run(t, "convert", "--to", "text", fifo, "-")
		if code != ExitOK || stdout != string(tc.text) {
			t.Errorf("%s through a FIFO: exit %d, %d bytes out, want %d; stderr %q", tc.name, code, len(stdout), len(tc.text), stderr)
		}
	}
}
