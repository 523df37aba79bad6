package graph

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Select returns x[t] for x of shape (N, rest...): the slice along the first axis. Gradient: a zero tensor of x's
// shape holding the output gradient at [t].
func Select[T kernels.Float](x *G.Node, t int) *G.Node {
	xShape := x.Shape().Clone()
	if t < 0 || t >= xShape[0] {
		panic(fmt.Sprintf("graph: Select(%d) out of range for shape %v", t, xShape))
	}
	rest := xShape[1:].Clone()
	op := newOp[T](fmt.Sprintf("Select(%d,%v)", t, xShape), rest, []int{len(xShape)}, func(in [][]T, out []T) {
		n := len(out)
		copy(out, in[0][t*n:(t+1)*n])
	})
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		gop := newOp[T](fmt.Sprintf("SelectGrad(%d,%v)", t, xShape), xShape, []int{len(rest)}, func(in [][]T, out []T) {
			clear(out)
			n := len(in[0])
			copy(out[t*n:(t+1)*n], in[0])
		})
		return G.Nodes{apply(gop, grad)}, nil
	}
	return apply(op, x)
}

// Stack joins n matrices of shape (B, D). Time-major, the result is (n·B, D) with input i at rows [i·B, (i+1)·B);
// batch-major, it is (B, n, D) with input i at [:, i, :]. Gradient of input i: its part of the output gradient.
func Stack[T kernels.Float](xs []*G.Node, batchMajor bool) *G.Node {
	if len(xs) == 0 {
		panic("graph: Stack of nothing")
	}
	part := xs[0].Shape().Clone()
	n, b, d := len(xs), part[0], part[1]
	inDims := make([]int, n)
	for i, x := range xs {
		if !x.Shape().Eq(part) {
			panic(fmt.Sprintf("graph: Stack input %d has shape %v, want %v", i, x.Shape(), part))
		}
		inDims[i] = 2
	}
	outShape := tensor.Shape{n * b, d}
	if batchMajor {
		outShape = tensor.Shape{b, n, d}
	}
	// offset is where row r of input i starts in the stacked tensor.
	offset := func(i, r int) int {
		if batchMajor {
			return (r*n + i) * d
		}
		return (i*b + r) * d
	}
	op := newOp[T](fmt.Sprintf("Stack(%d,%v,%v)", n, part, batchMajor), outShape, inDims, func(in [][]T, out []T) {
		for i, x := range in {
			for r := 0; r < b; r++ {
				copy(out[offset(i, r):offset(i, r)+d], x[r*d:(r+1)*d])
			}
		}
	})
	op.backward = func(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		grads := make(G.Nodes, len(inputs))
		for i := range inputs {
			i := i
			gop := newOp[T](fmt.Sprintf("Unstack(%d,%d,%v,%v)", i, n, part, batchMajor), part, []int{len(outShape)}, func(in [][]T, out []T) {
				for r := 0; r < b; r++ {
					copy(out[r*d:(r+1)*d], in[0][offset(i, r):offset(i, r)+d])
				}
			})
			grads[i] = apply(gop, grad)
		}
		return grads, nil
	}
	return apply(op, xs...)
}

// Concat joins matrices with the same number of rows side by side: inputs (R, D_i) give (R, Σ D_i). Gradient of
// input i: its columns of the output gradient (Columns). (Gorgonia's own concat is avoided: its slices hash alike when
// their bounds agree mod 256.)
func Concat[T kernels.Float](xs []*G.Node) *G.Node {
	rows := xs[0].Shape()[0]
	widths := make([]int, len(xs))
	inDims := make([]int, len(xs))
	total := 0
	for i, x := range xs {
		if x.Shape()[0] != rows || x.Dims() != 2 {
			panic(fmt.Sprintf("graph: Concat input %d has shape %v, want (%d, _)", i, x.Shape(), rows))
		}
		widths[i], inDims[i] = x.Shape()[1], 2
		total += widths[i]
	}
	offsets := make([]int, len(xs))
	for i := 1; i < len(xs); i++ {
		offsets[i] = offsets[i-1] + widths[i-1]
	}
	op := newOp[T](fmt.Sprintf("Concat(%d,%v)", rows, widths), tensor.Shape{rows, total}, inDims, func(in [][]T, out []T) {
		for i, x := range in {
			w := widths[i]
			for r := 0; r < rows; r++ {
				copy(out[r*total+offsets[i]:r*total+offsets[i]+w], x[r*w:(r+1)*w])
			}
		}
	})
	op.backward = func(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		grads := make(G.Nodes, len(inputs))
		for i := range inputs {
			grads[i] = Columns[T](grad, offsets[i], offsets[i]+widths[i])
		}
		return grads, nil
	}
	return apply(op, xs...)
}

