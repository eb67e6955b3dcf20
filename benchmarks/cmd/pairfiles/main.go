// Command pairfiles lets programs outside Go time the same pairs as xsect:
// it writes the generated pairs of internal/bench to files, and times
// xsect's methods on a pair read back from them, so that a peer's driver and
// xsect read identical bytes and can be run alternately by one script
// (scripts/pairwise-peers.sh).
//
//	pairfiles write -dir D [-size 1e6] [-ratios 1,16] [-selectivity 0.01,0.3] [-density 0.01]
//	pairfiles time -dir D NAME WANT [method...]
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
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/xsect/xsect/internal/bench"
	"github.com/xsect/xsect/intersect"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: pairfiles write|time [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = write(os.Args[2:])
	case "time":
		err = timeMethods(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: want write or time", os.Args[1])
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
