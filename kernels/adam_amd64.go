//go:build amd64 && !purego

package kernels

// adamAVX applies AdamUpdate's formula to the first len(w) &^ 7 values, eight at a time (adam_amd64.s).
//
//go:noescape
func adamAVX(w, g, m, v []float32, c *AdamCoeffs)

// vectorAdam applies adamAVX where the CPU has AVX2 and returns how many leading values it did.
func vectorAdam(w, g, m, v []float32, c *AdamCoeffs) int {
	return vectorOn(len(w), func() { adamAVX(w, g, m, v, c) })
}
