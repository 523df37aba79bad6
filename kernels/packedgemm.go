package kernels

import (
	"fmt"
	"math"
)

// packedCols is the width of a PackedGemm's panels of weights: the columns of one f32Tile, three AVX-512
// registers of float32s.
const packedCols = 48

// packedRows is the number of rows of x that one f32Tile multiplies.
const packedRows = 8

// packedBlock is the most terms of a sum that one f32Tile takes: a product over more runs in blocks of this many,
// so that a tile's rows of x stay in the core's first-level cache and a panel's block in its second.
const packedBlock = 1024

// PackedGemm is float32 products by one weight matrix packed once for many products: c = x·w or c += x·w for
// row-major x (m, k), as a recurrent layer multiplies its weights at every step. OpenBLAS packs its right
// operand afresh at every call, which at a decoder step's few rows costs about as much as the product itself; a
// PackedGemm packs the weights once, in panels of 48 columns, and multiplies them with AVX-512 (f32Tile). Each
// sum is taken in blocks of 1,024 terms in order of k: a block's terms summed from zero with one fused
// multiply-add a term, the blocks then added in order (to c's old value first, with add). The sums are the same
// whatever m and however the rows are shared out. Where AVX-512 cannot run (Products.PacksWeights), the same sums are
// taken in Go, slowly: the type is then for tests. Once packed, Mul may run on several goroutines at once. Its
// storage grows to the largest weights and stays.
type PackedGemm struct {
	w    []float32 // panels of packedCols columns, each (k, packedCols), zeros past n
	k, n int
}

// Pack packs the weights (k, n) for Mul: w is row-major (k, n), or with transposed the row-major (n, k) matrix
// whose transpose they are.
func (g *PackedGemm) Pack(w []float32, k, n int, transposed bool) {
	if k < 1 || n < 1 || len(w) < k*n {
		panic(fmt.Sprintf("kernels: PackedGemm.Pack of %d values for (%d, %d)", len(w), k, n))
	}
	panels := (n + packedCols - 1) / packedCols
	if size := panels * k * packedCols; cap(g.w) < size {
		g.w = make([]float32, size)
	} else {
		g.w = g.w[:size]
	}
	g.k, g.n = k, n
	for p := range panels {
		panel := g.w[p*k*packedCols : (p+1)*k*packedCols]
		lo, hi := p*packedCols, min((p+1)*packedCols, n)
		if transposed {
			packTransposed(panel, w, k, lo, hi)
			continue
		}
		for i := range k {
			row := panel[i*packedCols : (i+1)*packedCols]
			copy(row, w[i*n+lo:i*n+hi])
			clear(row[hi-lo:])
		}
	}
}

// packTransposed fills a panel (k, packedCols) with columns [lo, hi) of the transpose of w, row-major (n, k):
// panel[i][j-lo] = w[j][i], zeros past hi. It reads each row of w in runs of 16 values (a cache line) and writes
// the panel 16 rows at a time.
func packTransposed(panel, w []float32, k, lo, hi int) {
	const run = 16
	for i0 := 0; i0 < k; i0 += run {
		i1 := min(i0+run, k)
		block := panel[i0*packedCols : i1*packedCols]
		for j := lo; j < hi; j++ {
			src := w[j*k+i0 : j*k+i1]
			for t, v := range src {
				block[t*packedCols+j-lo] = v
			}
		}
		if hi-lo < packedCols {
			for t := range i1 - i0 {
				clear(block[t*packedCols+hi-lo : (t+1)*packedCols])
			}
		}
	}
}

// PackForSteps packs the weights (k, n), row-major, for the products of a recurrent layer's steps on one
// thread, many products by weights that do not change, as decoding makes them: on a PackedGemm where
// Products.PacksWeights says float32 weights pack, which beats BLAS at a step's few rows (BLAS packs its right
// operand afresh at every call: 5 rows by 640×1024 weights took OpenBLAS 310 µs, a PackedGemm 53 µs; 64 rows 512
// and 409 µs). It returns nil elsewhere, and for float64 weights: the caller keeps Gemm's products.
func PackForSteps[T Float](w []T, k, n int) WeightProduct {
	w32, ok := any(w).([]float32)
	if !ok || !Float32Products().PacksWeights() {
		return nil
	}
	g := &PackedGemm{}
	g.Pack(w32, k, n, false)
	return g
}

