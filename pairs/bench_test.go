package pairs

import (
	"context"
	"os"
	"testing"

	"github.com/xsect/xsect/setio"
)

// BenchmarkFIMI times NewPlan and Run (pairs counted, not formatted) on the
// sparse FIMI files at the supports of docs/BATMAP.md, with the engine auto
// picks and with each CPU engine.
func BenchmarkFIMI(b *testing.B) {
	for _, file := range []string{"retail.dat", "T10I4D100K.dat", "kosarak_head36682.dat"} {
		path := "../../shared/data/fimi/" + file
		if _, err := os.Stat(path); err != nil {
			b.Fatalf("%s is missing: the real data sets are expected in ../shared/data: %v", path, err)
		}
		tx, err := setio.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, support := range []string{"0.1%", "0.01%"} {
			s, err := ParseSupport(support, tx.Len())
			if err != nil {
				b.Fatal(err)
			}
			for _, engine := range []string{"auto", "apriori", "fpgrowth", "batmap"} {
				b.Run(file+"/"+support+"/"+engine, func(b *testing.B) {
					for b.Loop() {
						p, err := NewPlan(tx, Options{MinSupport: s, Engine: engine, Device: "cpu"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := p.Run(context.Background(), func([]Pair) error { return nil }); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkPlan times NewPlan alone: preparation and every estimate.
func BenchmarkPlan(b *testing.B) {
	for _, file := range []string{"retail.dat", "T10I4D100K.dat"} {
		tx, err := setio.Load("../../shared/data/fimi/" + file)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := ParseSupport("0.01%", tx.Len())
		b.Run(file, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewPlan(tx, Options{MinSupport: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
