package allpairs

import (
	"context"
	"fmt"
	"math"

	"github.com/xsect/xsect/internal/par"
)

// scanCount is the classic scan-count over a static inverted index (the CPU
// analogue of sf-gssjoin): each probe set walks the lists of its elements
// and increments one counter per set met; the counters then hold the probe's
// overlaps with every other set. Its work is the sum over elements of
// C(df, 2) (self-join) or dfR·dfS, independent of the set sizes, and its
// counters stay in cache, so it wins on sparse collections.
type scanCount struct{ cpuEngine }

func init() { Register(scanCount{cpuEngine{"scancount"}}) }

// sparseFactor: a probe reports its pairs by walking its lists a second time
// (not by scanning all its counters) when it touched fewer than one counter
// in sparseFactor.
const sparseFactor = 4

func (scanCount) Estimate(p *Problem) (Estimate, error) {
	st := &p.Stats
	if st.R.Elements+st.S.Elements >= math.MaxUint32 {
		return Estimate{}, cannot("over 2^32 elements")
	}
	sp := planScan(p)
	return Estimate{Seconds: cpuSeconds(p, sp.ns), Memory: sp.mem, Detail: sp.detail}, nil
}

// scanPlan is how scan-count runs a problem. Probe-major walks, for each
// probe, the lists of its elements: its counters stay in L1 or L2, but each
// element costs a random access into the index, which is slow once the index
// outgrows the caches. Element-major walks the index once, in order, and
// increments a matrix of pair counters: the accesses to the index stream,
// and the counters of a few thousand sets fit in L2/L3. The cost model picks
// the cheaper for the index size, k and the total increments.
type scanPlan struct {
	elementMajor bool
	blockRows    int // element-major: rows per block, 0 for one private matrix per worker
	ns           float64
	mem          int64
	detail       string
	probeNS      float64 // the probe-major estimate, for mmjoin
	privateNS    float64 // the element-major estimate with private matrices (+Inf if they do not fit)
}

func planScan(p *Problem) scanPlan {
	return p.Memo("allpairs.scancount", func() any { return choosePlanScan(p) }).(scanPlan)
}

func choosePlanScan(p *Problem) scanPlan {
	st := &p.Stats
	kr, ks := int64(st.R.Sets), int64(st.S.Sets)
	nr, ns := float64(st.R.Elements), float64(st.S.Elements)
	work := float64(st.ScanWork)
	dense := costs.denseFor(p)
	u := float64(p.Universe)
	// Probe-major.
	idx := 4*(int64(p.Universe)+1) + 4*st.S.Elements
	if p.Self {
		idx += 4 * st.S.Elements // ranks
	}
	build := costs.build(ns, p.Universe)
	var pm scanPlan
	pm.mem = idx + 4*ks*int64(p.Threads)
	if rows, cols, ok := p.Tiled(); ok {
		// One binary search per element and band of tiles.
		bands := math.Ceil(float64(kr) / float64(rows))
		if !p.Self {
			bands = math.Ceil(float64(ks) / float64(cols))
		}
		pm.ns = build + costs.inc(counterBytes(rows))*work + costs.elemAt(idx)*nr*bands + dense*float64(st.Pairs)
		pm.detail = "probe-major, per tile"
		return pm
	}
	emit := math.Min(dense*float64(st.Pairs), costs.revisit*costs.inc(counterBytes(int(ks)))*work+costs.elemAt(idx)*nr)
	if p.ZeroQualifies() {
		emit = dense * float64(st.Pairs)
	}
	pm.ns = build + costs.elemAt(idx)*nr + costs.inc(counterBytes(int(ks)))*work + emit
	pm.detail = fmt.Sprintf("probe-major, index %s", bytesString(idx))
	plans := []scanPlan{pm}
	// Element-major: index both sides (one in a self-join), stream it.
	emIdx := 4*(int64(p.Universe)+1) + 4*st.S.Elements
	n := ns
	if !p.Self {
		emIdx += 4*(int64(p.Universe)+1) + 4*st.R.Elements
		n += nr
	}
	base := costs.build(n, p.Universe) + costs.stream*n + costs.walk*u
	matrix := 4 * kr * ks
	if priv := matrix * int64(p.Threads); priv <= min(p.Memory/4, 1<<29) {
		em := scanPlan{elementMajor: true}
		em.mem = emIdx + priv
		// Every worker's matrix is zeroed first and read when reporting.
		em.ns = base + costs.incAt(matrix)*work + (dense*float64(st.Pairs)+costs.clear*float64(matrix))*float64(p.Threads)
		em.detail = fmt.Sprintf("element-major, %d private %s matrices", p.Threads, bytesString(matrix))
		plans = append(plans, em)
	}
	if kr > 1 {
		rows := max(1, int((4<<20)/(4*max(ks, 1))))
		blocks := math.Ceil(float64(kr) / float64(rows))
		eb := scanPlan{elementMajor: true, blockRows: rows}
		eb.mem = emIdx + int64(p.Threads)*4*int64(rows)*ks
		search := 2 * math.Log2(float64(st.MaxDF)+2)
		eb.ns = base + blocks*u*(costs.stream+costs.dense*search) + costs.incAt(4<<20)*work + dense*float64(st.Pairs)
		eb.detail = fmt.Sprintf("element-major, %.0f blocks of %d rows", blocks, rows)
		plans = append(plans, eb)
	}
	private := math.Inf(1)
	for _, sp := range plans {
		if sp.elementMajor && sp.blockRows == 0 {
			private = sp.ns
		}
	}
	for i := range plans {
		plans[i].probeNS = pm.ns
		plans[i].privateNS = private
	}
	best := plans[0]
	for _, sp := range plans[1:] {
		if sp.ns < best.ns {
			best = sp
		}
	}
	if p.forceScan != nil {
		best = p.forceScan(plans)
	}
	return best
}