// Mul sets c[i*ldc+j] to the float32 sum over k of x[i*ldx+k]·w[k][j] for i < m and j < n, or with add adds that
// sum to c, leaving c's other values alone.
func (g *PackedGemm) Mul(x []float32, m, ldx int, c []float32, ldc int, add bool) {
	k, n := g.k, g.n
	if m == 0 {
		return
	}
	if ldx < k || len(x) < (m-1)*ldx+k || ldc < n || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("kernels: PackedGemm.Mul of %d values (ldx %d) into %d (ldc %d) for (%d, %d) by (%d, %d)",
			len(x), ldx, len(c), ldc, m, k, k, n))
	}
	full := m / packedRows * packedRows
	for k0 := 0; k0 < k; k0 += packedBlock {
		kb := min(packedBlock, k-k0)
		accumulate := add || k0 > 0
		for p := range (n + packedCols - 1) / packedCols {
			panel := g.w[(p*k+k0)*packedCols : (p*k+k0+kb)*packedCols]
			lo := p * packedCols
			cols := min(packedCols, n-lo)
			for r := 0; r < full; r += packedRows {
				packedTile(x[r*ldx+k0:], ldx, panel, kb, c[r*ldc+lo:], ldc, cols, accumulate)
			}
			if !hasAVX512 { // the last rows one at a time (in Go a row costs a row)
				for r := full; r < m; r++ {
					packedTile(x[r*ldx+k0:], 0, panel, kb, c[r*ldc+lo:], 0, cols, accumulate)
				}
			}
		}
	}
	if full < m && hasAVX512 {
		g.mulTail(x[full*ldx:], m-full, ldx, c[full*ldc:], ldc, add)
	}
}

// mulTail is Mul of the last rows, fewer than a tile's, as one tile of copies padded with zeros (on the stack,
// which f32Tile does not keep): a row's sums are the same in any row of a tile, and a tile costs about what a
// row alone does, where a row at a time cost the tile's eight times over.
func (g *PackedGemm) mulTail(x []float32, rows, ldx int, c []float32, ldc int, add bool) {
	var tileX [packedRows * packedBlock]float32
	var tileC [packedRows * packedCols]float32
	k, n := g.k, g.n
	for k0 := 0; k0 < k; k0 += packedBlock {
		kb := min(packedBlock, k-k0)
		accumulate := add || k0 > 0
		for r := range rows {
			copy(tileX[r*kb:(r+1)*kb], x[r*ldx+k0:])
		}
		for p := range (n + packedCols - 1) / packedCols {
			panel := g.w[(p*k+k0)*packedCols : (p*k+k0+kb)*packedCols]
			lo := p * packedCols
			cols := min(packedCols, n-lo)
			if accumulate {
				for r := range rows {
					copy(tileC[r*packedCols:r*packedCols+cols], c[r*ldc+lo:])
				}
			}
			packedTile(tileX[:], kb, panel, kb, tileC[:], packedCols, cols, accumulate)
			for r := range rows {
				copy(c[r*ldc+lo:r*ldc+lo+cols], tileC[r*packedCols:])
			}
		}
	}
}

// packedTile multiplies 8 rows of x (ldx apart) by k rows of a panel into the first cols columns of 8 rows of c
// (ldc apart), setting them or adding to them: f32Tile where AVX-512 runs, the same sums in Go otherwise. With
// ldx and ldc 0 it multiplies one row, eight times over.
func packedTile(x []float32, ldx int, panel []float32, k int, c []float32, ldc, cols int, add bool) {
	_ = x[(packedRows-1)*ldx+k-1] // bounds, checked here for the assembly
	_ = c[(packedRows-1)*ldc+cols-1]
	_ = panel[k*packedCols-1]
	if hasAVX512 {
		masks := uint64(1)<<cols - 1
		f32Tile(&x[0], 4*ldx, &panel[0], k, &c[0], 4*ldc, masks, add)
		return
	}
	rows := packedRows
	if ldx == 0 {
		rows = 1
	}
	for r := range rows {
		for j := range cols {
			var sum float32
			for i := range k { // one rounding a term, as a fused multiply-add's
				sum = float32(math.FMA(float64(x[r*ldx+i]), float64(panel[i*packedCols+j]), float64(sum)))
			}
			if add {
				c[r*ldc+j] += sum
			} else {
				c[r*ldc+j] = sum
			}
		}
	}
}
