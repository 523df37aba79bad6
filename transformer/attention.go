package transformer

// Multi-head scaled dot-product attention, batch-major like the other sub-layers (layers.go): each head is read
// in place from its columns of Q, K and V through the row strides of the products, so no head is copied.

import (
	"math"

	"github.com/attend-nmt/attend/kernels"
)

// attnCache is one multi-head attention's sizes and what its forward pass keeps: queries from x (B, Lq, D)
// over keys and values from m (B, Lk, D). Row r has keyLen[r] real keys (nil: all Lk), and only its first
// queryLen[r] queries are computed (nil: all Lq; the others' contexts and weights are 0); causal limits query
// i to the keys up to i.
type attnCache[T kernels.Float] struct {
	rows, lq, lk, dim, heads int
	keyLen, queryLen         []int
	causal                   bool
	x, m                     []T // the inputs (not copies)
	q, ctx                   []T // (B·Lq, D); head j in columns [j·HD, (j+1)·HD)
	k, v                     []T // (B·Lk, D)
	att                      []T // (B, NH, Lq, Lk): softmax weights, 0 on masked keys and on uncomputed queries
	// dWeights, when not nil, is a gradient of head weightHead's weights from outside the attention (guided
	// alignment's), (Lq, B, Lk) time-major; backward adds it to that head's before the softmax's backward pass.
	dWeights   []T
	weightHead int
}

// headWeights writes into dst (Lq, B, Lk) time-major the weights of head j: the layout of the trainer's
// guided-alignment gold (align.FillGuide) and of Forced.Cross.
func (c *attnCache[T]) headWeights(dst []T, j int) {
	s2 := c.lq * c.lk
	for r := 0; r < c.rows; r++ {
		a := c.att[(r*c.heads+j)*s2:][:s2]
		for i := 0; i < c.lq; i++ {
			copy(dst[(i*c.rows+r)*c.lk:(i*c.rows+r+1)*c.lk], a[i*c.lk:(i+1)*c.lk])
		}
	}
}

// newAttnCache takes an attention's buffers from a under names starting with name.
func newAttnCache[T kernels.Float](a *kernels.Arena[T], name string, rows, lq, lk, dim, heads int, keyLen, queryLen []int, causal bool) *attnCache[T] {
	nq, nk := rows*lq*dim, rows*lk*dim
	return &attnCache[T]{rows: rows, lq: lq, lk: lk, dim: dim, heads: heads, keyLen: keyLen, queryLen: queryLen, causal: causal,
		q: a.Get(name+".q", nq), ctx: a.Get(name+".ctx", nq), k: a.Get(name+".k", nk), v: a.Get(name+".v", nk),
		att: a.Get(name+".att", rows*heads*lq*lk)}
}

// keys is the number of real keys of row r.
func (c *attnCache[T]) keys(r int) int {
	if c.keyLen == nil {
		return c.lk
	}
	return max(0, min(c.keyLen[r], c.lk))
}

// queries is the number of computed queries of row r: all of them, or none when the row has no key.
func (c *attnCache[T]) queries(r int) int {
	if c.keys(r) == 0 {
		return 0
	}
	if c.queryLen == nil {
		return c.lq
	}
	return max(0, min(c.queryLen[r], c.lq))
}

// valid is the number of keys query i of a row with L real keys sees.
func (c *attnCache[T]) valid(i, L int) int {
	if c.causal {
		return min(L, i+1)
	}
	return L
}

// forward writes into out (B·Lq, D) the attention of the queries from x over m (x and m may be the same).
func (c *attnCache[T]) forward(w attnWeights[T], x, m, out []T) {
	d, hd := c.dim, c.dim/c.heads
	nq, nk := c.rows*c.lq, c.rows*c.lk
	c.x, c.m = x, m
	// Q = x W_Q + b_Q;  K = m W_K + b_K;  V = m W_V + b_V
	kernels.Linear(x, w.qW, nq, d, d, c.q, d)
	kernels.AddBias(c.q, nq, d, w.qB)
	kernels.Linear(m, w.kW, nk, d, d, c.k, d)
	kernels.AddBias(c.k, nk, d, w.kB)
	kernels.Linear(m, w.vW, nk, d, d, c.v, d)
	kernels.AddBias(c.v, nk, d, w.vB)
	// A_j = softmax(Q_j K_jᵀ / √HD) over each query's valid keys;  C_j = A_j V_j. Heads are read in place through
	// the row strides; uncomputed queries keep weights and contexts 0.
	scale := T(1 / math.Sqrt(float64(hd)))
	s2 := c.lq * c.lk
	for r := 0; r < c.rows; r++ {
		L, nQ := c.keys(r), c.queries(r)
		qBase, kBase := r*c.lq*d, r*c.lk*d
		clear(c.ctx[qBase+nQ*d : qBase+c.lq*d])
		for j := 0; j < c.heads; j++ {
			a := c.att[(r*c.heads+j)*s2:][:s2]
			clear(a[nQ*c.lk:])
			if nQ == 0 {
				continue
			}
			kernels.Gemm(false, true, nQ, L, hd, scale, c.q[qBase+j*hd:], d, c.k[kBase+j*hd:], d, 0, a, c.lk)
			for i := 0; i < nQ; i++ {
				kernels.SoftmaxRow(a[i*c.lk:(i+1)*c.lk], c.valid(i, L))
			}
			kernels.Gemm(false, false, nQ, hd, L, 1, a, c.lk, c.v[kBase+j*hd:], d, 0, c.ctx[qBase+j*hd:], d)
		}
	}
	// out = C W_O + b_O
	kernels.Linear(c.ctx, w.oW, nq, d, d, out, d)
	kernels.AddBias(out, nq, d, w.oB)
}

