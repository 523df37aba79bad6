// Package block is the Transformer block and its parts, each written once for align's multi-head score, the
// encoder's self-attention layers and the Transformer: multi-head attention (a forward pass that keeps its
// cache, its backward pass, and a step over cached keys and values), the feed-forward layer, and the block with
// a pre-/post-norm switch, in plain Go, and the same attention and block built from gorgonia's ops (Graph,
// GraphBlock) as the autodiff reference.
//
// Activations are batch-major: row r·L+i of an (N, width) buffer is position i of sentence r, N = B·L. Letters
// as in llm.c: B rows, NH heads, HD the width of one head, D = NH·HD, F the feed-forward layer's inner width.
package block

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/kernels"
)

// Attention is the shape of one multi-head scaled dot-product attention: Heads heads of HeadDim columns each,
// queries projected from inputs QueryDim wide, keys and values from inputs MemDim wide, and the heads' contexts,
// side by side (NH·HD), projected to OutDim. With PerHead, head j's query, key and value projections are block
// j of (NH, in, HD) tensors; otherwise head j reads columns [j·HD, (j+1)·HD) of one (in, NH·HD) matrix.
type Attention struct {
	Heads, HeadDim, QueryDim, MemDim, OutDim int
	PerHead                                  bool
}

// Width is NH·HD, the width of the queries, keys, values and contexts.
func (a Attention) Width() int { return a.Heads * a.HeadDim }

// Weights is one attention's weights (or their gradients): W_Q (QueryDim, NH·HD), W_K and W_V (MemDim, NH·HD),
// each as Attention.PerHead lays them out, W_O (NH·HD, OutDim) with head j in rows [j·HD, (j+1)·HD), and the
// biases b_Q, b_K, b_V (NH·HD) and b_O (OutDim); a nil bias is none.
type Weights[T kernels.Float] struct{ QW, QB, KW, KB, VW, VB, OW, OB []T }

// Cache is one multi-head attention of queries from x (B·Lq, QueryDim) over keys and values from m (B·Lk,
// MemDim), and what its forward pass keeps for the backward pass:
//
//	Q = x W_Q + b_Q;  K = m W_K + b_K;  V = m W_V + b_V
//	A_j = softmax over query i's valid keys (Q_j K_jᵀ / √HD);  C = [A_1 V_1 … A_NH V_NH];  out = C W_O + b_O
//
// Row r has KeyLen[r] real keys (nil: all Lk), and only its first QueryLen[r] queries are computed (nil: all
// Lq; the others' contexts and weights are 0, and so are all of a row without a key); with Causal, query i sees
// the keys up to i. The keys and values of position i of row r are at r·KeyStride + i·LdK of K and V, or at
// i·LdK of RowK[r] and RowV[r] when RowK is set (LdK ≥ NH·HD; head j from column j·HD on), so that a step can
// read them from a cache, or from keys that rows share.
type Cache[T kernels.Float] struct {
	Attention
	Rows, Lq, Lk     int
	KeyLen, QueryLen []int
	Causal           bool
	X, M             []T // the inputs of the last Forward (not copies)
	Q, Ctx           []T // (B·Lq, NH·HD)
	K, V             []T // (B·Lk, NH·HD) unless LdK, KeyStride and RowK say otherwise
	LdK, KeyStride   int
	RowK, RowV       [][]T // row r's own keys and values, read in place of K's and V's; nil: K's and V's
	Att              []T   // (B, NH, Lq, Lk): softmax weights, 0 on masked keys and on uncomputed queries
	// DWeights, when not nil, is a gradient of head WeightHead's weights from outside the attention (guided
	// alignment's), (Lq, B, Lk) time-major; Backward adds it to that head's before the softmax's backward pass.
	DWeights   []T
	WeightHead int
}

// NewCache takes an attention's buffers from arena under names starting with name, for queries of rows × lq
// positions over keys of rows × lk positions laid out batch-major.
func NewCache[T kernels.Float](arena *kernels.Arena[T], name string, a Attention, rows, lq, lk int, keyLen, queryLen []int, causal bool) *Cache[T] {
	w := a.Width()
	return &Cache[T]{Attention: a, Rows: rows, Lq: lq, Lk: lk, KeyLen: keyLen, QueryLen: queryLen, Causal: causal,
		Q: arena.Get(name+".q", rows*lq*w), Ctx: arena.Get(name+".ctx", rows*lq*w),
		K: arena.Get(name+".k", rows*lk*w), V: arena.Get(name+".v", rows*lk*w), LdK: w, KeyStride: lk * w,
		Att: arena.Get(name+".att", rows*a.Heads*lq*lk)}
}

