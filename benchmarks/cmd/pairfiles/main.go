// Command pairfiles lets programs outside Go time the same pairs as xsect:
// it writes the generated pairs of internal/bench to files, and times
// xsect's methods on a pair read back from them, so that a peer's driver and
// xsect read identical bytes and can be run alternately by one script
// (scripts/pairwise-peers.sh).
//
//	pairfiles write -dir D [-size 1e6] [-ratios 1,16] [-selectivity 0.01,0.3] [-density 0.01]
//	pairfiles time -dir D NAME WANT [method...]
//	pairfiles sweep [-size 1e6] [-ratios 1,2,...,20000] [-rounds 3] [method...]
//	pairfiles floor [-size 1000000] [-rounds 41]
//
// write stores each pair as D/NAME.a (the smaller set) and D/NAME.b, raw
// little-endian uint32, and prints "NAME WANT" per pair, WANT being the
// exact size of the intersection. time prints, for each method (Count of
// "auto" and of every method of intersect.Methods, then "auto"'s
// Intersect):
//
//	NAME impl=xsect-<method> ns=<ns per op> n=<count>
//
// timed as the peers' driver times its functions: loops of growing length
// until one lasts 50 ms, then one timed loop of that length.
//
// sweep measures the crossovers of the dispatch (the tables of
// intersect_amd64.go, a tier per size of the larger set, -size): it times
// Count of each method (default: auto and every method but the portable
// ones) on generated pairs from 1:1 to 1:20000, the methods alternating,
// rounds times, and prints the median per ratio, the fastest method,
// auto's time over the fastest's, and the ratios at which the fastest
// method changes.
//
// floor times a sum over every k-th cache line of an array of -size values
// held in L3: the least a kernel that reads that many lines of b can take.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/intersect"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: pairfiles write|time|sweep|floor [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = write(os.Args[2:])
	case "time":
		err = timeMethods(os.Args[2:])
	case "sweep":
		err = sweep(os.Args[2:])
	case "floor":
		err = floor(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: want write, time, sweep or floor", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pairfiles:", err)
	os.Exit(2)
}

func write(args []string) error {
	fs := flag.NewFlagSet("write", flag.ExitOnError)
	dir := fs.String("dir", "", "folder to write the pairs to")
	sizes := fs.String("size", "1e6", "comma-separated sizes of the larger set")
	ratios := fs.String("ratios", "1,16,64,256,1000,10000", "comma-separated size ratios larger:smaller")
	sels := fs.String("selectivity", "0.01,0.3", "comma-separated fractions of the smaller set also in the larger")
	dens := fs.String("density", "0.01", "comma-separated fractions of the universe the larger set covers")
	seed := fs.Uint64("seed", 1, "random seed of the generated pairs")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("write: -dir is required")
	}
	ns, err := bench.ParseCounts(*sizes)
	if err != nil {
		return err
	}
	rs, err := bench.ParseCounts(*ratios)
	if err != nil {
		return err
	}
	ss, err := bench.ParseFractions(*sels)
	if err != nil {
		return err
	}
	ds, err := bench.ParseFractions(*dens)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, s := range bench.Grid(ns, rs, ss, ds) {
		a, b, err := bench.Pair(s, *seed)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("n%d-r%d-s%g-d%g", s.Large, s.Ratio, 100*s.Selectivity, 100*s.Density)
		if err := writeSet(filepath.Join(*dir, name+".a"), a); err != nil {
			return err
		}
		if err := writeSet(filepath.Join(*dir, name+".b"), b); err != nil {
			return err
		}
		fmt.Println(name, s.Overlap())
	}
	return nil
}

func writeSet(path string, x []uint32) error {
	raw, err := binary.Append(nil, binary.LittleEndian, x)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

func readSet(path string) ([]uint32, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not a whole number of uint32", path, len(raw))
	}
	x := make([]uint32, len(raw)/4)
	_, err = binary.Decode(raw, binary.LittleEndian, x)
	return x, err
}

