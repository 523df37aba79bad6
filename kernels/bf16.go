package kernels

import "math"

// BF16 products: a matrix rounded to bfloat16 (float32's 8 exponent bits and its top 8 significand bits), with
// float32 sums, at twice float32's products per instruction on CPUs with AVX512-BF16. Each product's terms are
// off by at most a relative BF16RoundOff from the float32 values they stand for, so a sum is off by at most
// about 2·BF16RoundOff·Σ|x_k||w_k|: callers that need exact answers (the decoder's greedy search) rescore the
// few results that the error could reorder.

// BF16RoundOff is the largest relative error of rounding a float32 to bfloat16 (to nearest, ties to even): 2^-8.
const BF16RoundOff = 1.0 / 256

// bf16TileRows is how many rows of x the VDPBF16PS kernel (bf16TileOf) takes at once.
const bf16TileRows = 8

// ToBF16 rounds f to the nearest bfloat16 (ties to even) and returns its 16 bits. f must not be NaN.
func ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// FromBF16 returns the float32 that the bfloat16 bits b stand for.
func FromBF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// bf16TileOf sets (or with add adds to) c[i*ldc+j], i < 8, j < 48, the sums over pairs pairs of rows i of x
// (xPairs uint32s apart) by the pair rows of w, each three runs of 16 uint32s stripStride apart, pairStride
// apart: a strip's length and 16 for an amxB's strips (dpStripsMul). It runs
// on the assembly kernel (asm, bf16Tile) or in plain Go, where a run past the end of w reads as zero.
func bf16TileOf(asm bool, x []uint32, xPairs int, w []uint32, stripStride, pairStride, pairs int, c []float32, ldc int, add bool) {
	const width = dpStrips * 16
	_ = c[(bf16TileRows-1)*ldc+width-1]
	if asm {
		_ = x[(bf16TileRows-1)*xPairs+pairs-1]
		_ = w[2*stripStride+(pairs-1)*pairStride+15]
		bf16Tile(&x[0], 4*xPairs, &w[0], 4*stripStride, 4*pairStride, pairs, &c[0], 4*ldc, boolInt(add))
		return
	}
	for i := 0; i < bf16TileRows; i++ {
		row := c[i*ldc : i*ldc+width]
		if !add {
			clear(row)
		}
		if i*xPairs >= len(x) {
			continue
		}
		for s := 0; s < dpStrips && s*stripStride < len(w); s++ {
			for k := 0; k < pairs; k++ {
				xp := x[i*xPairs+k]
				x0, x1 := FromBF16(uint16(xp)), FromBF16(uint16(xp>>16))
				at := s*stripStride + k*pairStride
				for j, wp := range w[at : at+16] {
					row[s*16+j] += x1*FromBF16(uint16(wp>>16)) + x0*FromBF16(uint16(wp))
				}
			}
		}
	}
}

// boolInt is 1 for true and 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