// keys returns row r's keys and values from its first on.
func (c *Cache[T]) keys(r int) (k, v []T) {
	if c.RowK != nil {
		return c.RowK[r], c.RowV[r]
	}
	return c.K[r*c.KeyStride:], c.V[r*c.KeyStride:]
}

// Keys is the number of real keys of row r.
func (c *Cache[T]) Keys(r int) int {
	if c.KeyLen == nil {
		return c.Lk
	}
	return max(0, min(c.KeyLen[r], c.Lk))
}

// queries is the number of computed queries of row r: all of them, or none when the row has no key.
func (c *Cache[T]) queries(r int) int {
	if c.Keys(r) == 0 {
		return 0
	}
	if c.QueryLen == nil {
		return c.Lq
	}
	return max(0, min(c.QueryLen[r], c.Lq))
}

// valid is the number of keys query i of a row with L real keys sees.
func (c *Cache[T]) valid(i, L int) int {
	if c.Causal {
		return min(L, i+1)
	}
	return L
}

// HeadWeights writes into dst (Lq, B, Lk) time-major the weights of head j: the layout of the trainer's
// guided-alignment gold (align.FillGuide) and of a teacher-forced pass's cross-attention.
func (c *Cache[T]) HeadWeights(dst []T, j int) {
	s2 := c.Lq * c.Lk
	for r := 0; r < c.Rows; r++ {
		a := c.Att[(r*c.Heads+j)*s2:][:s2]
		for i := 0; i < c.Lq; i++ {
			copy(dst[(i*c.Rows+r)*c.Lk:(i*c.Rows+r+1)*c.Lk], a[i*c.Lk:(i+1)*c.Lk])
		}
	}
}

// Project writes into out (n rows, ldo apart) the projection x W + b of x (n, in) for every head, W laid out as
// a.PerHead says and b (NH·HD) or nil.
func Project[T kernels.Float](a Attention, w, b, x []T, n, in int, out []T, ldo int) {
	hd, width := a.HeadDim, a.Width()
	if a.PerHead {
		for j := 0; j < a.Heads; j++ {
			kernels.Linear(x, w[j*in*hd:(j+1)*in*hd], n, in, hd, out[j*hd:], ldo)
		}
	} else {
		kernels.Linear(x, w, n, in, width, out, ldo)
	}
	if b != nil {
		kernels.AddBiasStrided(out, n, ldo, b)
	}
}

// ProjectBackward adds into dx the gradient of Project's x and into dw that of W, given dy (n rows, ldy apart).
func ProjectBackward[T kernels.Float](a Attention, w, x, dy []T, n, in, ldy int, dx, dw []T) {
	hd, width := a.HeadDim, a.Width()
	if !a.PerHead {
		kernels.LinearBackward(x, w, dy, n, in, width, ldy, dx, dw)
		return
	}
	for j := 0; j < a.Heads; j++ {
		blk := func(t []T) []T { return t[j*in*hd : (j+1)*in*hd] }
		kernels.LinearBackward(x, blk(w), dy[j*hd:], n, in, hd, ldy, dx, blk(dw))
	}
}