// MaskedUpdate returns, row by row, next where t < (*lengths)[row] and prev elsewhere: a recurrent state that
// stops changing past a sentence's end (and, read backwards, starts at its last word). prev and next are (B, H).
// Gradient: the output gradient goes to next on updated rows and to prev on the others.
func MaskedUpdate[T kernels.Float](prev, next *G.Node, lengths *[]int, t int) *G.Node {
	shape := prev.Shape().Clone()
	rowMask := func(updated bool) *kernelOp[T] {
		return newOp[T](fmt.Sprintf("MaskRows(%d,%v,%v)", t, updated, shape), shape, []int{2}, func(in [][]T, out []T) {
			h := shape[1]
			for r, n := range *lengths {
				if (t < n) == updated {
					copy(out[r*h:(r+1)*h], in[0][r*h:(r+1)*h])
				} else {
					clear(out[r*h : (r+1)*h])
				}
			}
		})
	}
	op := newOp[T](fmt.Sprintf("MaskedUpdate(%d,%v)", t, shape), shape, []int{2, 2}, func(in [][]T, out []T) {
		h := shape[1]
		for r, n := range *lengths {
			src := in[0]
			if t < n {
				src = in[1]
			}
			copy(out[r*h:(r+1)*h], src[r*h:(r+1)*h])
		}
	})
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		return G.Nodes{apply(rowMask(false), grad), apply(rowMask(true), grad)}, nil
	}
	return apply(op, prev, next)
}

// AddBias adds bias (N) to every row of x (R, N) without materialising a broadcast. Gradient: x gets the output
// gradient, bias its column sums.
func AddBias[T kernels.Float](x, bias *G.Node) *G.Node {
	shape := x.Shape().Clone()
	op := newOp[T](fmt.Sprintf("AddBias(%v)", shape), shape, []int{2, 1}, func(in [][]T, out []T) {
		copy(out, in[0])
		kernels.AddBias(out, shape[0], shape[1], in[1])
	})
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		sum := newOp[T](fmt.Sprintf("ColumnSum(%v)", shape), tensor.Shape{shape[1]}, []int{2}, func(in [][]T, out []T) {
			clear(out)
			for r := 0; r < shape[0]; r++ {
				for j, g := range in[0][r*shape[1] : (r+1)*shape[1]] {
					out[j] += g
				}
			}
		})
		return G.Nodes{grad, apply(sum, grad)}, nil
	}
	return apply(op, x, bias)
}

// AddQuery adds the query projection q (B, A) to every source position of keys (B, S, A): the argument of tanh in
// the additive score. Gradient: keys get the output gradient, q its sum over positions.
func AddQuery[T kernels.Float](keys, q *G.Node) *G.Node {
	shape := keys.Shape().Clone()
	b, s, a := shape[0], shape[1], shape[2]
	op := newOp[T](fmt.Sprintf("AddQuery(%v)", shape), shape, []int{3, 2}, func(in [][]T, out []T) {
		for r := 0; r < b; r++ {
			qr := in[1][r*a : (r+1)*a]
			for i := 0; i < s; i++ {
				o := (r*s + i) * a
				for j, qv := range qr {
					out[o+j] = in[0][o+j] + qv
				}
			}
		}
	})
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		sum := newOp[T](fmt.Sprintf("SumPositions(%v)", shape), tensor.Shape{b, a}, []int{3}, func(in [][]T, out []T) {
			clear(out)
			for r := 0; r < b; r++ {
				for i := 0; i < s; i++ {
					for j, g := range in[0][(r*s+i)*a : (r*s+i+1)*a] {
						out[r*a+j] += g
					}
				}
			}
		})
		return G.Nodes{grad, apply(sum, grad)}, nil
	}
	return apply(op, keys, q)
}

