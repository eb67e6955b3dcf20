package cli

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// smallWindows maps outputs a few pages at a time for the test.
func smallWindows(t *testing.T, pages int) {
	old := mapWindow
	mapWindow = int64(pages * os.Getpagesize())
	t.Cleanup(func() { mapWindow = old })
}

// TestMappedOutput writes chunks of lines from mappedWriters goroutines
// into a file that has a few bytes before them (not a page's start) and
// gets more after, through windows of a few pages that chunks span, and
// checks that the file holds the head, every line once, and the tail,
// nothing more; and that no window stays mapped.
func TestMappedOutput(t *testing.T) {
	smallWindows(t, 3)
	path := filepath.Join(t.TempDir(), "out.txt")
	w, err := openOutput(&Env{}, path)
	if err != nil {
		t.Fatal(err)
	}
	const head, tail = "head\n", "tail\n"
	w.Write([]byte(head))
	if n := w.startChunks(); n != mappedWriters || w.mapped == nil {
		t.Fatalf("startChunks: %d writers, mapped %v; want %d, mapped", n, w.mapped != nil, mappedWriters)
	}
	var (
		mu   sync.Mutex
		want []string
		wg   sync.WaitGroup
	)
	for g := range mappedWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for c := range 60 {
				// From one line to two windows and more.
				var b []byte
				var lines []string
				for n := rng.IntN(int(2*mapWindow) + 100); len(b) <= n; {
					l := fmt.Sprintf("%d\t%d\t%d\n", g, c, len(lines))
					b = append(b, l...)
					lines = append(lines, l)
				}
				if err := w.writeChunk(b); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want = append(want, lines...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if left := len(w.mapped.windows); left > 1 {
		t.Errorf("%d windows mapped after the writes, want the last one at most", left)
	}
	if err := w.endChunks(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(tail))
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		t.Fatalf("the file does not start with %q and end with %q", head, tail)
	}
	sameLines(t, s[len(head):len(s)-len(tail)], want)
}

// TestCopyMappedFault: a copy into a mapping whose file was cut under it
// faults (SIGBUS), and copyMapped returns an error instead of crashing.
func TestCopyMappedFault(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "cut"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	if err := f.Truncate(int64(2 * page)); err != nil {
		t.Fatal(err)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if err := copyMapped(b[:page], []byte("fits")); err != nil {
		t.Fatalf("a copy into the file: %v", err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := copyMapped(b[page:], []byte("past the end")); err != errMappedFault {
		t.Fatalf("a copy past the file's end: %v, want errMappedFault", err)
	}
}

// Standard output and a device are written in place, one write at a
// time.
func TestStartChunksInPlace(t *testing.T) {
	for _, name := range []string{"-", os.DevNull} {
		w, err := openOutput(&Env{Stdout: &strings.Builder{}}, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := w.startChunks(); n != 1 || w.mapped != nil {
			t.Errorf("%s: %d writers, mapped %v; want 1, not mapped", name, n, w.mapped != nil)
		}
		w.endChunks()
		w.commit()
	}
}

var chunkWriterBytes = flag.Int64("chunkwriters.bytes", 256<<20, "bytes each BenchmarkChunkWriters run writes")

// BenchmarkChunkWriters writes -chunkwriters.bytes to a new file in 2 MiB
// chunks: one goroutine through write(2) (how anything else than a file
// xsect creates is written), and 1 to 16 goroutines through the mapping,
// as a streamOut's writers do. The file is removed after each run, and
// the page cache written back, untimed.
func BenchmarkChunkWriters(b *testing.B) {
	chunk := make([]byte, chunkCap)
	for i := range chunk {
		chunk[i] = byte('0' + i%10)
	}
	for _, writers := range []int{0, 1, 2, 4, 8, 16} {
		name := fmt.Sprintf("mapped-%d", writers)
		if writers == 0 {
			name = "write"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(*chunkWriterBytes)
			dir := b.TempDir()
			for b.Loop() {
				path := filepath.Join(dir, "out")
				w, err := openOutput(&Env{}, path)
				if err != nil {
					b.Fatal(err)
				}
				n := 1
				if writers > 0 {
					if w.startChunks() == 1 {
						b.Skip("the output is not mapped here")
					}
					n = writers
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(chunkCap) <= *chunkWriterBytes {
							if err := w.writeChunk(chunk); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				if err := w.endChunks(); err != nil {
					b.Fatal(err)
				}
				if err := w.commit(); err != nil {
					b.Fatal(err)
				}
				// Each run from a clean page cache: the file removed
				// and everything written back, untimed.
				b.StopTimer()
				os.Remove(path)
				syscall.Sync()
				b.StartTimer()
			}
		})
	}
}