// Forward writes into out (B·Lq, OutDim) the attention of the queries from x over the keys and values from m
// (x and m may be the same), or, with accumulate, adds it to out: out += C W_O, then b_O. m holds every key's
// input (B·Lk, MemDim), or, over a step's cache (KeyStride apart), only the last position's (B, MemDim), whose
// keys and values it appends as each row's last (Keys); with m nil it reads the keys and values already in K and V.
func (c *Cache[T]) Forward(w Weights[T], x, m, out []T, accumulate bool) {
	nq, width := c.Rows*c.Lq, c.Width()
	c.X, c.M = x, m
	Project(c.Attention, w.QW, w.QB, x, nq, c.QueryDim, c.Q, width)
	switch {
	case m == nil:
	case c.KeyStride == c.Lk*c.LdK && c.RowK == nil && len(m) == c.Rows*c.Lk*c.MemDim:
		Project(c.Attention, w.KW, w.KB, m, c.Rows*c.Lk, c.MemDim, c.K, c.LdK)
		Project(c.Attention, w.VW, w.VB, m, c.Rows*c.Lk, c.MemDim, c.V, c.LdK)
	case c.RowK == nil && c.KeyLen == nil && len(m) == c.Rows*c.MemDim:
		// a step of rows at the same position: their keys and values go to position Lk-1
		at := (c.Lk - 1) * c.LdK
		Project(c.Attention, w.KW, w.KB, m, c.Rows, c.MemDim, c.K[at:], c.KeyStride)
		Project(c.Attention, w.VW, w.VB, m, c.Rows, c.MemDim, c.V[at:], c.KeyStride)
	case c.RowK == nil && len(m) == c.Rows*c.MemDim:
		// a step of rows at their own positions: row r's key and value go to its last, Keys(r)-1; they are
		// projected side by side into Ctx, unused until attend, and copied there
		for _, kv := range [2]struct{ w, b, to []T }{{w.KW, w.KB, c.K}, {w.VW, w.VB, c.V}} {
			Project(c.Attention, kv.w, kv.b, m, c.Rows, c.MemDim, c.Ctx, width)
			for r := 0; r < c.Rows; r++ {
				if at := c.Keys(r) - 1; at >= 0 {
					copy(kv.to[r*c.KeyStride+at*c.LdK:][:width], c.Ctx[r*width:][:width])
				}
			}
		}
	default:
		panic(fmt.Sprintf("block: Attention.Forward over %d rows × %d keys got %d inputs of keys", c.Rows, c.Lk, len(m)))
	}
	c.attend()
	beta := T(0)
	if accumulate {
		beta = 1
	}
	kernels.Gemm(false, false, nq, c.OutDim, width, 1, c.Ctx, width, w.OW, c.OutDim, beta, out, c.OutDim)
	if w.OB != nil {
		kernels.AddBias(out, nq, c.OutDim, w.OB)
	}
}

// attend computes the weights A_j and the contexts C from Q, K and V. Heads are read in place through the row
// strides; uncomputed queries keep weights and contexts 0.
func (c *Cache[T]) attend() {
	hd, width, lk := c.HeadDim, c.Width(), c.Lk
	scale := T(1 / math.Sqrt(float64(hd)))
	s2 := c.Lq * lk
	for r := 0; r < c.Rows; r++ {
		L, nQ := c.Keys(r), c.queries(r)
		qBase := r * c.Lq * width
		k, v := c.keys(r)
		clear(c.Ctx[qBase+nQ*width : qBase+c.Lq*width])
		for j := 0; j < c.Heads; j++ {
			a := c.Att[(r*c.Heads+j)*s2:][:s2]
			clear(a[nQ*lk:])
			if nQ == 0 {
				continue
			}
			kernels.Gemm(false, true, nQ, L, hd, scale, c.Q[qBase+j*hd:], width, k[j*hd:], c.LdK, 0, a, lk)
			for i := 0; i < nQ; i++ {
				kernels.SoftmaxRow(a[i*lk:(i+1)*lk], c.valid(i, L))
			}
			kernels.Gemm(false, false, nQ, hd, L, 1, a, lk, v[j*hd:], c.LdK, 0, c.Ctx[qBase+j*hd:], width)
		}
	}
}

// Scratch is the backward pass's scratch of one attention: dCtx, dQ (B·Lq, NH·HD), dK, dV (laid out as K and V),
// dA (Lq, Lk). An attention whose keys and values were given (Forward's m nil) takes their gradients in DK and
// DV, its caller's, which Backward adds to.
type Scratch[T kernels.Float] struct{ DCtx, DQ, DK, DV, DA []T }

// NewScratch takes the scratch of c's backward pass from arena under names starting with name; attentions whose
// backward passes run one after the other may share one.
func NewScratch[T kernels.Float](arena *kernels.Arena[T], name string, c *Cache[T]) Scratch[T] {
	nq, nk := c.Rows*c.Lq*c.Width(), c.Rows*c.Lk*c.Width()
	return Scratch[T]{DCtx: arena.Get(name+".dctx", nq), DQ: arena.Get(name+".dq", nq), DK: arena.Get(name+".dk", nk),
		DV: arena.Get(name+".dv", nk), DA: arena.Get(name+".da", c.Lq*c.Lk)}
}

