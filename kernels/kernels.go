// Package kernels holds the plain-Go numerical building blocks that the reference forward passes, the inference
// path and the training graph share: GEMM dispatch to the active BLAS, activations and a stable softmax, and the
// pieces of layers that own no weights, each a forward and a backward pass (the recurrent cells' pointwise
// steps, the embedding lookup, the output layer's loss).
package kernels

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// Float is the element type of every tensor in attend: float32 for training and inference, float64 for
// gradient checks.
type Float interface{ ~float32 | ~float64 }

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Gemm computes c = alpha*op(a)*op(b) + beta*c on row-major matrices, where op(a) is (m,k), op(b) is (k,n) and c
// is (m,n); lda, ldb and ldc are the row strides. It calls the BLAS that gonum's blas32/blas64 have in use, so an
// OpenBLAS build speeds up every caller at once.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// BLAS rejects k=0 with lda<1 on some implementations; the product is empty, so only scale c.
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	switch av := any(a).(type) {
	case []float32:
		blas32.Implementation().Sgemm(trans(transA), trans(transB), m, n, k, float32(alpha), av, lda,
			any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		blas64.Implementation().Dgemm(trans(transA), trans(transB), m, n, k, float64(alpha), av, lda,
			any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	default:
		panic("kernels: Gemm on an unsupported element type")
	}
}

// Sigmoid returns 1/(1+exp(-x)).
func Sigmoid[T Float](x T) T { return T(1 / (1 + math.Exp(-float64(x)))) }

// Tanh returns the hyperbolic tangent of x.
func Tanh[T Float](x T) T { return T(math.Tanh(float64(x))) }

// MaskNegative is the score given to masked positions before a softmax: large enough that exp underflows to
// exactly zero in float32 and float64, finite so that a row with every position masked stays NaN-free.
const MaskNegative = -1e9

// SoftmaxRowBackward writes into dScores the gradient of the scores of one row given w = softmax(scores) and
// dW, the gradient of w: dScores_i = w_i (dW_i − Σ_j w_j dW_j). dScores may be dW itself.
func SoftmaxRowBackward[T Float](w, dW, dScores []T) {
	var dot T
	for i, wi := range w {
		dot += wi * dW[i]
	}
	for i, wi := range w {
		dScores[i] = wi * (dW[i] - dot)
	}
}

// SoftmaxRow overwrites row with softmax(row), treating entries at index >= valid as masked: they come out
// exactly 0. It subtracts the row maximum before exp so that large scores cannot overflow, and returns the
// log-sum-exp of the valid entries (so −log softmax_y = lse − x_y needs no second pass).
func SoftmaxRow[T Float](row []T, valid int) (lse float64) {
	if valid > len(row) {
		valid = len(row)
	}
	if valid <= 0 {
		// Every position masked: a uniform distribution, as a softmax over equal MaskNegative scores gives.
		for i := range row {
			row[i] = T(1 / float64(len(row)))
		}
		return math.Inf(-1)
	}
	live := row[:valid]
	maxv, sum := expShifted(live, live)
	scale(live, T(1/sum))
	for i := valid; i < len(row); i++ {
		row[i] = 0
	}
	return float64(maxv) + math.Log(sum)
}

// LogSumExp returns log Σ exp(row[i]) — the figure SoftmaxRow(row, len(row)) returns, to the last bit — without
// changing row: it writes the shifted exps to scratch (at least len(row) long). It is -Inf for an empty row.
func LogSumExp[T Float](row, scratch []T) float64 {
	if len(row) == 0 {
		return math.Inf(-1)
	}
	maxv, sum := expShifted(scratch[:len(row)], row)
	return float64(maxv) + math.Log(sum)
}

// LogSumExps sets lse[i] to LogSumExp(rows[i], scratch[i]) for each row, the same figures to the last bit, in
// less time: each row's maximum comes from eight running maxima, and up to five rows of the same length are
// shifted, exponentiated and added side by side, a chunk of lseChunk values at a time (which stays in the L1
// cache), each row's sum in LogSumExp's order, so that the CPU overlaps the rows' chains of additions instead of
// waiting for one. lse and scratch have at least len(rows) entries.
func LogSumExps[T Float](rows, scratch [][]T, lse []float64) {
	for i := 0; i < len(rows); {
		if len(rows[i]) == 0 {
			lse[i] = math.Inf(-1)
			i++
			continue
		}
		n := len(rows[i])
		group := 1
		for group < 5 && i+group < len(rows) && len(rows[i+group]) == n {
			group++
		}
		var src, dst [5][]T
		for g := range group {
			src[g], dst[g] = rows[i+g], scratch[i+g][:n]
		}
		var maxv [5]T
		var sum [5]float64
		expShiftedGroup(&dst, &src, group, &maxv, &sum)
		for g := range group {
			lse[i+g] = float64(maxv[g]) + math.Log(sum[g])
		}
		i += group
	}
}

// expShiftedGroup is expShifted for the first group (1 to 5) rows of src, all of one length (at least 1), into
// the rows of dst (as long; a row may be its own src), with the same figures to the last bit: maxv[g] and sum[g]
// are row g's maximum (Max's) and float64 sum. The rows are shifted, exponentiated and added side by side, a
// chunk of lseChunk values at a time (which stays in the L1 cache), each row's sum in expShifted's order, so that
// the CPU overlaps the rows' chains of additions instead of waiting for one.
func expShiftedGroup[T Float](dst, src *[5][]T, group int, maxv *[5]T, sum *[5]float64) {
	n := len(src[0])
	for g := range group {
		maxv[g], sum[g] = Max(src[g]), 0
	}
	// Chunks of a multiple of 8 values: shiftedExp gives each value the exp it gives it in the whole row.
	for from := 0; from < n; from += lseChunk {
		to := min(from+lseChunk, n)
		var chunk [5][]T
		for g := range group {
			chunk[g] = dst[g][from:to]
			shiftedExp(chunk[g], src[g][from:to], maxv[g])
		}
		addSideBySide(sum, &chunk, group)
	}
}

// lseChunk is how many values of each row LogSumExps takes at a time: a multiple of 8.
const lseChunk = 512

// addSideBySide adds the values of each of the first group rows of dst (all of dst[0]'s length), in order, to
// that row's sum.
func addSideBySide[T Float](sum *[5]float64, dst *[5][]T, group int) {
	d0 := dst[0]
	n := len(d0)
	switch group {
	case 5:
		d1, d2, d3, d4 := dst[1][:n], dst[2][:n], dst[3][:n], dst[4][:n]
		s0, s1, s2, s3, s4 := sum[0], sum[1], sum[2], sum[3], sum[4]
		for j, e := range d0 {
			s0 += float64(e)
			s1 += float64(d1[j])
			s2 += float64(d2[j])
			s3 += float64(d3[j])
			s4 += float64(d4[j])
		}
		sum[0], sum[1], sum[2], sum[3], sum[4] = s0, s1, s2, s3, s4
	case 4:
		d1, d2, d3 := dst[1][:n], dst[2][:n], dst[3][:n]
		s0, s1, s2, s3 := sum[0], sum[1], sum[2], sum[3]
		for j, e := range d0 {
			s0 += float64(e)
			s1 += float64(d1[j])
			s2 += float64(d2[j])
			s3 += float64(d3[j])
		}
		sum[0], sum[1], sum[2], sum[3] = s0, s1, s2, s3
	case 3:
		d1, d2 := dst[1][:n], dst[2][:n]
		s0, s1, s2 := sum[0], sum[1], sum[2]
		for j, e := range d0 {
			s0 += float64(e)
			s1 += float64(d1[j])
			s2 += float64(d2[j])
		}
		sum[0], sum[1], sum[2] = s0, s1, s2
	case 2:
		d1 := dst[1][:n]
		s0, s1 := sum[0], sum[1]
		for j, e := range d0 {
			s0 += float64(e)
			s1 += float64(d1[j])
		}
		sum[0], sum[1] = s0, s1
	default:
		s0 := sum[0]
		for _, e := range d0 {
			s0 += float64(e)
		}
		sum[0] = s0
	}
}

// Max returns the largest value of xs (at least one value): the first value, replaced by any later one that is
// larger, so NaNs after the first value are passed over. It keeps eight running maxima, which the CPU keeps
// apart, and so runs about three times as fast as one. It is expShifted's maximum: it differs from one running
// maximum's (the plain loop expShifted had) only where the maximum is a zero, in its sign, which no figure sees
// (the shifted values and their exps are the same, and the sign is lost when log Σ ≥ +0 is added). In float32 the eight maxima are kept in one
// AVX2 register where the CPU has it (VMAXPS picks as larger does).
func Max[T Float](xs []T) T {
	var m [8]T
	for i := range m {
		m[i] = xs[0]
	}
	i := 0
	if f, ok := any(xs).([]float32); ok {
		i = vectorMax(f, any(&m).(*[8]float32))
	}
	for ; i+8 <= len(xs); i += 8 {
		x := xs[i : i+8 : i+8]
		m[0], m[1], m[2], m[3] = larger(m[0], x[0]), larger(m[1], x[1]), larger(m[2], x[2]), larger(m[3], x[3])
		m[4], m[5], m[6], m[7] = larger(m[4], x[4]), larger(m[5], x[5]), larger(m[6], x[6]), larger(m[7], x[7])
	}
	for ; i < len(xs); i++ {
		if xs[i] > m[0] {
			m[0] = xs[i]
		}
	}
	best := m[0]
	for _, x := range m[1:] {
		if x > best {
			best = x
		}
	}
	return best
}

// larger returns x when x > m, else m.
func larger[T Float](m, x T) T {
	if x > m {
		return x
	}
	return m
}

// expShifted sets dst[i] = exp(src[i] - max(src)) and returns the maximum and the float64 sum of dst. dst and
// src have the same length (at least 1) and may be the same slice.
func expShifted[T Float](dst, src []T) (maxv T, sum float64) {
	var maxs [5]T
	var sums [5]float64
	expShiftedGroup(&[5][]T{dst[:len(src)]}, &[5][]T{src}, 1, &maxs, &sums)
	return maxs[0], sums[0]
}

// shiftedExp sets dst[i] = exp(src[i] − shift), each difference rounded to T first: bit for bit what storing the
// differences in dst and calling ExpSlice(dst) makes (in float32 one AVX2 pass where the CPU has it). dst is at
// least as long as src; the two may be one slice.
func shiftedExp[T Float](dst, src []T, shift T) {
	dst = dst[:len(src)]
	if d, ok := any(dst).([]float32); ok {
		s, sh := any(src).([]float32), float32(shift)
		for i := vectorExpShift(d, s, sh); i < len(s); i++ {
			d[i] = expf(s[i] - sh)
		}
		return
	}
	for i, v := range src {
		dst[i] = v - shift
	}
	ExpSlice(dst)
}

// scale multiplies every value of xs by a (in float32 with AVX2 where the CPU has it: the same products).
func scale[T Float](xs []T, a T) {
	i := 0
	if f, ok := any(xs).([]float32); ok {
		i = vectorScale(f, float32(a))
	}
	for ; i < len(xs); i++ {
		xs[i] *= a
	}
}

// AddBias adds bias (n) to every row of x (rows, n).
func AddBias[T Float](x []T, rows, n int, bias []T) {
	if len(bias) != n || len(x) < rows*n {
		panic("kernels: AddBias shape mismatch")
	}
	AddBiasStrided(x, rows, n, bias)
}

// AddBiasStrided adds bias to the first len(bias) values of each of rows rows of x, ld apart: a bias over some
// columns of a wider matrix, as an output layer computed a share of the vocabulary at a time needs (pass x from
// the first column on).
func AddBiasStrided[T Float](x []T, rows, ld int, bias []T) {
	for r := 0; r < rows; r++ {
		row := x[r*ld : r*ld+len(bias)]
		for j, b := range bias {
			row[j] += b
		}
	}
}

// Axpy adds alpha·x to y element by element, y[i] += alpha·x[i] for i < len(x), each product rounded to T before
// the addition, bit for bit what that loop computes in Go. It calls gonum's own assembly (several values per
// instruction), not the BLAS that Gemm uses: another BLAS may fuse the multiplication and the addition, which
// rounds once and changes the sums.
func Axpy[T Float](alpha T, x, y []T) {
	y = y[:len(x)]
	switch x := any(x).(type) {
	case []float32:
		gonum.Implementation{}.Saxpy(len(x), float32(alpha), x, 1, any(y).([]float32), 1)
	case []float64:
		gonum.Implementation{}.Daxpy(len(x), float64(alpha), x, 1, any(y).([]float64), 1)
	}
}

// MulSlice multiplies x by y element by element, in place: x[i] *= y[i]. It applies a dropout mask.
func MulSlice[T Float](x, y []T) {
	y = y[:len(x)]
	for i := range x {
		x[i] *= y[i]
	}
}

// Argmax returns the index of the largest value of xs, the first one on ties; NaNs are passed over (index 0
// when every value is NaN). It finds the largest value with Max, then the first index holding it: two
// passes that beat one with a branch on the index at every value.
func Argmax[T Float](xs []T) int {
	if len(xs) == 0 {
		return 0
	}
	best := Max(xs)
	for i, x := range xs {
		if x == best {
			return i
		}
	}
	return 0 // every value is NaN
}
