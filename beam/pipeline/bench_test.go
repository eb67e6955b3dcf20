package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

// BenchmarkTiles measures what Prism adds to each tile: the same tiles of
// a small collection (a few milliseconds of work in all) run as a
// pipeline on Prism, and one after the other by RunTile. The difference
// of their ms/tile, at several numbers of tiles, is Prism's cost per tile;
// at one tile, its cost per pipeline.
func BenchmarkTiles(b *testing.B) {
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(14, 8))
	in := filepath.Join(dir, "r.sets")
	writeCollection(b, in, randomCollection(rng, 300, 2000))
	for _, blocks := range []int{1, 10, 30} {
		job := Job{Workload: "allpairs", Input: in, Output: filepath.Join(dir, "out"), MinOverlap: 2, Threads: 1}
		tiles, _, err := Plan(context.Background(), &job, "", Limits{Blocks: blocks})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("prism/tiles=%d", len(tiles)), func(b *testing.B) {
			for b.Loop() {
				p, s := beam.NewPipelineWithRoot()
				Build(s, job, tiles)
				if _, err := prism.Execute(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*len(tiles)), "ms/tile")
		})
		b.Run(fmt.Sprintf("direct/tiles=%d", len(tiles)), func(b *testing.B) {
			for b.Loop() {
				for _, t := range tiles {
					if _, err := RunTile(context.Background(), &job, t); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*len(tiles)), "ms/tile")
		})
	}
}