// Backward adds the gradients of the weights into dw, of x into dx and of m into dm (dx and dm may be the same
// buffer, for self-attention), given dOut, the gradient of Forward's out (read only). It reads what the last
// Forward kept; after one with m nil, it adds the gradients of the keys and values into s.DK and s.DV instead.
//
// b_K's gradient is left at 0, its exact value: b_K adds q_i·b_K to every score of query i, which the softmax
// does not see (each row of dE sums to 0). The column sums of dK would be rounding noise instead, which Adam,
// dividing by its own scale, turns into steps of the full learning rate that differ from one summation order
// (workers, MPI processes) to another; so b_K stays where Init or a checkpoint put it.
func (c *Cache[T]) Backward(w, dw Weights[T], dOut, dx, dm []T, s Scratch[T]) {
	if c.RowK != nil || c.M != nil && (c.LdK != c.Width() || c.KeyStride != c.Lk*c.Width()) {
		panic(fmt.Sprintf("block: Attention.Backward over a step's cache (LdK %d, KeyStride %d, rows' own keys %t)", c.LdK, c.KeyStride, c.RowK != nil))
	}
	hd, width, lk, ldk := c.HeadDim, c.Width(), c.Lk, c.LdK
	nq, nk := c.Rows*c.Lq, c.Rows*c.Lk
	// forward: out = C W_O + b_O, so dW_O += Cᵀ dout, db_O += Σ dout, dC = dout W_Oᵀ
	if dw.OB != nil {
		kernels.AddColumnSums(dw.OB, dOut, nq, c.OutDim)
	}
	clear(s.DCtx)
	kernels.LinearBackward(c.Ctx, w.OW, dOut, nq, width, c.OutDim, c.OutDim, s.DCtx, dw.OW)
	clear(s.DQ)
	if c.M != nil {
		clear(s.DK[:nk*width])
		clear(s.DV[:nk*width])
	}
	scale := T(1 / math.Sqrt(float64(hd)))
	s2 := c.Lq * lk
	for r := 0; r < c.Rows; r++ {
		L, nQ := c.Keys(r), c.queries(r)
		if nQ == 0 {
			continue
		}
		qBase, kBase := r*c.Lq*width, r*c.KeyStride
		for j := 0; j < c.Heads; j++ {
			a := c.Att[(r*c.Heads+j)*s2:][:s2]
			qo, ko := qBase+j*hd, kBase+j*hd
			// forward: C_j = A_j V_j, so dA = dC_j V_jᵀ and dV_j += A_jᵀ dC_j
			kernels.Gemm(false, true, nQ, L, hd, 1, s.DCtx[qo:], width, c.V[ko:], ldk, 0, s.DA, lk)
			kernels.Gemm(true, false, L, hd, nQ, 1, a, lk, s.DCtx[qo:], width, 1, s.DV[ko:], ldk)
			// a loss on A_j from outside (guided alignment) adds its gradient: dA += DWeights
			if c.DWeights != nil && j == c.WeightHead {
				for i := 0; i < nQ; i++ {
					row, extra := s.DA[i*lk:i*lk+L], c.DWeights[(i*c.Rows+r)*lk:][:L]
					for k, g := range extra {
						row[k] += g
					}
				}
			}
			// forward: A_j = softmax(E) row by row, so dE_i = a_i ⊙ (dA_i − a_i·dA_i) (0 where a_i is 0)
			for i := 0; i < nQ; i++ {
				row := s.DA[i*lk : i*lk+L]
				kernels.SoftmaxRowBackward(a[i*lk:i*lk+L], row, row)
			}
			// forward: E = Q_j K_jᵀ / √HD, so dQ_j += dE K_j / √HD and dK_j += dEᵀ Q_j / √HD
			kernels.Gemm(false, false, nQ, hd, L, scale, s.DA, lk, c.K[ko:], ldk, 1, s.DQ[qo:], width)
			kernels.Gemm(true, false, L, hd, nQ, scale, s.DA, lk, c.Q[qo:], width, 1, s.DK[ko:], ldk)
		}
	}
	// forward: Q = x W_Q + b_Q, K = m W_K + b_K, V = m W_V + b_V (b_K's gradient stays 0: see above)
	if dw.QB != nil {
		kernels.AddColumnSums(dw.QB, s.DQ, nq, width)
	}
	ProjectBackward(c.Attention, w.QW, c.X, s.DQ, nq, c.QueryDim, width, dx, dw.QW)
	if c.M == nil {
		return
	}
	if dw.VB != nil {
		kernels.AddColumnSums(dw.VB, s.DV, nk, width)
	}
	ProjectBackward(c.Attention, w.KW, c.M, s.DK, nk, c.MemDim, width, dm, dw.KW)
	ProjectBackward(c.Attention, w.VW, c.M, s.DV, nk, c.MemDim, width, dm, dw.VW)
}
