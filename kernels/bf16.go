package kernels

import "math"

// BF16 products: a matrix rounded to bfloat16 (float32's 8 exponent bits and its top 8 significand bits), with
// float32 sums, at twice float32's products per instruction on CPUs with AVX512-BF16. Each product's terms are
// off by at most a relative BF16RoundOff from the float32 values they stand for, so a sum is off by at most
// about 2·BF16RoundOff·Σ|x_k||w_k|: callers that need exact answers (the decoder's greedy search) rescore the
// few results that the error could reorder.

// BF16RoundOff is the largest relative error of rounding a float32 to bfloat16 (to nearest, ties to even): 2^-8.
const BF16RoundOff = 1.0 / 256

const (
	bf16PanelWidth = 48 // columns of a panel: three 16-lane vectors
	bf16TileRows   = 8  // rows of x the kernel takes at once
)

// ToBF16 rounds f to the nearest bfloat16 (ties to even) and returns its 16 bits. f must not be NaN.
func ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// FromBF16 returns the float32 that the bfloat16 bits b stand for.
func FromBF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// BF16Panels is a row-major (K, N) matrix rounded to bfloat16 and laid out for the product kernel: panels of 48
// columns, each a run of (K+1)/2 pair rows of 48 uint32s, where a uint32 holds rows 2p (low half) and 2p+1 (high
// half) of one column. Columns past N and the row past an odd K are zero.
type BF16Panels struct {
	K, N  int
	pairs int
	data  []uint32
}

// NewBF16Panels rounds the row-major (k, n) matrix w to bfloat16 panels.
func NewBF16Panels(w []float32, k, n int) *BF16Panels {
	p := &BF16Panels{K: k, N: n, pairs: (k + 1) / 2}
	panels := p.Panels()
	p.data = make([]uint32, panels*p.pairs*bf16PanelWidth)
	for pn := 0; pn < panels; pn++ {
		panel := p.data[pn*p.pairs*bf16PanelWidth:]
		for j := 0; j < bf16PanelWidth; j++ {
			col := pn*bf16PanelWidth + j
			if col >= n {
				break
			}
			for r := 0; r < k; r++ {
				panel[(r/2)*bf16PanelWidth+j] |= uint32(ToBF16(w[r*n+col])) << (16 * (r % 2))
			}
		}
	}
	return p
}

// Panels is the number of 48-column panels: Mul's unit of work.
func (p *BF16Panels) Panels() int { return (p.N + bf16PanelWidth - 1) / bf16PanelWidth }

// Columns returns the columns [from, to) that panels [first, last) cover.
func (p *BF16Panels) Columns(first, last int) (from, to int) {
	return min(first*bf16PanelWidth, p.N), min(last*bf16PanelWidth, p.N)
}

// InputLen is the length of the rounded input that rows rows of x need: rows rounded up to a multiple of 8
// (the rows past rows are computed and thrown away; their values do not matter), times (K+1)/2 pairs.
func (p *BF16Panels) InputLen(rows int) int {
	return (rows + bf16TileRows - 1) / bf16TileRows * bf16TileRows * p.pairs
}

// RoundInput rounds rows [from, to) of x, K values each and ldx apart, to bfloat16 pairs in the same rows of dst
// (a buffer of InputLen length). x's values must not be NaN.
func (p *BF16Panels) RoundInput(dst []uint32, x []float32, ldx, from, to int) {
	for r := from; r < to; r++ {
		row, out := x[r*ldx:r*ldx+p.K], dst[r*p.pairs:(r+1)*p.pairs]
		for i := range out {
			lo := uint32(ToBF16(row[2*i]))
			var hi uint32
			if 2*i+1 < p.K {
				hi = uint32(ToBF16(row[2*i+1]))
			}
			out[i] = lo | hi<<16
		}
	}
}

// Mul sets c[r*ldc+j] to the float32 sum over k of x̃[r][k]·w̃[k][j] for rows r < rows of the rounded input x16
// (from RoundInput) and the columns j of panels [first, last), leaving c's other values as they were. It runs
// on AVX512-BF16 where the CPU has it (hasBF16) and in plain Go, far slower, elsewhere.
func (p *BF16Panels) Mul(rows int, x16 []uint32, c []float32, ldc, first, last int) {
	p.mulWith(hasBF16, rows, x16, c, ldc, first, last)
}

// mulWith is Mul on the assembly kernel (asm) or the plain-Go one.
func (p *BF16Panels) mulWith(asm bool, rows int, x16 []uint32, c []float32, ldc, first, last int) {
	if rows == 0 || p.K == 0 {
		for pn := first; pn < last; pn++ {
			from, to := p.Columns(pn, pn+1)
			for r := 0; r < rows; r++ {
				clear(c[r*ldc+from : r*ldc+to])
			}
		}
		return
	}
	var buf [bf16TileRows * bf16PanelWidth]float32
	for pn := first; pn < last; pn++ {
		panel := p.data[pn*p.pairs*bf16PanelWidth : (pn+1)*p.pairs*bf16PanelWidth]
		from, to := p.Columns(pn, pn+1)
		for r := 0; r < rows; r += bf16TileRows {
			x := x16[r*p.pairs : (r+bf16TileRows)*p.pairs]
			if r+bf16TileRows <= rows && to-from == bf16PanelWidth {
				p.tile(asm, x, panel, c[r*ldc+from:], ldc)
				continue
			}
			p.tile(asm, x, panel, buf[:], bf16PanelWidth)
			for i := 0; i < min(bf16TileRows, rows-r); i++ {
				copy(c[(r+i)*ldc+from:(r+i)*ldc+to], buf[i*bf16PanelWidth:])
			}
		}
	}
}

// tile computes one 8-row, 48-column block: c[i*ldc+j] for i < 8, j < 48.
func (p *BF16Panels) tile(asm bool, x, panel []uint32, c []float32, ldc int) {
	bf16TileOf(asm, x, p.pairs, panel, 16, bf16PanelWidth, p.pairs, c, ldc, false)
}

// bf16TileOf sets (or with add adds to) c[i*ldc+j], i < 8, j < 48, the sums over pairs pairs of rows i of x
// (xPairs uint32s apart) by the pair rows of w, each three runs of 16 uint32s stripStride apart, pairStride
// apart: 16 and 48 for BF16Panels' panels, a strip's length and 16 for an amxB's strips (dpStripsMul). It runs
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
