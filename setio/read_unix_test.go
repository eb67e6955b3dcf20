//go:build unix

package setio

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/xsect/xsect/sets"
)

// TestLoadFIFO: Load and Map read a named pipe once, whatever its format.
func TestLoadFIFO(t *testing.T) {
	c := sets.FromSets([]uint32{1, 2, 3}, nil, []uint32{7, 4294967295})
	var text, bin bytes.Buffer
	WriteText(&text, c)
	WriteBinary(&bin, c)
	for _, data := range [][]byte{text.Bytes(), gz(t, text.Bytes()), bin.Bytes()} {
		for _, how := range []string{"Load", "Map"} {
			fifo := filepath.Join(t.TempDir(), "in.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			go func() {
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Write(data)
					w.Close()
				}
			}()
			var got *sets.Collection
			var err error
			if how == "Load" {
				got, err = Load(fifo)
			} else {
				var closeMap func() error
				if got, closeMap, err = Map(fifo); err == nil {
					defer closeMap()
				}
			}
			if err != nil || !equalCollections(got, c) {
				t.Errorf("%s of a FIFO holding %q...: %s, %v", how, data[:4], describe(got), err)
			}
		}
	}
}
