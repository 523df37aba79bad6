package kernels

import "unsafe"

// The products of AMXOutput's bfloat16 operands (amxA by amxB) on AVX512-BF16's VDPBF16PS, where AMX does not
// run: the same rounded terms, the same float32 sums of exact products, in another order. VDPBF16PS adds two
// products into each of 16 float32 sums per instruction, twice as many terms as a float32 FMA.

// dpStrips is how many 16-column strips of b the kernel takes at once: 48 columns, 8 rows, 24 sums in registers.
const dpStrips = 3

// product sets c[i*ldc+j] to the float32 sum over k of ã[i][k]·b̃[k][j] for i < a.m, j < b.n, or with add
// adds that sum to it, leaving c's other values alone: on AMX's tile registers where they run, and on
// VDPBF16PS (dpMul) elsewhere, as NewAMXOutputs found.
func (s *AMXOutput) product(a *amxA, b *amxB, c []float32, ldc int, add bool) error {
	if s.dp {
		return dpMul(hasBF16, a, b, c, ldc, add)
	}
	return amxMul(a, b, c, ldc, add)
}

// bf16Permit returns nil where AMXOutput's products can run, split or not: on AMX, or unsplit on AVX512-BF16
// (where the recurrent layers' split products, AMXGemm and AMXProduct, cannot), and says why not otherwise.
func bf16Permit(split bool) error {
	err := amxPermit()
	if err == nil || split || !hasBF16 {
		return err
	}
	return nil
}

// asUint32 returns the uint32s that the uint16s x make up, two to each, the first in the low half
// (little-endian). len(x) must be even.
func asUint32(x []uint16) []uint32 { return unsafe.Slice((*uint32)(unsafe.Pointer(&x[0])), len(x)/2) }

// dpMul is AMXOutput.product on VDPBF16PS (asm, AVX512-BF16) or in plain Go. It sums the k's in chunks of amxChunk,
// and split (bfloat16x3) in three passes, as amxMul does.
func dpMul(asm bool, a *amxA, b *amxB, c []float32, ldc int, add bool) error {
	if done, err := trivialProduct("dpMul", a, b, c, ldc, add); done || err != nil {
		return err
	}
	dpStripsMul(asm, a, a.m, b, 0, b.np/16, b.n, c, ldc, add)
	return nil
}

// dpStripsMul is dpMul over the first rows rows of a and b's 16-column strips [first, last) only, the shapes
// already checked: c's columns of those strips, up to cols (b's n, or its padded np), are set or added to, its
// others left alone.
func dpStripsMul(asm bool, a *amxA, rows int, b *amxB, first, last, cols int, c []float32, ldc int, add bool) {
	strips := b.np / 16
	x, xPairs, stripPairs := asUint32(a.data), a.kp/2, b.kp/2
	var buf [bf16TileRows * dpStrips * 16]float32
	for i, p := range amxPasses(a, b) {
		acc := i > 0 || add
		pairs := p.kBlocks * amxBlock / 2
		for g := first; g < last; g += dpStrips {
			// A group past the range's or b's last strip starts early enough to take three strips, overlapping
			// the columns before it; it sums into buf, and only its own columns reach c.
			s0 := max(min(g, strips-dpStrips), 0)
			from, to := g*16, min(min(g+dpStrips, last)*16, cols)
			if from >= to { // strips of padding only
				break
			}
			for r := 0; r < rows; r += bf16TileRows {
				xs := x[r*xPairs+p.aK/2:]
				w := b.data[s0*16*stripPairs+p.bK/2*16:]
				if s0 == g && r+bf16TileRows <= rows && from+dpStrips*16 == to && asm {
					bf16TileOf(asm, xs, xPairs, w, 16*stripPairs, 16, pairs, c[r*ldc+from:], ldc, acc)
					continue
				}
				bf16TileOf(asm && strips >= dpStrips, xs, xPairs, w, 16*stripPairs, 16, pairs, buf[:], dpStrips*16, false)
				for i := r; i < min(r+bf16TileRows, rows); i++ {
					row, sums := c[i*ldc+from:i*ldc+to], buf[(i-r)*dpStrips*16+from-s0*16:]
					if !acc {
						copy(row, sums)
						continue
					}
					for j := range row {
						row[j] += sums[j]
					}
				}
			}
		}
	}
}
