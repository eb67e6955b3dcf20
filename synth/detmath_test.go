package synth

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps is the distance between a and b in units in the last place.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a-math.Nextafter(a, math.Inf(1))), math.SmallestNonzeroFloat64)
}

func TestDetMath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var worst [4]float64
	for range 200000 {
		// Magnitudes over the ranges the samplers use, and beyond.
		x := math.Ldexp(r.Float64(), r.IntN(80)-60)
		y := (r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(12)-3)
		z := (r.Float64()*2 - 1) * math.Ldexp(1, -r.IntN(40))
		for i, c := range []struct{ got, want float64 }{
			{detLog(x), math.Log(x)},
			{detExp(y), math.Exp(y)},
			{detLog1p(z), math.Log1p(z)},
			{detExpm1(z), math.Expm1(z)},
		} {
			worst[i] = max(worst[i], ulps(c.got, c.want))
		}
	}
	// fdlibm is within 1 ulp of the truth, and so is math (which on amd64 is
	// assembly for Exp): 2 between them. The log1p/expm1 tricks lose a few.
	if worst[0] > 2 || worst[1] > 2 || worst[2] > 4 || worst[3] > 4 {
		t.Errorf("worst errors in ulps: log %v, exp %v, log1p %v, expm1 %v", worst[0], worst[1], worst[2], worst[3])
	}
	for _, c := range []struct{ got, want float64 }{
		{detLog(1), 0}, {detLog(0), math.Inf(-1)}, {detExp(0), 1}, {detExp(-1000), 0},
		{detExp(1000), math.Inf(1)}, {detLog1p(0), 0}, {detExpm1(0), 0}, {detLog(math.E), 1},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if !math.IsNaN(detLog(-1)) {
		t.Error("log(-1) is not NaN")
	}
}

// The bit-splitting fast path of detLog gives what Frexp gives, and the
// edges of both functions are right.
func TestDetMathPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for range 100000 {
		x := math.Ldexp(r.Float64()+0.5, r.IntN(2000)-1000)
		if got, want := detLog(x), logReduced(math.Frexp(x)); got != want {
			t.Fatalf("detLog(%v) = %v, via Frexp %v", x, got, want)
		}
	}
	// Subnormals (math.Log's amd64 assembly gets them wrong: compare with
	// the scaled-up value).
	for _, x := range []float64{0x1p-1074, 0x1.8p-1030, 0x1p-1022, 0x1.fffp-1023} {
		if got, want := detLog(x), detLog(x*0x1p100)-100*math.Ln2; ulps(got, want) > 2 {
			t.Errorf("detLog(%v) = %v, want %v", x, got, want)
		}
	}
	if got, want := detLog(math.MaxFloat64), math.Log(math.MaxFloat64); ulps(got, want) > 1 {
		t.Errorf("detLog(max) = %v, want %v", got, want)
	}
	// Near the ends of exp's range (math.Exp's amd64 assembly overflows
	// early, at 709.54 already: compare with squares instead).
	for _, x := range []float64{-708, -709.5, 709, 709.7} {
		if got, want := detExp(x), detExp(x/2)*detExp(x/2); ulps(got, want) > 4 {
			t.Errorf("detExp(%v) = %v, want about %v", x, got, want)
		}
	}
	if got := detExp(-744); got <= 0 || got > 0x1p-1070 {
		t.Errorf("detExp(-744) = %v, want a subnormal", got)
	}
	if got := detExp(-746); got != 0 {
		t.Errorf("detExp(-746) = %v", got)
	}
}
