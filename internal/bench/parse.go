package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseCounts parses a comma-separated list of positive integers, each
// written plainly (1000), in exponent form (1e3) or with a K, M or G suffix
// (1K, 2.5M).
func ParseCounts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		mult := 1.0
		if n := len(f); n > 0 {
			switch f[n-1] {
			case 'k', 'K':
				mult = 1e3
			case 'm', 'M':
				mult = 1e6
			case 'g', 'G':
				mult = 1e9
			}
			if mult != 1 {
				f = f[:n-1]
			}
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("bench: %q is not a count", f)
		}
		x *= mult
		if x < 1 || x > math.MaxInt32 || x != math.Trunc(x) {
			return nil, fmt.Errorf("bench: %v is not a whole number in [1, 2^31)", x)
		}
		out = append(out, int(x))
	}
	return out, nil
}

// ParseFractions parses a comma-separated list of numbers in [0, 1].
func ParseFractions(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || !(x >= 0 && x <= 1) {
			return nil, fmt.Errorf("bench: %q is not a number in [0, 1]", f)
		}
		out = append(out, x)
	}
	return out, nil
}
