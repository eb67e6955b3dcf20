package synth

import (
	"fmt"
	"testing"

	"github.com/xsect/xsect/internal/sysinfo"
)

// BenchmarkGenerate makes 1000 sets of about 10,000 elements over 10^6
// (Bellas & Gounaris's shape at a hundredth of the size), with one worker: the
// figure is per core.
func BenchmarkGenerate(b *testing.B) {
	for _, d := range []Dist{Uniform, Normal, Zipf} {
		for _, u := range []uint64{1e6, 1e8} {
			cfg := Config{Sets: 1000, Universe: u, AvgSize: 10000, Dist: d, Seed: 42, Workers: 1}
			b.Run(fmt.Sprintf("%v-%d-10000x1000", d, u), func(b *testing.B) {
				start := sysinfo.CPUTime()
				for b.Loop() {
					if _, err := Generate(cfg); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time per op: the machine may be shared.
				b.ReportMetric(float64(sysinfo.CPUTime()-start)/1e9/float64(b.N), "cpu-s/op")
			})
		}
	}
}
