//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// hasAVX2FMA reports whether expAVX2 and tanhAVX2 can run here; the pure-Go expf and tanhf serve everything else.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expAVX2 overwrites the first len(xs) &^ 7 values of xs with e**x (exp_amd64.s). Results saturate at the ends
// of the float32 range (≈2.4e38 above x = 88.38, ≈1.2e-38 below x = -87.34) instead of reaching +Inf and 0.
//
//go:noescape
func expAVX2(xs []float32)

// vectorExp applies expAVX2 where the CPU has it and returns how many leading values it did.
func vectorExp(xs []float32) int {
	if !hasAVX2FMA || len(xs) < 8 {
		return 0
	}
	expAVX2(xs)
	return len(xs) &^ 7
}

// tanhAVX2 overwrites the first len(xs) &^ 7 values of xs with tanh x (exp_amd64.s), by tanhf's method.
//
//go:noescape
func tanhAVX2(xs []float32)

// vectorTanh applies tanhAVX2 where the CPU has it and returns how many leading values it did.
func vectorTanh(xs []float32) int {
	if !hasAVX2FMA || len(xs) < 8 {
		return 0
	}
	tanhAVX2(xs)
	return len(xs) &^ 7
}