// attnScratch is the backward pass's scratch of one attention: dCtx, dQ (B·Lq, D), dK, dV (B·Lk, D), dA (Lq, Lk).
type attnScratch[T kernels.Float] struct{ dCtx, dQ, dK, dV, dA []T }

// newAttnScratch takes the scratch of c's backward pass from a under names starting with name.
func newAttnScratch[T kernels.Float](a *kernels.Arena[T], name string, c *attnCache[T]) attnScratch[T] {
	nq, nk := c.rows*c.lq*c.dim, c.rows*c.lk*c.dim
	return attnScratch[T]{dCtx: a.Get(name+".dctx", nq), dQ: a.Get(name+".dq", nq), dK: a.Get(name+".dk", nk),
		dV: a.Get(name+".dv", nk), dA: a.Get(name+".da", c.lq*c.lk)}
}

// backward adds the gradients of the weights into dw, of x into dx and of m into dm (dx and dm may be the same
// buffer, for self-attention), given dOut, the gradient of forward's out. dOut is read only.
func (c *attnCache[T]) backward(w, dw attnWeights[T], dOut, dx, dm []T, s attnScratch[T]) {
	d, hd := c.dim, c.dim/c.heads
	nq, nk := c.rows*c.lq, c.rows*c.lk
	// forward: out = C W_O + b_O, so dW_O += Cᵀ dout, db_O += Σ dout, dC = dout W_Oᵀ
	kernels.AddColumnSums(dw.oB, dOut, nq, d)
	clear(s.dCtx)
	kernels.LinearBackward(c.ctx, w.oW, dOut, nq, d, d, d, s.dCtx, dw.oW)
	clear(s.dQ)
	clear(s.dK)
	clear(s.dV)
	scale := T(1 / math.Sqrt(float64(hd)))
	s2 := c.lq * c.lk
	for r := 0; r < c.rows; r++ {
		L, nQ := c.keys(r), c.queries(r)
		if nQ == 0 {
			continue
		}
		qBase, kBase := r*c.lq*d, r*c.lk*d
		for j := 0; j < c.heads; j++ {
			a := c.att[(r*c.heads+j)*s2:][:s2]
			qo, ko := qBase+j*hd, kBase+j*hd
			// forward: C_j = A_j V_j, so dA = dC_j V_jᵀ and dV_j += A_jᵀ dC_j
			kernels.Gemm(false, true, nQ, L, hd, 1, s.dCtx[qo:], d, c.v[ko:], d, 0, s.dA, c.lk)
			kernels.Gemm(true, false, L, hd, nQ, 1, a, c.lk, s.dCtx[qo:], d, 1, s.dV[ko:], d)
			// a loss on A_j from outside (guided alignment) adds its gradient: dA += dWeights
			if c.dWeights != nil && j == c.weightHead {
				for i := 0; i < nQ; i++ {
					row, extra := s.dA[i*c.lk:i*c.lk+L], c.dWeights[(i*c.rows+r)*c.lk:][:L]
					for k, g := range extra {
						row[k] += g
					}
				}
			}
			// forward: A_j = softmax(E) row by row, so dE_i = a_i ⊙ (dA_i − a_i·dA_i) (0 where a_i is 0)
			for i := 0; i < nQ; i++ {
				row := s.dA[i*c.lk : i*c.lk+L]
				kernels.SoftmaxRowBackward(a[i*c.lk:i*c.lk+L], row, row)
			}
			// forward: E = Q_j K_jᵀ / √HD, so dQ_j += dE K_j / √HD and dK_j += dEᵀ Q_j / √HD
			kernels.Gemm(false, false, nQ, hd, L, scale, s.dA, c.lk, c.k[ko:], d, 1, s.dQ[qo:], d)
			kernels.Gemm(true, false, L, hd, nQ, scale, s.dA, c.lk, c.q[qo:], d, 1, s.dK[ko:], d)
		}
	}
	// forward: Q = x W_Q + b_Q, K = m W_K + b_K, V = m W_V + b_V
	// b_K's gradient, the column sums of dK, is exactly 0: b_K adds q_i·b_K to every score of query i, which the
	// softmax does not see (each row of dE sums to 0). Summed in floating point it is rounding noise instead,
	// which Adam, dividing by its own scale, would turn into steps of the full learning rate that differ from
	// one summation order (workers, MPI processes) to another. So it is left at 0, as b_K stays where Init put it.
	kernels.AddColumnSums(dw.qB, s.dQ, nq, d)
	kernels.AddColumnSums(dw.vB, s.dV, nk, d)
	kernels.LinearBackward(c.x, w.qW, s.dQ, nq, d, d, d, dx, dw.qW)
	kernels.LinearBackward(c.m, w.kW, s.dK, nk, d, d, d, dm, dw.kW)
	kernels.LinearBackward(c.m, w.vW, s.dV, nk, d, d, d, dm, dw.vW)
}
