package allpairs

import (
	"context"
	"fmt"

	"github.com/xsect/xsect/batmap"
)

// batmapEngine stores every set as a BATMAP (package batmap: 2-of-3 cuckoo
// hashing into tables whose sizes are powers of two, so that any two sets
// compare entry by entry, the narrower one wrapped) and counts all pairs in
// tiles of the upper triangle. Its work is independent of the universe and
// of the overlap: about 6·max(|Si|, |Sj|) entries per pair.
type batmapEngine struct{ cpuEngine }

func init() { Register(batmapEngine{cpuEngine{"batmap"}}) }

// The cost of BATMAP, after package pairs' calibration (pairs/batmap.go)
// and TestCalibrate: per element inserted, per 32-bit word compared (with
// the AVX-512 kernel; 4x for the portable one), per pair.
const (
	batmapInsertNS = 40
	batmapWordNS   = 0.07
	batmapPairNS   = 3
)

func batmapLayout(p *Problem) (*batmap.Layout, []int, error) {
	sizes := make([]int, p.R.Len())
	for i := range sizes {
		sizes[i] = p.R.SetLen(i)
	}
	l, err := batmap.NewLayout(uint64(max(p.Universe, 1)), sizes, batmap.Config{})
	return l, sizes, err
}

// lowerBound is the estimate without the words compared (0 where it cannot
// run, which Estimate says).
func (batmapEngine) lowerBound(p *Problem) float64 {
	if _, _, ok := p.Tiled(); ok || !p.Self {
		return 0
	}
	return cpuSeconds(p, batmapInsertNS*float64(p.Stats.R.Elements)+batmapPairNS*float64(p.Stats.Pairs))
}

func (batmapEngine) Estimate(p *Problem) (Estimate, error) {
	if _, _, ok := p.Tiled(); ok {
		return Estimate{}, cannot("its tiles follow the batmaps' order, not the caller's grid")
	}
	if !p.Self {
		return Estimate{}, cannot("compares a collection with itself only")
	}
	l, sizes, err := batmapLayout(p)
	if err != nil {
		return Estimate{}, cannot("%v", err)
	}
	words := l.PairWords(sizes)
	word := batmapWordNS
	if batmap.Kernel() == "go-swar64" {
		word *= 4
	}
	ns := batmapInsertNS*float64(p.Stats.R.Elements) + word*words + batmapPairNS*float64(p.Stats.Pairs)
	return Estimate{Seconds: cpuSeconds(p, ns), Memory: l.Memory(sizes, p.Threads),
		Detail: fmt.Sprintf("%s, %.3g words compared", l, words)}, nil
}

func (batmapEngine) Run(ctx context.Context, p *Problem, out *Output) error {
	l, _, err := batmapLayout(p)
	if err != nil {
		return err
	}
	b, err := l.Build(p.R, p.Threads, nil)
	if err != nil {
		return err
	}
	writers := make([]*Writer, p.Threads)
	for w := range writers {
		writers[w] = out.Writer()
	}
	defer func() {
		for _, w := range writers {
			w.Close()
		}
	}()
	return b.AllPairs(ctx, batmap.PairsOptions{Threads: p.Threads}, func(w int, t *batmap.Tile) error {
		wr := writers[w]
		for x := 0; x < t.Rows; x++ {
			a := int(b.IDs[t.Row0+x])
			row := t.Counts[x*t.Cols : (x+1)*t.Cols]
			for y := max(0, t.Row0+x+1-t.Col0); y < len(row); y++ {
				c := row[y]
				i, j := a, int(b.IDs[t.Col0+y])
				if i > j {
					i, j = j, i
				}
				if c >= p.Need(i, j) {
					wr.Add(i, j, c)
				}
			}
		}
		pairs := tilePairs(p, &Tile{Row0: t.Row0, Col0: t.Col0, Rows: t.Rows, Cols: t.Cols})
		out.Progress(pairs)
		return out.Err()
	})
}
