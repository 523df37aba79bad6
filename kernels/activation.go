package kernels

import "math"

// The slice activations below compute float32 data with polynomials (exp, and tanh from exp) — eight lanes at a
// time in AVX2 assembly where the CPU has it (exp_amd64.s), in Go otherwise — and float64 data with the math
// package, which the gradient checks need at full precision. Each overwrites xs in place.

// expf32 sets xs[i] = e**xs[i] for float32 data: the vector kernel for the bulk, expf for the tail.
func expf32(xs []float32) {
	for i := vectorExp(xs); i < len(xs); i++ {
		xs[i] = expf(xs[i])
	}
}

// ExpSlice sets xs[i] = e**xs[i].
func ExpSlice[T Float](xs []T) {
	if f, ok := any(xs).([]float32); ok {
		expf32(f)
		return
	}
	for i, x := range xs {
		xs[i] = T(math.Exp(float64(x)))
	}
}

// SigmoidSlice sets xs[i] = 1/(1+e**-xs[i]).
func SigmoidSlice[T Float](xs []T) {
	if f, ok := any(xs).([]float32); ok {
		var buf [256]float32
		for start := 0; start < len(f); start += len(buf) {
			part := f[start:min(start+len(buf), len(f))]
			e := buf[:len(part)]
			for i, x := range part {
				e[i] = -x
			}
			expf32(e)
			for i := range part {
				part[i] = 1 / (1 + e[i])
			}
		}
		return
	}
	for i, x := range xs {
		xs[i] = T(1 / (1 + math.Exp(-float64(x))))
	}
}

// TanhSlice sets xs[i] = tanh(xs[i]).
func TanhSlice[T Float](xs []T) {
	if f, ok := any(xs).([]float32); ok {
		for i := vectorTanh(f); i < len(f); i++ {
			f[i] = tanhf(f[i])
		}
		return
	}
	for i, x := range xs {
		xs[i] = T(math.Tanh(float64(x)))
	}
}

// expf is e**x in float32 (Cephes expf): x = n·ln2 + r with |r| <= ln2/2, e**r by a degree-6 polynomial,
// 2**n by building the exponent bits. Relative error below 2e-7 over the float32 range; it saturates to 0 and
// +Inf outside it, and passes NaN through.
func expf(x float32) float32 {
	const (
		hi   = 88.72283905206835
		lo   = -103.97207708
		log2 = 1.44269504088896341
		c1   = 0.693359375
		c2   = -2.12194440e-4
	)
	if x > hi {
		return float32(math.Inf(1))
	}
	if x < lo {
		return 0
	}
	if x != x {
		return x
	}
	v := log2*x + 0.5
	k := int32(v) // round to nearest: truncate, then step down for negative non-integers (floor)
	if v < 0 && float32(k) != v {
		k--
	}
	n := float32(k)
	r := x - n*c1 - n*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	// scale by 2**n in two halves so that subnormal results (n down to -149) stay exact enough
	if k < -126 {
		return y * math.Float32frombits(uint32(k+126+127)<<23) * math.Float32frombits(uint32(-126+127)<<23)
	}
	if k > 127 {
		return y * 2 * math.Float32frombits(uint32(k-1+127)<<23)
	}
	return y * math.Float32frombits(uint32(k+127)<<23)
}

// tanhf is tanh(x) in float32: x for tiny |x|, an odd polynomial for |x| < 0.625, and 1 − 2/(e**2x + 1) beyond,
// where the subtraction loses nothing; ±1 past |x| > 9.
func tanhf(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	switch {
	case a != a:
		return x
	case a > 9:
		if x < 0 {
			return -1
		}
		return 1
	case a < 0.625:
		// Cephes tanhf polynomial: tanh x = x + x³·P(x²)
		z := x * x
		p := float32(-5.70498872745e-3)
		p = p*z + 2.06390887954e-2
		p = p*z - 5.37397155531e-2
		p = p*z + 1.33314422036e-1
		p = p*z - 3.33332819422e-1
		return x + x*z*p
	}
	t := 1 - 2/(expf(2*a)+1)
	if x < 0 {
		return -t
	}
	return t
}

// Vector names the elementwise kernels in use: "AVX2+FMA" where exp_amd64.s runs, "pure Go" elsewhere.
func Vector() string {
	if hasAVX2FMA {
		return "AVX2+FMA assembly (exp, sigmoid, tanh)"
	}
	return "pure Go"
}
