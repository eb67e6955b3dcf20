package synth

import "math"

// The generator must give the same output on every machine and Go version.
// The math package does not promise that: it has assembly versions on some
// architectures, and the compiler may fuse x*y+z into one rounding on
// others. These are the fdlibm algorithms (as in Go's portable math code),
// written with an explicit float64 conversion around every product, which
// forbids fusion (Go spec, "Floating-point operators"), so that only
// correctly rounded IEEE operations remain.

const (
	ln2Hi = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
	ln2Lo = 1.90821492927058770002e-10 // 0x3dea39ef35793c76
)

// detLog is the natural logarithm.
func detLog(x float64) float64 {
	if x >= 0x1p-1022 && x <= math.MaxFloat64 {
		// Normal x, the samplers' case: split the bits as Frexp does.
		b := math.Float64bits(x)
		return logReduced(math.Float64frombits(b&(1<<52-1)|1022<<52), int(b>>52)-1022)
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := math.Frexp(x) // subnormal
	return logReduced(f1, ki)
}

// logReduced is log(f1 * 2^ki) for f1 in [0.5, 1).
func logReduced(f1 float64, ki int) float64 {
	const (
		L1 = 6.666666666666735130e-01 // 0x3FE5555555555593
		L2 = 3.999999999940941908e-01 // 0x3FD999999997FA04
		L3 = 2.857142874366239149e-01 // 0x3FD2492494229359
		L4 = 2.222219843214978396e-01 // 0x3FCC71C51D8E78AF
		L5 = 1.818357216161805012e-01 // 0x3FC7466496CB03DE
		L6 = 1.531383769920937332e-01 // 0x3FC39A09D078C69F
		L7 = 1.479819860511658591e-01 // 0x3FC2F112DF3E5244
	)
	// x = 2^k * (1+f), sqrt(2)/2 < 1+f < sqrt(2).
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * float64(L1+float64(s4*float64(L3+float64(s4*float64(L5+float64(s4*L7)))))))
	t2 := float64(s4 * float64(L2+float64(s4*float64(L4+float64(s4*L6)))))
	R := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+R)) + float64(k*ln2Lo))) - f)
}

// detExp is e**x.
func detExp(x float64) float64 {
	const (
		log2e     = 1.44269504088896338700e+00
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
		nearZero  = 1.0 / (1 << 28)

		P1 = 1.66666666666666657415e-01  // 0x3FC555555555553E
		P2 = -2.77777777770155933842e-03 // 0xBF66C16C16BEBD93
		P3 = 6.61375632143793436117e-05  // 0x3F11566AAF25DE2C
		P4 = -1.65339022054652515390e-06 // 0xBEBBBD41C5D26BF1
		P5 = 4.13813679705723846039e-08  // 0x3E66376972BEA4D0
	)
	if !(x > underflow && x < overflow) {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 1):
			return x
		case x >= overflow:
			return math.Inf(1)
		}
		return 0
	}
	if -nearZero < x && x < nearZero {
		return 1 + x
	}
	// x = k*ln2 + r, |r| <= ln2/2, r = hi - lo for extra precision.
	var k int
	switch {
	case x < 0:
		k = int(float64(log2e*x) - 0.5)
	case x > 0:
		k = int(float64(log2e*x) + 0.5)
	}
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*float64(P1+float64(t*float64(P2+float64(t*float64(P3+float64(t*float64(P4+float64(t*P5)))))))))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	if -1022 <= k && k <= 1023 {
		// Times 2^k, exact or rounded once, as Ldexp would.
		return y * math.Float64frombits(uint64(k+1023)<<52)
	}
	return math.Ldexp(y, k)
}

// detLog1p is log(1+x), accurate near 0 (Goldberg's method: the rounding
// error of 1+x cancels out).
func detLog1p(x float64) float64 {
	u := 1 + x
	if u == 1 {
		return x
	}
	return float64(detLog(u)*x) / (u - 1)
}

// detExpm1 is e**x - 1, accurate near 0 (Kahan's method).
func detExpm1(x float64) float64 {
	if x > 700 || x < -40 {
		return detExp(x) - 1
	}
	u := detExp(x)
	if u == 1 {
		return x
	}
	um1 := u - 1
	if um1 == -1 {
		return -1
	}
	return float64(um1*x) / detLog(u)
}