// MaskedSoftmax is the softmax over each row of scores (B, S) with positions at or past (*lengths)[row] masked to
// exactly 0. Gradient: dx = w ⊙ (g − Σ_j w_j g_j), which is 0 on masked positions since w is, and 0 on a row
// of length 0, whose weights are uniform whatever the scores.
func MaskedSoftmax[T kernels.Float](scores *G.Node, lengths *[]int) *G.Node {
	return rowSoftmax[T]("MaskedSoftmax", fmt.Sprint(scores.Shape()), scores, 1, func(r, _ int) int { return (*lengths)[r] }, true)
}

// rowSoftmax is the op called kind(args): the softmax of each row of scores (rows·queries, k), row r·queries+i
// over the first valid(r, i) keys (the others get weight exactly 0). A row with no valid key gets weights all
// 0, or with uniform the uniform weights of kernels.SoftmaxRow, which do not depend on the scores and so pass no
// gradient. Gradient: dx = w ⊙ (g − Σ_j w_j g_j), 0 wherever w is.
func rowSoftmax[T kernels.Float](kind, args string, scores *G.Node, queries int, valid func(r, i int) int, uniform bool) *G.Node {
	shape := scores.Shape().Clone()
	k, rows := shape[1], shape[0]/queries
	// each calls row(at, n) for every row of the op, at its first value and with its number of valid keys.
	each := func(row func(at, n int)) {
		for r := 0; r < rows; r++ {
			for i := 0; i < queries; i++ {
				row((r*queries+i)*k, valid(r, i))
			}
		}
	}
	op := newOp[T](kind+"("+args+")", shape, []int{2}, func(in [][]T, out []T) {
		copy(out, in[0])
		each(func(at, n int) {
			if n > 0 || uniform {
				kernels.SoftmaxRow(out[at:at+k], n)
			} else {
				clear(out[at : at+k])
			}
		})
	})
	op.backward = func(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		gop := newOp[T](kind+"Grad("+args+")", shape, []int{2, 2}, func(in [][]T, out []T) {
			w, g := in[0], in[1]
			each(func(at, n int) {
				if uniform && n <= 0 { // every position masked: uniform weights, whatever the scores
					clear(out[at : at+k])
					return
				}
				kernels.SoftmaxRowBackward(w[at:at+k], g[at:at+k], out[at:at+k])
			})
		})
		return G.Nodes{apply(gop, output, grad)}, nil
	}
	return apply(op, scores)
}

// SoftmaxCrossEntropy is Σ_r −Σ_j q_rj log softmax(logits[r])_j over the rows of logits (N, V) whose target is
// not padding, with the label-smoothed target q_r = (1−ε)·onehot(targets[r]) + ε/V (ε = smoothing; 0 gives the
// plain −log softmax(logits[r])[targets[r]]), row by row as kernels.XentRow computes it. The forward pass keeps
// each row's gradient, so the backward pass — (softmax − q) · g on those rows, 0 on padding rows — is a product.
func SoftmaxCrossEntropy[T kernels.Float](logits *G.Node, targets *[]int, padID int, smoothing float64) *G.Node {
	shape := logits.Shape().Clone()
	v := shape[1]
	dLogits := make([]T, shape.TotalSize()) // softmax − q of the last forward run, read by the backward op
	op := newOp[T](fmt.Sprintf("SoftmaxCrossEntropy(%v,%d,%g)", shape, padID, smoothing), tensor.ScalarShape(), []int{2}, func(in [][]T, out []T) {
		var loss float64
		for r, y := range *targets {
			d := dLogits[r*v : (r+1)*v]
			if y == padID {
				clear(d)
				continue
			}
			copy(d, in[0][r*v:(r+1)*v])
			loss += kernels.XentRow(d, y, smoothing)
		}
		out[0] = T(loss)
	})
	op.backward = func(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		gop := newOp[T](fmt.Sprintf("SoftmaxCrossEntropyGrad(%v,%d,%g)", shape, padID, smoothing), shape, []int{2, 0}, func(in [][]T, out []T) {
			for i, d := range dLogits {
				out[i] = d * in[1][0]
			}
		})
		return G.Nodes{apply(gop, inputs[0], grad)}, nil
	}
	return apply(op, logits)
}

