package pipeline

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Tile)(nil)).Elem())
	register.DoFn2x2[context.Context, Tile, int64, error](&tileFn{})
	register.DoFn2x1[context.Context, int64, error](&finishFn{})
}

// Counters the pipeline reports (namespace "xsect").
var (
	pairsCounter = beam.NewCounter("xsect", "pairs")
	tilesCounter = beam.NewCounter("xsect", "tiles")
)

// Build adds the job's pipeline to s:
//
//	Create(tiles) → Reshuffle → ParDo(run tile, write its file) → Sum(pairs) → ParDo(finish)
//
// The reshuffle spreads the tiles over the workers (without it a runner
// may fuse them with Create into one bundle on one worker). Finishing
// writes the count of a job that only counts, and removes the temporary
// files of failed attempts.
func Build(s beam.Scope, job Job, tiles []Tile) {
	s = s.Scope("xsect." + job.Workload)
	col := beam.CreateList(s, tiles)
	col = beam.Reshuffle(s, col)
	counts := beam.ParDo(s, &tileFn{Job: job}, col)
	total := stats.Sum(s, counts)
	beam.ParDo0(s, &finishFn{Job: job}, total)
}

// tileFn runs a tile on the worker.
type tileFn struct {
	Job Job
}

func (f *tileFn) ProcessElement(ctx context.Context, t Tile) (int64, error) {
	n, err := RunTile(ctx, &f.Job, t)
	if err != nil {
		return 0, err
	}
	pairsCounter.Inc(ctx, n)
	tilesCounter.Inc(ctx, 1)
	return n, nil
}

// finishFn runs once, after every tile.
type finishFn struct {
	Job Job
}

func (f *finishFn) ProcessElement(ctx context.Context, total int64) error {
	if f.Job.CountOnly {
		return writeCount(ctx, f.Job.Output, total)
	}
	return removePartials(ctx, f.Job.Output)
}
