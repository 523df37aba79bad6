package kernels

// DotF64 returns the float64 sum of x[i]·w[i] over i < len(w) (x at least as long): each product of two
// float32s is exact in float64, so the sum errs by float64's rounding of its additions only, about len(w)·2^-53
// of Σ|x[i]·w[i]|. Sixteen running sums on AVX2 where the CPU has it (the order of the additions differs from
// a plain loop's), one in plain Go elsewhere and for the last len(w) mod 16 terms.
func DotF64(x, w []float32) float64 {
	x = x[:len(w)]
	s, done := vectorDotF64(x, w)
	for i := done; i < len(w); i++ {
		s += float64(x[i]) * float64(w[i])
	}
	return s
}