func timeMethods(args []string) error {
	fs := flag.NewFlagSet("time", flag.ExitOnError)
	dir := fs.String("dir", "", "folder the pairs were written to")
	minTime := fs.Duration("min-time", 50*time.Millisecond, "shortest duration of the timed loop")
	fs.Parse(args)
	if fs.NArg() < 2 {
		return fmt.Errorf("time: want NAME WANT [method...]")
	}
	name, only := fs.Arg(0), fs.Args()[2:]
	want, err := strconv.Atoi(fs.Arg(1))
	if err != nil {
		return fmt.Errorf("time: WANT: %v", err)
	}
	a, err := readSet(filepath.Join(*dir, name+".a"))
	if err != nil {
		return err
	}
	b, err := readSet(filepath.Join(*dir, name+".b"))
	if err != nil {
		return err
	}
	auto, _ := intersect.Lookup("auto")
	type timed struct {
		impl string
		f    func() int
	}
	var fns []timed
	for _, m := range append([]intersect.Method{auto}, intersect.Methods()...) {
		fns = append(fns, timed{"xsect-" + m.Name, func() int { return m.Count(a, b) }})
	}
	buf := make([]uint32, 0, len(a)+len(b))
	fns = append(fns, timed{"xsect-auto-intersect", func() int {
		buf = intersect.Intersect(buf[:0], a, b)
		return len(buf)
	}})
	var sink int
	for _, t := range fns {
		if len(only) > 0 && !slices.Contains(only, t.impl) {
			continue
		}
		if got := t.f(); got != want {
			fmt.Printf("%s impl=%s WRONG n=%d want=%d\n", name, t.impl, got, want)
			continue
		}
		sec := bench.Measure(func() { sink += t.f() }, 1, *minTime)
		fmt.Printf("%s impl=%s ns=%.1f n=%d\n", name, t.impl, sec*1e9, want)
	}
	if sink < 0 {
		fmt.Println(sink)
	}
	return nil
}

func sweep(args []string) error {
	fs := flag.NewFlagSet("sweep", flag.ExitOnError)
	size := fs.Int("size", 1_000_000, "size of the larger set")
	ratios := fs.String("ratios", "1,2,4,6,8,10,12,14,16,20,24,32,48,64,96,128,192,256,384,512,768,1024,1536,2048,4096,10000,20000", "comma-separated size ratios larger:smaller")
	sel := fs.Float64("selectivity", 0.01, "fraction of the smaller set also in the larger")
	dens := fs.Float64("density", 0.01, "fraction of the universe the larger set covers")
	rounds := fs.Int("rounds", 3, "timings per method and ratio (the median is kept)")
	minTime := fs.Duration("min-time", 20*time.Millisecond, "shortest duration of a timed loop")
	fs.Parse(args)
	rs, err := bench.ParseCounts(*ratios)
	if err != nil {
		return err
	}
	var ms []intersect.Method
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"auto"}
		for _, m := range intersect.Methods() {
			switch m.Name {
			case "merge", "branchless", "gallop":
			default:
				names = append(names, m.Name)
			}
		}
	}
	for _, name := range names {
		m, err := intersect.Lookup(name)
		if err != nil {
			return err
		}
		m.Name = name
		ms = append(ms, m)
	}
	fmt.Printf("# sweep: larger set %d, selectivity %g, density %g, %d rounds, median µs of Count\n", *size, *sel, *dens, *rounds)
	fmt.Printf("%-8s", "ratio")
	for _, m := range ms {
		fmt.Printf(" %14s", m.Name)
	}
	fmt.Printf(" %14s %10s\n", "fastest", "auto/best")
	var prev string
	var changes []string
	for _, r := range rs {
		s := bench.Shape{Large: *size, Ratio: r, Selectivity: *sel, Density: *dens}
		a, b, err := bench.Pair(s, 1)
		if err != nil {
			return err
		}
		want := s.Overlap()
		times := make([][]float64, len(ms))
		var sink int
		for range *rounds {
			for i, m := range ms {
				if got := m.Count(a, b); got != want {
					return fmt.Errorf("%s at 1:%d: Count = %d, want %d", m.Name, r, got, want)
				}
				times[i] = append(times[i], bench.Measure(func() { sink += m.Count(a, b) }, 1, *minTime))
			}
		}
		fmt.Printf("1:%-6d", r)
		best, auto := -1, 0.0
		med := make([]float64, len(ms))
		for i, m := range ms {
			slices.Sort(times[i])
			med[i] = times[i][len(times[i])/2] * 1e6
			fmt.Printf(" %14.2f", med[i])
			if m.Name == "auto" {
				auto = med[i]
			} else if best < 0 || med[i] < med[best] {
				best = i
			}
		}
		fmt.Printf(" %14s %10.3f\n", ms[best].Name, auto/med[best])
		if ms[best].Name != prev {
			changes = append(changes, fmt.Sprintf("1:%d %s", r, ms[best].Name))
			prev = ms[best].Name
		}
		if sink < 0 {
			fmt.Println(sink)
		}
	}
	fmt.Println("# fastest from:", strings.Join(changes, ", "))
	return nil
}