func counterBytes(n int) int64 { return 4 * int64(n) }

func (scanCount) Run(ctx context.Context, p *Problem, out *Output) error {
	if _, _, ok := p.Tiled(); ok {
		x := buildIndex(p.Threads, p.S, p.Universe, p.DFS, p.Self)
		return runTiles(ctx, p, out, 0, func(r0, r1, c0, c1 int) int64 { return rectPairs(p.Self, r0, r1, c0, c1) }, func() filler {
			return scanTileFiller(p, x)
		})
	}
	if sp := planScan(p); sp.elementMajor {
		return scanElementMajor(ctx, p, out, sp.blockRows)
	}
	if p.Self {
		return scanSelf(ctx, p, out)
	}
	return scanCross(ctx, p, out)
}

// scanSelf runs the self-join: probe i counts its overlaps with the sets
// before it, through the ranked prefixes of its lists.
func scanSelf(ctx context.Context, p *Problem, out *Output) error {
	c := p.R
	k := c.Len()
	x := buildIndex(p.Threads, c, p.Universe, p.DFR, true)
	work := make([]int64, k)
	for i := range work {
		var w int64
		for _, r := range x.rank[c.Offsets[i]:c.Offsets[i+1]] {
			w += int64(r)
		}
		work[i] = w
	}
	spans := splitWork(k, p.Threads*tasksPerThread, func(i int) int64 {
		return work[i] + int64(c.SetLen(i)) + int64(i)/8
	})
	counters := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(spans), p.Threads, func(w, t int) error {
		if counters[w] == nil {
			counters[w] = make([]uint32, k)
		}
		cnt := counters[w]
		wr := out.Writer()
		defer wr.Close()
		sp := spans[t]
		var pairs int64
		for i := sp.lo; i < sp.hi; i++ {
			lo, hi := c.Offsets[i], c.Offsets[i+1]
			elems := c.Elements[lo:hi]
			ranks := x.rank[lo:hi]
			for q, e := range elems {
				s := x.start[e]
				for _, j := range x.post[s : s+ranks[q]] {
					cnt[j]++
				}
			}
			pairs += int64(i)
			if !p.zero && work[i]*sparseFactor < int64(i) {
				// Few counters touched: walk the lists again.
				for q, e := range elems {
					s := x.start[e]
					for _, j := range x.post[s : s+ranks[q]] {
						if v := cnt[j]; v != 0 {
							if v >= p.Need(int(j), i) {
								wr.Add(int(j), i, v)
							}
							cnt[j] = 0
						}
					}
				}
				continue
			}
			reportColumn(p, wr, cnt[:i], i)
		}
		out.Progress(pairs)
		return out.Err()
	})
}

