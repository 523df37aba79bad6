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

// vectorExpShift does nothing without AVX2: shiftedExp's loop handles every value.
func vectorExpShift(dst, src []float32, shift float32) int { return 0 }

// vectorMax takes nothing without AVX2: Max's loop takes every value.
func vectorMax(xs []float32, m *[8]float32) int { return 0 }

// vectorScale does nothing without AVX2: Scale's loop handles every value.
func vectorScale(xs []float32, a float32) int { return 0 }
