package allpairs

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// filterProblem returns a problem of k sets, for filterTile alone: ids
// that are not positions, and either one threshold or one per set.
func filterProblem(r *rand.Rand, k int, self, constant bool) *Problem {
	p := &Problem{Self: self, need: 3}
	p.RIDs = make([]uint32, k)
	p.SIDs = make([]uint32, k)
	for i := range k {
		p.RIDs[i], p.SIDs[i] = uint32(5*i+1), uint32(7*i+2)
	}
	if !constant {
		p.needR, p.needS = make([]uint32, k), make([]uint32, k)
		for i := range k {
			p.needR[i], p.needS[i] = uint32(r.IntN(6)), uint32(r.IntN(6))
		}
	}
	return p
}

// TestFilterTile checks filterTile against the definition: every pair of
// the tile (above the diagonal in a self-join) that reaches its threshold,
// once, with its ids; on rows longer than a batch, at the diagonal's
// edges, with one threshold or one per set, and counting only.
func TestFilterTile(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ k, row0, rows, col0, cols int }{
		{40, 0, 40, 0, 40}, {40, 10, 7, 12, 5}, {40, 30, 10, 0, 16}, {40, 5, 20, 20, 1},
		{20000, 0, 3, 0, 20000}, {20000, 9000, 2, 0, 20000}, {20000, 0, 20000, 9990, 10},
	} {
		for _, self := range []bool{true, false} {
			for _, constant := range []bool{true, false} {
				p := filterProblem(r, sh.k, self, constant)
				tile := &Tile{Row0: sh.row0, Rows: sh.rows, Col0: sh.col0, Cols: sh.cols, Counts: make([]uint32, sh.rows*sh.cols)}
				for i := range tile.Counts {
					tile.Counts[i] = uint32(r.IntN(8))
				}
				var want []Pair
				var wantN int64
				for x := range tile.Rows {
					for y := range tile.Cols {
						i, j := tile.Row0+x, tile.Col0+y
						if c := tile.At(x, y); (!self || i < j) && c >= p.Need(i, j) {
							want = append(want, Pair{I: p.RIDs[i], J: p.SIDs[j], Count: c})
							wantN++
						}
					}
				}
				o, got := collectingOutput(t, p)
				w := o.Writer()
				filterTile(p, tile, w)
				w.Close()
				if !slices.Equal(*got, want) || o.count.Load() != 0 {
					t.Fatalf("shape %+v self %v constant %v: %d pairs, want %d", sh, self, constant, len(*got), len(want))
				}
				if !constant {
					continue
				}
				o = &Output{p: p, countOnly: true}
				w = o.Writer()
				filterTile(p, tile, w)
				w.Close()
				if n := o.count.Load(); n != wantN {
					t.Fatalf("shape %+v self %v: counted %d pairs, want %d", sh, self, n, wantN)
				}
			}
		}
	}
}

// BenchmarkFilterTile filters a band of a self-join as the bit-packed
// product delivers it (16 columns, every row above them) with the count
// distribution of the BATMAP paper's pair instance (Amossen & Pagh):
// supports about 31 ± 5.6, 38 needed, some 13% qualifying.
func BenchmarkFilterTile(b *testing.B) {
	const k, cols = 16000, 16
	r := rand.New(rand.NewPCG(1, 2))
	p := filterProblem(r, k, true, true)
	p.need = 38
	tile := &Tile{Col0: k - cols, Cols: cols, Rows: k - 1}
	tile.Counts = make([]uint32, tile.Rows*tile.Cols)
	for i := range tile.Counts {
		tile.Counts[i] = uint32(max(0, math.Round(31+5.6*r.NormFloat64())))
	}
	var n int
	o := &Output{p: p, sink: func(ps []Pair) error { n += len(ps); return nil }}
	for b.Loop() {
		w := o.Writer()
		filterTile(p, tile, w)
		w.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tile.Counts)), "ns/count")
	b.ReportMetric(float64(n)/float64(b.N*len(tile.Counts)), "qualify")
}

// collectingOutput returns an Output for p whose sink keeps every pair in
// *got, and fails t on a batch larger than batchSize.
func collectingOutput(t *testing.T, p *Problem) (*Output, *[]Pair) {
	got := new([]Pair)
	return &Output{p: p, sink: func(ps []Pair) error {
		if len(ps) > batchSize {
			t.Fatalf("batch of %d pairs", len(ps))
		}
		*got = append(*got, ps...)
		return nil
	}}, got
}

// TestAddTriples checks AddTriples against Add: the same pairs in the same
// order, through batches that fill mid-call, and counted when counting only.
func TestAddTriples(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := filterProblem(r, 3000, false, true)
	for _, n := range []int{0, 1, 100, batchSize - 1, batchSize, 3*batchSize + 17} {
		triples := make([]uint32, 3*n)
		for k := range n {
			triples[3*k], triples[3*k+1], triples[3*k+2] = uint32(r.IntN(1000)), uint32(r.IntN(1000)), uint32(r.IntN(50))
		}
		collect := func(add func(w *Writer)) []Pair {
			o, got := collectingOutput(t, p)
			w := o.Writer()
			w.Add(2999, 2999, 7) // a pair already buffered
			add(w)
			w.Close()
			return *got
		}
		want := collect(func(w *Writer) {
			for k := range n {
				w.Add(2000+int(triples[3*k]), 1000+int(triples[3*k+1]), triples[3*k+2])
			}
		})
		got := collect(func(w *Writer) { w.AddTriples(2000, 1000, triples) })
		if len(want) != n+1 || !slices.Equal(got, want) {
			t.Fatalf("%d triples: AddTriples gave %d pairs, Add %d (want %d)", n, len(got), len(want), n+1)
		}
		o := &Output{p: p, countOnly: true}
		w := o.Writer()
		w.AddTriples(2000, 1000, triples)
		w.Close()
		if c := o.count.Load(); c != int64(n) {
			t.Fatalf("%d triples counted as %d", n, c)
		}
	}
}

// BenchmarkDeliver times the report of a million triples through one
// Writer: AddTriples against Add over slices.Chunk (what the GPU engine's
// delivery did before), into a sink that keeps nothing.
func BenchmarkDeliver(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	p := filterProblem(r, 3000, false, true)
	const n = 1 << 20
	triples := make([]uint32, 3*n)
	for k := range n {
		triples[3*k], triples[3*k+1], triples[3*k+2] = uint32(r.IntN(1000)), uint32(r.IntN(1000)), uint32(r.IntN(50))
	}
	o := &Output{p: p, sink: func([]Pair) error { return nil }}
	b.Run("AddTriples", func(b *testing.B) {
		for b.Loop() {
			w := o.Writer()
			w.AddTriples(2000, 1000, triples)
			w.Close()
		}
	})
	b.Run("Add", func(b *testing.B) {
		for b.Loop() {
			w := o.Writer()
			for t := range slices.Chunk(triples, 3) {
				w.Add(2000+int(t[0]), 1000+int(t[1]), t[2])
			}
			w.Close()
		}
	})
}