// reportColumn reports the qualifying pairs (j, i) of a self-join for
// j < len(cnt) from probe i's counters, and zeroes them.
func reportColumn(p *Problem, wr *Writer, cnt []uint32, i int) {
	reportCounts(p, wr, cnt, i, 0, true)
	clear(cnt)
}

// scanCross runs R × S: probe r counts its overlaps with all of S.
func scanCross(ctx context.Context, p *Problem, out *Output) error {
	r, s := p.R, p.S
	kr, ks := r.Len(), s.Len()
	x := buildIndex(p.Threads, s, p.Universe, p.DFS, false)
	work := make([]int64, kr)
	for i := range work {
		var w int64
		for _, e := range r.Set(i) {
			w += int64(p.DFS[e])
		}
		work[i] = w
	}
	spans := splitWork(kr, p.Threads*tasksPerThread, func(i int) int64 {
		return work[i] + int64(r.SetLen(i)) + int64(ks)/8
	})
	counters := make([][]uint32, p.Threads)
	return par.Tasks(ctx, len(spans), p.Threads, func(w, t int) error {
		if counters[w] == nil {
			counters[w] = make([]uint32, ks)
		}
		cnt := counters[w]
		wr := out.Writer()
		defer wr.Close()
		sp := spans[t]
		for i := sp.lo; i < sp.hi; i++ {
			elems := r.Set(i)
			for _, e := range elems {
				for _, j := range x.list(e) {
					cnt[j]++
				}
			}
			if !p.zero && work[i]*sparseFactor < int64(ks) {
				for _, e := range elems {
					for _, j := range x.list(e) {
						if v := cnt[j]; v != 0 {
							if v >= p.Need(i, int(j)) {
								wr.Add(i, int(j), v)
							}
							cnt[j] = 0
						}
					}
				}
				continue
			}
			reportRow(p, wr, cnt, i)
		}
		out.Progress(int64(sp.hi-sp.lo) * int64(ks))
		return out.Err()
	})
}

// reportRow reports the qualifying pairs (i, j) from a probe's counters over
// S, and zeroes them.
func reportRow(p *Problem, wr *Writer, cnt []uint32, i int) {
	reportCounts(p, wr, cnt, i, 0, false)
	clear(cnt)
}

// scanTileFiller fills dense tiles by scan-count, restricting each list to
// the tile's range of sets with two binary searches.
func scanTileFiller(p *Problem, x *index) filler {
	var col []uint32
	return func(t *Tile) {
		if !p.Self {
			c0, c1 := uint32(t.Col0), uint32(t.Col0+t.Cols)
			full := t.Col0 == 0 && t.Cols == p.S.Len()
			for xr := 0; xr < t.Rows; xr++ {
				row := t.Counts[xr*t.Cols : (xr+1)*t.Cols]
				for _, e := range p.R.Set(t.Row0 + xr) {
					l := x.list(e)
					if !full {
						l = l[lowerBound(l, c0):]
						l = l[:lowerBound(l, c1)]
					}
					for _, j := range l {
						row[j-c0]++
					}
				}
			}
			return
		}
		// Self-join: column i of the tile gathers the sets j < i in the
		// tile's rows.
		if cap(col) < t.Rows {
			col = make([]uint32, t.Rows)
		}
		col = col[:t.Rows]
		r0 := uint32(t.Row0)
		for y := 0; y < t.Cols; y++ {
			i := t.Col0 + y
			r1 := uint32(min(t.Row0+t.Rows, i))
			if r1 <= r0 {
				continue
			}
			lo, hi := p.S.Offsets[i], p.S.Offsets[i+1]
			for q := lo; q < hi; q++ {
				l := x.before(p.S.Elements[q], uint32(q))
				if r0 > 0 {
					l = l[lowerBound(l, r0):]
				}
				if r1 < uint32(i) {
					l = l[:lowerBound(l, r1)]
				}
				for _, j := range l {
					col[j-r0]++
				}
			}
			for xr, v := range col[:r1-r0] {
				t.Counts[xr*t.Cols+y] = v
			}
			clear(col[:r1-r0])
		}
	}
}