// SelfMaskedSoftmax is the softmax of self-attention scores: row r·S+i of scores (B·S, S) holds the scores of
// query position i of sentence r against every key position. Keys at or past n = (*lengths)[r] get weight exactly
// 0; the rows of padded queries (i >= n) are all 0, so they carry no value and no gradient. Gradient:
// dx = w ⊙ (g − Σ_j w_j g_j), 0 wherever w is.
func SelfMaskedSoftmax[T kernels.Float](scores *G.Node, lengths *[]int, srcLen int) *G.Node {
	shape := scores.Shape()
	if shape[0]%srcLen != 0 || shape[1] != srcLen {
		panic(fmt.Sprintf("graph: SelfMaskedSoftmax of %v with %d positions", shape, srcLen))
	}
	return rowSoftmax[T]("SelfMaskedSoftmax", fmt.Sprint(shape), scores, srcLen, func(r, i int) int {
		if n := (*lengths)[r]; i < n {
			return n
		}
		return 0
	}, false)
}

// AttentionSoftmax is the softmax of attention scores (B·Lq, Lk) whose rows are queries: row r·Lq+i holds the
// scores of query i of sentence r against every key. Query i of sentence r sees the keys below (*keyLengths)[r]
// (every key when keyLengths is nil) and, with causal, only those up to position i as well (a decoder's
// self-attention); the others get weight exactly 0, and a query that sees no key gets weights all 0, so it
// carries no value and passes no gradient (unlike MaskedSoftmax's uniform weights). Gradient:
// dx = w ⊙ (g − Σ_j w_j g_j), 0 wherever w is.
func AttentionSoftmax[T kernels.Float](scores *G.Node, keyLengths *[]int, queries int, causal bool) *G.Node {
	shape := scores.Shape()
	k := shape[1]
	if shape.Dims() != 2 || queries < 1 || shape[0]%queries != 0 {
		panic(fmt.Sprintf("graph: AttentionSoftmax of %v with %d queries a row", shape, queries))
	}
	// valid is the number of keys query i of sentence r sees.
	valid := func(r, i int) int {
		n := k
		if keyLengths != nil {
			n = max(0, min((*keyLengths)[r], k))
		}
		if causal {
			n = min(n, i+1)
		}
		return n
	}
	return rowSoftmax[T]("AttentionSoftmax", fmt.Sprintf("%v,%d,%v,%v", shape, queries, keyLengths != nil, causal), scores, queries, valid, false)
}

// MaskPositions zeroes the rows of x (B·S, D) that lie past their sentence's length: row r·S+i is kept when
// i < (*lengths)[r]. Gradient: the output gradient, masked the same way.
func MaskPositions[T kernels.Float](x *G.Node, lengths *[]int, srcLen int) *G.Node {
	shape := x.Shape().Clone()
	mask := func(name string) *kernelOp[T] {
		return newOp[T](fmt.Sprintf("%s(%d,%v)", name, srcLen, shape), shape, []int{2}, func(in [][]T, out []T) {
			d := shape[1]
			for r, n := range *lengths {
				for i := 0; i < srcLen; i++ {
					at := (r*srcLen + i) * d
					if i < n {
						copy(out[at:at+d], in[0][at:at+d])
					} else {
						clear(out[at : at+d])
					}
				}
			}
		})
	}
	op := mask("MaskPositions")
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		return G.Nodes{apply(mask("MaskPositionsGrad"), grad)}, nil
	}
	return apply(op, x)
}

// Columns returns the columns [from, to) of x (R, W) as an (R, to−from) matrix. Gradient: a zero (R, W) matrix
// holding the output gradient in those columns.
func Columns[T kernels.Float](x *G.Node, from, to int) *G.Node {
	shape := x.Shape().Clone()
	rows, w, n := shape[0], shape[1], to-from
	if from < 0 || to > w || from >= to {
		panic(fmt.Sprintf("graph: Columns [%d,%d) of %v", from, to, shape))
	}
	op := newOp[T](fmt.Sprintf("Columns(%d,%d,%v)", from, to, shape), tensor.Shape{rows, n}, []int{2}, func(in [][]T, out []T) {
		for r := 0; r < rows; r++ {
			copy(out[r*n:(r+1)*n], in[0][r*w+from:r*w+to])
		}
	})
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		gop := newOp[T](fmt.Sprintf("ColumnsGrad(%d,%d,%v)", from, to, shape), shape, []int{2}, func(in [][]T, out []T) {
			clear(out)
			for r := 0; r < rows; r++ {
				copy(out[r*w+from:r*w+to], in[0][r*n:(r+1)*n])
			}
		})
		return G.Nodes{apply(gop, grad)}, nil
	}
	return apply(op, x)
}
