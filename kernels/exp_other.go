//go:build !amd64 || purego

package kernels

const hasAVX2FMA = false

// vectorExp does nothing without AVX2: expf handles every value.
func vectorExp(xs []float32) int { return 0 }

// vectorTanh does nothing without AVX2: tanhf handles every value.
func vectorTanh(xs []float32) int { return 0 }

// vectorAdam does nothing without AVX2: AdamUpdate's scalar loop handles every value.
func vectorAdam(w, g, m, v []float32, c *AdamCoeffs) int { return 0 }

// vectorDotF64 sums nothing without AVX2: DotF64's plain loop sums every term.
func vectorDotF64(x, w []float32) (float64, int) { return 0, 0 }
