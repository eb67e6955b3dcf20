package gpuintersect

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
	"github.com/xsect/xsect/intersect"
)

// BenchmarkSISI is the single-instance benchmark of Bellas & Gounaris on
// this machine: for uniform, normal and zipf sets of 1M to 100M elements
// over universes of 10^8 and 10^9, it times every GPU method's kernels on
// device-resident sets, its end-to-end Count and Intersect (transfers
// included), and the CPU path on all cores, and writes a table:
//
//	go test -c -o gpuintersect.test ./internal/gpuintersect
//	./gpuintersect.test -test.run '^$' -test.bench '^BenchmarkSISI$' -test.benchtime 1x -sisi.grid full -sisi.table table.txt
//
// Every result is checked against the CPU's.
func BenchmarkSISI(b *testing.B) {
	// Start-up, timed in this fresh process: the driver, the context and
	// the kernels (from the disk cache when the tests ran first).
	t0 := time.Now()
	gputest.Need(b, gpurt.Available())
	t1 := time.Now()
	dev, err := gpurt.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	t2 := time.Now()
	e, err := New(dev)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	startup = fmt.Sprintf("start-up: driver %.0f ms, context %.0f ms, kernels %.0f ms\n", t1.Sub(t0).Seconds()*1e3, t2.Sub(t1).Seconds()*1e3, time.Since(t2).Seconds()*1e3)
	grid, ok := benchGrids[*sisiGrid]
	if !ok {
		b.Fatalf("-sisi.grid %q: want quick, large or full", *sisiGrid)
	}
	var tab strings.Builder
	tw := tabwriter.NewWriter(&tab, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "set\t|A|\t|B|\t|A∩B|\tmethod\tcount kernel\tGB/s\tintersect kernel\tcount e2e\tintersect e2e\t\n")
	var variants []*Engine
	for _, f := range strings.Split(*sisiItems, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var cfg ipConfig
		var flags string
		fmt.Sscanf(f, "%dx%d%s", &cfg.threads, &cfg.items, &flags)
		cfg.syncLoad = strings.Contains(flags, "s")
		cfg.fast = strings.Contains(flags, "f")
		v, err := newEngine(e.Device(), cfg, gpurt.NewStager(stageSlots, stageBytes))
		if err != nil {
			fmt.Printf("variant %s: %v\n", f, err)
			continue
		}
		defer v.Close()
		variants = append(variants, v)
	}
	largest := 0
	for _, ds := range grid {
		largest = max(largest, ds.n)
	}
	for _, ds := range grid {
		for i := 0; i < b.N; i++ {
			vs := variants
			if ds.n < largest {
				vs = nil
			}
			if err := benchDataset(b, e, ds, tw, vs); err != nil {
				b.Fatal(err)
			}
		}
	}
	tw.Flush()
	notes := benchNotes(b, e)
	out := notes + tab.String()
	fmt.Print(out)
	if *sisiTable != "" {
		if err := os.WriteFile(*sisiTable, []byte(out), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

var startup string

var (
	sisiGrid  = flag.String("sisi.grid", "quick", "BenchmarkSISI's data sets: quick (10M), large (100M) or full")
	sisiTable = flag.String("sisi.table", "", "BenchmarkSISI writes its table to this `file` too")
	sisiReps  = flag.Int("sisi.reps", 5, "BenchmarkSISI's timed repetitions (the median is reported)")
	sisiItems = flag.String("sisi.ipitems", "", "BenchmarkSISI also times ip's count kernel in these block `shapes`, THREADSxITEMS[s] (comma-separated; s: load through registers, not cp.async; f: the sentinel walk), on the largest sets")
	sisiMeths = flag.String("sisi.methods", "", "BenchmarkSISI runs only these GPU `methods` (comma-separated)")
)

type dataset struct {
	dist string // uniform, normal, zipf
	n    int    // expected set size
	u    uint64 // universe
}

func (d dataset) String() string { return fmt.Sprintf("%s-%s-%s", d.dist, si(uint64(d.n)), si(d.u)) }

func si(x uint64) string {
	switch {
	case x >= 1e9 && x%1e9 == 0:
		return fmt.Sprintf("%dG", x/1e9)
	case x >= 1e6 && x%1e6 == 0:
		return fmt.Sprintf("%dM", x/1e6)
	}
	return fmt.Sprint(x)
}

var benchGrids = map[string][]dataset{
	"quick": {{"uniform", 10e6, 1e9}, {"normal", 10e6, 1e9}, {"zipf", 10e6, 1e9}},
	"large": {{"uniform", 100e6, 1e9}, {"normal", 100e6, 1e9}, {"zipf", 100e6, 1e9}},
	"one":   {{"uniform", 100e6, 1e9}},
	"full": func() []dataset {
		var ds []dataset
		for _, dist := range []string{"uniform", "normal", "zipf"} {
			for _, nu := range [][2]uint64{{1e6, 1e8}, {10e6, 1e8}, {10e6, 1e9}, {100e6, 1e9}} {
				ds = append(ds, dataset{dist, int(nu[0]), nu[1]})
			}
		}
		return ds
	}(),
}

// benchDataset times everything on one data set and adds its rows.
func benchDataset(b *testing.B, e *Engine, ds dataset, tw *tabwriter.Writer, variants []*Engine) error {
	x := generate(ds, 1)
	y := generate(ds, 2)
	workers := runtime.GOMAXPROCS(0)
	want := intersect.CountParallel(x, y, workers)
	if w1 := intersect.Count(x, y); w1 != want {
		return fmt.Errorf("%v: parallel CPU count %d, serial %d", ds, want, w1)
	}
	reps := max(1, *sisiReps)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()*1e3) }
	inBytes := float64(4 * (len(x) + len(y)))

	cpuC := median(reps, func() time.Duration {
		t := time.Now()
		intersect.CountParallel(x, y, workers)
		return time.Since(t)
	})
	var dst []uint32
	cpuI := median(reps, func() time.Duration {
		t := time.Now()
		dst = intersect.IntersectParallel(dst[:0], x, y, workers)
		return time.Since(t)
	})
	if len(dst) != want {
		return fmt.Errorf("%v: parallel CPU intersect %d, want %d", ds, len(dst), want)
	}
	cpu1 := median(min(reps, 3), func() time.Duration {
		t := time.Now()
		intersect.Count(x, y)
		return time.Since(t)
	})
	fmt.Fprintf(tw, "%v\t%d\t%d\t%d\tcpu-1\t%s\t%.0f\t-\t%s\t-\t\n", ds, len(x), len(y), want, ms(cpu1), inBytes/cpu1.Seconds()/1e9, ms(cpu1))
	fmt.Fprintf(tw, "%v\t%d\t%d\t%d\tcpu-%d\t%s\t%.0f\t%s\t%s\t%s\t\n", ds, len(x), len(y), want, workers, ms(cpuC), inBytes/cpuC.Seconds()/1e9, ms(cpuI), ms(cpuC), ms(cpuI))

	sx, err := e.Upload(x)
	if err != nil {
		return err
	}
	defer e.Free(sx)
	sy, err := e.Upload(y)
	if err != nil {
		return err
	}
	defer e.Free(sy)
	for _, m := range Methods() {
		if *sisiMeths != "" && !slices.Contains(strings.Split(*sisiMeths, ","), m.String()) {
			continue
		}
		var ferr error
		fail := func(what string, got int, err error) {
			if ferr == nil && (err != nil || got != want) {
				ferr = fmt.Errorf("%v %v %s: got %d, %v; want %d", ds, m, what, got, err, want)
			}
		}
		kc := median(reps, func() time.Duration {
			n, d, err := e.CountSets(sx, sy, m)
			fail("CountSets", n, err)
			return d
		})
		ki := median(reps, func() time.Duration {
			out, d, err := e.IntersectSets(sx, sy, m)
			if err == nil {
				fail("IntersectSets", out.Len(), nil)
				e.Free(out)
			} else {
				fail("IntersectSets", 0, err)
			}
			return d
		})
		ec := median(reps, func() time.Duration {
			t := time.Now()
			n, err := e.Count(x, y, m)
			d := time.Since(t)
			fail("Count", n, err)
			return d
		})
		var got []uint32
		ei := median(reps, func() time.Duration {
			t := time.Now()
			var err error
			got, err = e.Intersect(got[:0], x, y, m)
			d := time.Since(t)
			fail("Intersect", len(got), err)
			return d
		})
		if ferr == nil && !slices.Equal(got, dst) {
			ferr = fmt.Errorf("%v %v: Intersect differs from the CPU: %s", ds, m, diff(got, dst))
		}
		if ferr != nil {
			return ferr
		}
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%v\t%s\t%.0f\t%s\t%s\t%s\t\n", ds, len(x), len(y), want, m, ms(kc), inBytes/kc.Seconds()/1e9, ms(ki), ms(ec), ms(ei))
	}
	// IP with other tile shapes: count kernel only, on the same sets.
	for _, v := range variants {
		var ferr error
		kc := median(reps, func() time.Duration {
			n, d, err := v.CountSets(sx, sy, IP)
			if ferr == nil && (err != nil || n != want) {
				ferr = fmt.Errorf("%v ip %v: got %d, %v; want %d", ds, v.ip, n, err, want)
			}
			return d
		})
		if ferr != nil {
			return ferr
		}
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\tip %s\t%s\t%.0f\t-\t-\t-\t\n", ds, len(x), len(y), want, v.variant, ms(kc), inBytes/kc.Seconds()/1e9)
	}
	return nil
}

// benchNotes measures the ceilings the table is read against: the
// device's copy bandwidth and the host-to-device transfer rates.
func benchNotes(b *testing.B, e *Engine) string {
	info := e.Device().Info()
	var sb strings.Builder
	fmt.Fprintf(&sb, "device: %s, %d SMs, %s, peak %.0f GB/s; host: %d cores\n", info.Name, info.SMs, gpurt.FormatBytes(info.Memory), info.PeakBandwidth()/1e9, runtime.GOMAXPROCS(0))
	sb.WriteString(startup)
	const n = 1 << 30
	err := e.dev.Do(func(c *gpurt.Ctx) error {
		src, err := c.Alloc(n)
		if err != nil {
			return err
		}
		defer c.Free(src)
		dst, err := c.Alloc(n)
		if err != nil {
			return err
		}
		defer c.Free(dst)
		c.Memset32(src, 1, e.stream)
		d := median(5, func() time.Duration {
			c.Record(e.start, e.stream)
			c.CopyDevice(dst, src, e.stream)
			c.Record(e.stop, e.stream)
			d, _ := c.Elapsed(e.start, e.stop)
			return d
		})
		fmt.Fprintf(&sb, "device-to-device copy: %.0f GB/s (read + write)\n", 2*n/d.Seconds()/1e9)
		host := make([]uint32, 100<<20) // 400 MB
		for i := range host {
			host[i] = uint32(i)
		}
		hb := gpurt.Bytes(host)
		pageable := median(3, func() time.Duration {
			t := time.Now()
			c.CopyToDevice(src.Slice(0, len(hb)), hb)
			return time.Since(t)
		})
		stagedWith := func(slots, bytes int) time.Duration {
			st := gpurt.NewStager(slots, bytes)
			defer st.Free(c)
			return median(3, func() time.Duration {
				t := time.Now()
				st.Upload(c, e.stream, src.Slice(0, len(hb)), hb)
				c.Sync(e.stream)
				return time.Since(t)
			})
		}
		staged := stagedWith(stageSlots, stageBytes)
		for _, alt := range [][2]int{{16, 4 << 20}, {16, 8 << 20}, {32, 2 << 20}} {
			d := stagedWith(alt[0], alt[1])
			fmt.Fprintf(&sb, "host-to-device, 400 MB, staged through %d pinned buffers of %d MiB: %.1f GB/s\n", alt[0], alt[1]>>20, float64(len(hb))/d.Seconds()/1e9)
		}
		registered := median(3, func() time.Duration {
			t := time.Now()
			if err := c.Register(hb); err != nil {
				fmt.Fprintf(&sb, "register: %v\n", err)
				return 0
			}
			c.CopyToDeviceAsync(src.Slice(0, len(hb)), hb, e.stream)
			c.Sync(e.stream)
			c.Unregister(hb)
			return time.Since(t)
		})
		regOnly := median(3, func() time.Duration {
			t := time.Now()
			c.Register(hb)
			d := time.Since(t)
			c.Unregister(hb)
			return d
		})
		fmt.Fprintf(&sb, "host-to-device, 400 MB: pageable %.1f GB/s, staged through pinned buffers %.1f GB/s, registered in place %.1f GB/s (registering alone %.1f ms)\n",
			float64(len(hb))/pageable.Seconds()/1e9, float64(len(hb))/staged.Seconds()/1e9, float64(len(hb))/registered.Seconds()/1e9, regOnly.Seconds()*1e3)
		pinned, err := c.AllocHost(len(hb))
		if err != nil {
			return err
		}
		defer c.FreeHost(pinned)
		copy(pinned.Bytes(), hb)
		up := median(3, func() time.Duration {
			t := time.Now()
			c.CopyToDeviceAsync(src.Slice(0, len(hb)), pinned.Bytes(), e.stream)
			c.Sync(e.stream)
			return time.Since(t)
		})
		dn := median(3, func() time.Duration {
			t := time.Now()
			c.CopyToHostAsync(pinned.Bytes(), src.Slice(0, len(hb)), e.stream)
			c.Sync(e.stream)
			return time.Since(t)
		})
		fmt.Fprintf(&sb, "bus ceiling, 400 MB from and to pinned memory: host-to-device %.1f GB/s, device-to-host %.1f GB/s\n",
			float64(len(hb))/up.Seconds()/1e9, float64(len(hb))/dn.Seconds()/1e9)
		back := make([]byte, len(hb))
		down := median(3, func() time.Duration {
			t := time.Now()
			c.CopyToHost(back, src.Slice(0, len(hb)))
			return time.Since(t)
		})
		fmt.Fprintf(&sb, "device-to-host, 400 MB, pageable: %.1f GB/s\n", float64(len(hb))/down.Seconds()/1e9)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&sb, "notes: %v\n", err)
	}
	e.dev.Do(func(c *gpurt.Ctx) error {
		name := "ip_total"
		if e.ip.fast {
			name = "ipf_total"
		}
		k, err := e.kernel(c, name)
		if err != nil {
			return err
		}
		occ, _ := c.Occupancy(k, e.ip.threads, 0)
		fmt.Fprintf(&sb, "ip_total (%v): %d registers, %d blocks per SM; ", e.ip, k.Registers(), occ)
		for _, name := range []string{"ipobs_total", "iphi_total", "obs_total", "hi_total", "bm_total", "bmd_total", "ip_partition"} {
			k, err := e.kernel(c, name)
			if err != nil {
				return err
			}
			occ, _ := c.Occupancy(k, threads, 0)
			fmt.Fprintf(&sb, "%s: %d registers, %d blocks of %d per SM; ", name, k.Registers(), occ, threads)
		}
		sb.WriteString("\n")
		return nil
	})
	sb.WriteString("times in ms, median of the runs; GB/s = bytes of both inputs / count kernel time\n")
	return sb.String()
}

func median(reps int, f func() time.Duration) time.Duration {
	f() // warm up: module load, buffer growth, caches
	ds := make([]time.Duration, reps)
	for i := range ds {
		ds[i] = f()
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// generate draws a set of about ds.n elements from [0, ds.u) with the
// data set's distribution, by walking the universe with geometric gaps
// whose rate follows the density; segments are drawn in parallel, each
// from its own seeded stream, so the result depends only on ds and seed.
func generate(ds dataset, seed uint64) []uint32 {
	u := float64(ds.u)
	n := float64(ds.n)
	var p func(x float64) float64
	switch ds.dist {
	case "uniform":
		p = func(float64) float64 { return n / u }
	case "normal":
		mu, sigma := u/2, u/8
		k := n / (sigma * math.Sqrt(2*math.Pi))
		p = func(x float64) float64 { d := (x - mu) / sigma; return k * math.Exp(-d*d/2) }
	case "zipf":
		// p(x) = min(1, c/(x+1)): a dense head of c values and a tail
		// falling as 1/x, c chosen for n expected elements.
		expected := func(c float64) float64 { return c + c*math.Log(u/c) }
		lo, hi := 1.0, u
		for range 100 {
			mid := math.Sqrt(lo * hi)
			if expected(mid) < n {
				lo = mid
			} else {
				hi = mid
			}
		}
		c := lo
		p = func(x float64) float64 { return c / (x + 1) }
	default:
		panic("unknown distribution " + ds.dist)
	}
	const segs = 256
	parts := make([][]uint32, segs)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s := int(next.Add(1) - 1)
				if s >= segs {
					return
				}
				rng := rand.New(rand.NewPCG(seed, uint64(s)))
				lo := ds.u * uint64(s) / segs
				hi := ds.u * uint64(s+1) / segs
				var out []uint32
				for x := lo; ; {
					q := min(p(float64(x)), 1)
					if q >= 1 {
						out = append(out, uint32(x))
						x++
					} else {
						gap := math.Floor(math.Log(1-rng.Float64()) / math.Log1p(-q))
						if gap > float64(hi-x) {
							break
						}
						x += uint64(gap)
						if x >= hi {
							break
						}
						out = append(out, uint32(x))
						x++
					}
					if x >= hi {
						break
					}
				}
				parts[s] = out
			}
		}()
	}
	wg.Wait()
	return slices.Concat(parts...)
}

