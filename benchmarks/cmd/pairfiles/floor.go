package main

import (
	"flag"
	"fmt"
	"slices"
	"time"
)

// floor times what a kernel that reads b cannot beat: a sum over every k-th
// 64-byte line of -size values (k = 1, 2, 4, 8, 16), one pass at a time after
// a pass over 8 MiB of other memory has evicted b from L1 and L2 (it stays in
// L3 where it fits there), and prints the median, minimum and maximum µs of
// a pass. A probe every k lines on average touches about every k-th line.
func floor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	size := fs.Int("size", 1000000, "values of the array summed")
	rounds := fs.Int("rounds", 41, "passes timed per stride")
	fs.Parse(args)
	if *size < 16 || *rounds < 1 {
		return fmt.Errorf("floor: want -size >= 16 and -rounds >= 1")
	}
	b := make([]uint32, *size)
	for i := range b {
		b[i] = uint32(i)
	}
	evict := make([]uint32, 2<<20)
	var sink uint32
	fmt.Printf("# floor: a sum over every k-th line of %d uint32 (%.1f MiB), L1 and L2 evicted before each pass, %d passes\n",
		*size, float64(4**size)/(1<<20), *rounds)
	for _, k := range []int{1, 2, 4, 8, 16} {
		ts := make([]float64, *rounds)
		for r := range ts {
			sink += sumLines(evict, 16)
			t := time.Now()
			sink += sumLines(b, 16*k)
			ts[r] = float64(time.Since(t).Nanoseconds()) / 1000
		}
		slices.Sort(ts)
		fmt.Printf("every %2d lines: median %8.1f µs (min %8.1f, max %8.1f)\n", k, ts[len(ts)/2], ts[0], ts[len(ts)-1])
	}
	if sink == 1 {
		fmt.Println() // keeps the sums
	}
	return nil
}

// sumLines sums b[0], b[step], b[2*step], ... in four chains.
func sumLines(b []uint32, step int) uint32 {
	var s0, s1, s2, s3 uint32
	i := 0
	for ; i+3*step < len(b); i += 4 * step {
		s0 += b[i]
		s1 += b[i+step]
		s2 += b[i+2*step]
		s3 += b[i+3*step]
	}
	for ; i < len(b); i += step {
		s0 += b[i]
	}
	return s0 + s1 + s2 + s3
}
