//go:build amd64 && !purego

package kernels

// dotF64AVX2 returns the float64 sum of x[i]·w[i] for i < n, n a positive multiple of 16, in sixteen running
// sums (dot_amd64.s).
//
//go:noescape
func dotF64AVX2(x, w *float32, n int) float64

// vectorDotF64 sums the first len(w) &^ 15 products on AVX2 where the CPU has it, and returns that sum and how
// many it summed.
func vectorDotF64(x, w []float32) (float64, int) {
	n := len(w) &^ 15
	if !hasAVX2FMA || n == 0 {
		return 0, 0
	}
	return dotF64AVX2(&x[0], &w[0], n), n
}
