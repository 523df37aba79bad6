package kernels

import (
	"fmt"
	"runtime"
)

// AMXWeights is a (K, N) weight matrix rounded to bfloat16 (to nearest, ties to even) once and packed for
// products on Intel AMX, for many products with the same weights: a decoder's output layer. Each product of two
// bfloat16 terms is exact in float32, so a result is off the float64 sum of the rounded terms by float32
// summation only (K additions of the products, a pair at a time; AMX treats bfloat16 subnormals as zero and
// flushes float32 subnormal results to zero, absolute errors below 2^-126 each). The weights are read only:
// any number of goroutines may multiply by them at once, each with its own AMXInput.
//
// Products are written to a padded (rows rounded up to a whole 32, Stride) matrix: the row stride is N rounded up to a whole
// 32, and the products' unit of work is a strip of 32 columns.
type AMXWeights struct {
	b  amxB
	dp bool // AMX does not run here: Mul multiplies on VDPBF16PS or in Go (dpStripsMul)
}

// NewAMXWeights rounds the row-major (k, n) matrix w to bfloat16 and packs it for AMX. Where AMX does not run,
// Mul multiplies the same packing on VDPBF16PS, or in plain Go (far slower: for tests) on CPUs without
// AVX512-BF16, which Choose does not give bfloat16 products. w must hold no NaN.
func NewAMXWeights(w []float32, k, n int) (*AMXWeights, error) {
	if k <= 0 || n <= 0 || len(w) < k*n {
		return nil, fmt.Errorf("kernels: NewAMXWeights of %d values for (%d, %d)", len(w), k, n)
	}
	b := newAMXB(k, n)
	b.round(w, n, 1)
	return &AMXWeights{b: *b, dp: amxPermit() != nil}, nil
}

// Stride is the row stride of Mul's products: N rounded up to a whole 32.
func (w *AMXWeights) Stride() int { return w.b.np }

// Strips is the number of 32-column strips of the weights: Mul's unit of work.
func (w *AMXWeights) Strips() int { return w.b.np / amxBlock }

// Columns returns the columns [from, to) of the weights that strips [first, last) cover.
func (w *AMXWeights) Columns(first, last int) (from, to int) {
	return min(first*amxBlock, w.b.n), min(last*amxBlock, w.b.n)
}

// OutputLen is the length of the product of rows rows of input: rows rounded up to a whole 32, times Stride.
func (w *AMXWeights) OutputLen(rows int) int { return amxRoundUp(rows) * w.b.np }

// AMXInput is up to a fixed number of rows of K values rounded to bfloat16, the left operand of
// AMXWeights.Mul. Rows are rounded one range at a time (Round), so that goroutines may round their own rows of a
// batch at once.
type AMXInput struct {
	a amxA
}

// NewAMXInput returns room for up to rows rows of k values, all zero.
func NewAMXInput(rows, k int) *AMXInput { return &AMXInput{a: *newAMXA(max(rows, 1), k)} }

// Round rounds rows [from, to) of x, K values each and ldx apart, into the same rows of the input. x's values
// must not be NaN.
func (in *AMXInput) Round(x []float32, ldx, from, to int) {
	a := &in.a
	if from < 0 || to > a.m || from > to || to > from && len(x) < (to-1)*ldx+a.k {
		panic(fmt.Sprintf("kernels: AMXInput.Round of rows [%d, %d) of %d values, ldx %d, into %d rows of %d", from, to, len(x), ldx, a.m, a.k))
	}
	vector := amxVectorRound()
	for i := from; i < to; i++ {
		roundRun(vector, x[i*ldx:i*ldx+a.k], 1, a.data[i*a.kp:i*a.kp+a.k], nil)
	}
}

// Rounded returns row i's K values as Round left them, bfloat16 bits (FromBF16 reads one).
func (in *AMXInput) Rounded(i int) []uint16 { return in.a.data[i*in.a.kp : i*in.a.kp+in.a.k] }

// Mul sets c[r*Stride+j] to the float32 sum over k of x̃[r][k]·w̃[k][j] for the rows r of in up to rows rounded up
// to a whole 32 (those past rows hold whatever earlier rounds left, their products to be thrown away) and the columns j of
// strips [first, last), leaving c's other values alone. c holds at least OutputLen(rows) values. It runs on the
// tile registers of the calling goroutine's thread, which it locks for the call; where AMX does not run, on
// VDPBF16PS (or in plain Go), for the first rows rows only (the product's other rows are left alone).
func (w *AMXWeights) Mul(in *AMXInput, rows int, c []float32, first, last int) error {
	a, b := &in.a, &w.b
	if a.k != b.k || rows < 0 || rows > a.m || first < 0 || last > w.Strips() || first > last {
		return fmt.Errorf("kernels: AMXWeights.Mul of %d rows of (%d, %d) by (%d, %d), strips [%d, %d)", rows, a.m, a.k, b.k, b.n, first, last)
	}
	if rows == 0 || first == last {
		return nil
	}
	if len(c) < w.OutputLen(rows) {
		return fmt.Errorf("kernels: AMXWeights.Mul: c of %d values for %d rows of %d", len(c), rows, b.np)
	}
	if w.dp {
		dpStripsMul(hasBF16, a, rows, b, 2*first, 2*last, b.np, c, b.np, false)
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg := amxTileConfig()
	mBlocks := amxRoundUp(rows) / amxBlock
	lda, panel, pairs := 2*a.kp, 4*16*a.kp/2, a.kp/2
	for k0 := 0; k0 < a.kp; k0 += amxChunk {
		kBlocks, acc := min(amxChunk, a.kp-k0)/amxBlock, min(k0, 1)
		for s := first; s < last; s++ {
			amxStrip(&cfg, &a.data[k0], lda, &b.data[s*2*16*pairs+k0/2*16], panel, &c[s*amxBlock], 4*b.np, kBlocks, mBlocks, acc)
		}
	}
	return nil
}
