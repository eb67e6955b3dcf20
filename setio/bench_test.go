package setio

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/internal/sysinfo"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// benchFiles are the real files the parsers are measured on.
var benchFiles = []string{
	"fimi/kosarak_head36682.dat",
	"fimi/retail.dat",
	"fimi/T10I4D100K.dat",
	"roaring/census-income.sets.gz",
}

// syntheticText is about 90 MB of text as WriteText writes it: xsect's
// zipf-10^8-5000 collection of 2000 sets (10 million elements of mostly 8
// and 9 digits, sorted lines).
func syntheticText(b *testing.B) []byte {
	c, err := synth.Generate(synth.Config{Sets: 2000, Universe: 1e8, AvgSize: 5000, Dist: synth.Zipf, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var t bytes.Buffer
	if err := WriteText(&t, c); err != nil {
		b.Fatal(err)
	}
	return t.Bytes()
}

// loop runs f b.N times for size bytes each. Besides the usual figures it
// reports MB/s per CPU second ("cpu-MB/s") and in the fastest iteration
// ("best-MB/s"): on a machine shared with other work, the average wall time
// mostly measures the others.
func loop(b *testing.B, size int, f func() error) {
	b.SetBytes(int64(size))
	start := sysinfo.CPUTime()
	best := time.Duration(math.MaxInt64)
	for b.Loop() {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	if cpu := sysinfo.CPUTime() - start; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
	b.ReportMetric(float64(size)/1e6/best.Seconds(), "best-MB/s")
}

func BenchmarkReadText(b *testing.B) {
	inputs := map[string][]byte{}
	for _, f := range benchFiles {
		inputs[filepath.Base(f)] = readData(b, f)
	}
	inputs["zipf-1e8-5000x2000"] = nil // made on first use
	for _, name := range []string{"kosarak_head36682.dat", "retail.dat", "T10I4D100K.dat", "census-income.sets.gz", "zipf-1e8-5000x2000"} {
		b.Run(name, func(b *testing.B) {
			data := inputs[name]
			if data == nil {
				data = syntheticText(b)
			}
			// For gzip, bytes are those of the decompressed text.
			size := len(data)
			if bytes.HasPrefix(data, gzipMagic) {
				c, err := ReadText(bytes.NewReader(data), name)
				if err != nil {
					b.Fatal(err)
				}
				var t bytes.Buffer
				WriteText(&t, c)
				size = t.Len()
			}
			loop(b, size, func() error {
				_, err := ReadText(bytes.NewReader(data), name)
				return err
			})
		})
	}
}

// BenchmarkReadBinary reads the same collections from the binary format;
// SetBytes counts the bytes of their text form, so that MB/s compare
// directly with BenchmarkReadText.
func BenchmarkReadBinary(b *testing.B) {
	for _, f := range benchFiles {
		c, err := Load(settest.SharedData(b, f))
		if err != nil {
			b.Fatal(err)
		}
		var text, bin bytes.Buffer
		WriteText(&text, c)
		WriteBinary(&bin, c)
		data := bin.Bytes()
		b.Run(filepath.Base(f), func(b *testing.B) {
			loop(b, text.Len(), func() error {
				_, err := ReadBinary(bytes.NewReader(data), f)
				return err
			})
		})
	}
}

// BenchmarkLoad measures whole files from the page cache: text, binary, and
// binary mapped.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	for _, f := range benchFiles {
		c, err := Load(settest.SharedData(b, f))
		if err != nil {
			b.Fatal(err)
		}
		var text, bin bytes.Buffer
		WriteText(&text, c)
		WriteBinary(&bin, c)
		tp, bp := filepath.Join(dir, "t"), filepath.Join(dir, "b")
		os.WriteFile(tp, text.Bytes(), 0o644)
		os.WriteFile(bp, bin.Bytes(), 0o644)
		base := filepath.Base(f)
		b.Run(base+"/text", func(b *testing.B) {
			loop(b, text.Len(), func() error {
				_, err := Load(tp)
				return err
			})
		})
		b.Run(base+"/binary", func(b *testing.B) {
			loop(b, text.Len(), func() error {
				_, err := Load(bp)
				return err
			})
		})
		b.Run(base+"/map", func(b *testing.B) {
			loop(b, text.Len(), func() error {
				_, closeMap, err := Map(bp)
				if err != nil {
					return err
				}
				return closeMap()
			})
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	c, err := Load(settest.SharedData(b, "fimi/retail.dat"))
	if err != nil {
		b.Fatal(err)
	}
	var text bytes.Buffer
	WriteText(&text, c)
	for _, w := range []struct {
		name  string
		write func(io.Writer, *sets.Collection) error
	}{{"text", WriteText}, {"binary", WriteBinary}} {
		b.Run(w.name, func(b *testing.B) {
			loop(b, text.Len(), func() error { return w.write(io.Discard, c) })
		})
	}
}