func TestGenerateAndCPUPaths(t *testing.T) {
	for _, ds := range []dataset{{"uniform", 20000, 1e6}, {"normal", 20000, 1e6}, {"zipf", 20000, 1e6}} {
		x, y := generate(ds, 1), generate(ds, 2)
		if !slices.IsSorted(x) || len(slices.Compact(slices.Clone(x))) != len(x) {
			t.Fatalf("%v: not strictly increasing", ds)
		}
		if len(x) < ds.n*9/10 || len(x) > ds.n*11/10 {
			t.Errorf("%v: %d elements, want about %d", ds, len(x), ds.n)
		}
		if x[len(x)-1] >= uint32(ds.u) {
			t.Errorf("%v: element %d outside the universe", ds, x[len(x)-1])
		}
		if !slices.Equal(x, generate(ds, 1)) {
			t.Errorf("%v: not reproducible", ds)
		}
		want := intersect.Intersect(nil, x, y)
		for _, w := range []int{1, 3, 16} {
			if n := intersect.CountParallel(x, y, w); n != len(want) {
				t.Errorf("%v: CountParallel(%d workers) = %d, want %d", ds, w, n, len(want))
			}
			if got := intersect.IntersectParallel([]uint32{1}, x, y, w); !slices.Equal(got[1:], want) || got[0] != 1 {
				t.Errorf("%v: IntersectParallel(%d workers): %s", ds, w, diff(got[1:], want))
			}
		}
	}
}
