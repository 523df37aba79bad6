//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// hasAVX2FMA reports whether expAVX2 and tanhAVX2 can run here; the pure-Go expf and tanhf serve everything else.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// vectorOn runs kernel, an AVX2 kernel over the first n &^ 7 of n values, where the CPU has AVX2 and FMA and
// n ≥ 8, and returns how many values it did: n &^ 7, or 0 where it did not run.
func vectorOn(n int, kernel func()) int {
	if !hasAVX2FMA || n < 8 {
		return 0
	}
	kernel()
	return n &^ 7
}

// expAVX2 overwrites the first len(xs) &^ 7 values of xs with e**x (exp_amd64.s). Results saturate at the ends
// of the float32 range (≈2.4e38 above x = 88.38, ≈1.2e-38 below x = -87.34) instead of reaching +Inf and 0.
//
//go:noescape
func expAVX2(xs []float32)

// vectorExp applies expAVX2 where the CPU has it and returns how many leading values it did.
func vectorExp(xs []float32) int { return vectorOn(len(xs), func() { expAVX2(xs) }) }

// tanhAVX2 overwrites the first len(xs) &^ 7 values of xs with tanh x (exp_amd64.s), by tanhf's method.
//
//go:noescape
func tanhAVX2(xs []float32)

// vectorTanh applies tanhAVX2 where the CPU has it and returns how many leading values it did.
func vectorTanh(xs []float32) int { return vectorOn(len(xs), func() { tanhAVX2(xs) }) }

// expShiftAVX2 sets the first len(src) &^ 7 values of dst to e**(src[i] − shift), the difference rounded to
// float32 first (exp_amd64.s). dst is at least as long as src; the two may be one slice.
//
//go:noescape
func expShiftAVX2(dst, src []float32, shift float32)

// vectorExpShift applies expShiftAVX2 where the CPU has it and returns how many leading values it did.
func vectorExpShift(dst, src []float32, shift float32) int {
	return vectorOn(len(src), func() { expShiftAVX2(dst, src, shift) })
}

// maxAVX2 takes the first len(xs) &^ 7 values into the eight running maxima m, value i into m[i mod 8], as Max's
// loop does (exp_amd64.s).
//
//go:noescape
func maxAVX2(xs []float32, m *[8]float32)

// vectorMax applies maxAVX2 where the CPU has it and returns how many leading values it took.
func vectorMax(xs []float32, m *[8]float32) int { return vectorOn(len(xs), func() { maxAVX2(xs, m) }) }

// scaleAVX2 multiplies the first len(xs) &^ 7 values by a (exp_amd64.s).
//
//go:noescape
func scaleAVX2(xs []float32, a float32)

// vectorScale applies scaleAVX2 where the CPU has it and returns how many leading values it did.
func vectorScale(xs []float32, a float32) int { return vectorOn(len(xs), func() { scaleAVX2(xs, a) }) }
