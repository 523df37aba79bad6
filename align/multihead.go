package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// MultiHead is multi-head attention, model.attention "multi-head": Heads heads of scaled-dot attention over
// learned projections, their contexts concatenated and projected back to the memory width:
//
//	Q_j = W_Q,j s_{t-1};  K_ij = W_K,j h_i;  V_ij = W_V,j h_i          (each HeadDim = Dim/Heads wide)
//	a_j = masked softmax_i(Q_jᵀ K_ij / √HeadDim);  c_j = Σ_i a_ji V_ij
//	context = Σ_j W_O,j c_j  (= W_O [c_1 ; … ; c_h])
//
// Each head has its own weights, so MultiHead is an Attention of its own rather than a Scorer: its Step writes
// the heads' average as the exported weights. The key of a position is [K_i1 … K_ih ; V_i1 … V_ih], computed
// once per sentence.
type MultiHead[T kernels.Float] struct {
	MemDim, QueryDim, Heads, HeadDim int
	QueryW                           *param.Tensor[T] // W_Q (Heads, QueryDim, HeadDim)
	KeyW, ValueW                     *param.Tensor[T] // W_K, W_V (Heads, MemDim, HeadDim)
	OutW                             *param.Tensor[T] // W_O (Heads, HeadDim, MemDim)
}

var (
	_ Attention[float32]   = (*MultiHead[float32])(nil)
	_ HeadWeigher[float32] = (*MultiHead[float32])(nil)
)

// newMultiHead is the registry's constructor: Dim must be a positive multiple of Heads.
func newMultiHead[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	if cfg.Heads < 1 || cfg.Dim < cfg.Heads || cfg.Dim%cfg.Heads != 0 {
		return nil, fmt.Errorf("align: multi-head attention splits model.attn_dim (%d) into model.heads (%d) equal heads: it must be a positive multiple of it", cfg.Dim, cfg.Heads)
	}
	return NewMultiHead(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Heads), nil
}

// NewMultiHead registers "attn.w_q", "attn.w_k", "attn.w_v" and "attn.w_o" in set; dim must be a multiple of
// heads.
func NewMultiHead[T kernels.Float](set *param.Set[T], memDim, queryDim, dim, heads int) *MultiHead[T] {
	dk := dim / heads
	return &MultiHead[T]{MemDim: memDim, QueryDim: queryDim, Heads: heads, HeadDim: dk,
		QueryW: set.Add("attn.w_q", heads, queryDim, dk), KeyW: set.Add("attn.w_k", heads, memDim, dk),
		ValueW: set.Add("attn.w_v", heads, memDim, dk), OutW: set.Add("attn.w_o", heads, dk, memDim)}
}

// Params returns W_Q, W_K, W_V and W_O.
func (m *MultiHead[T]) Params() []*param.Tensor[T] {
	return []*param.Tensor[T]{m.QueryW, m.KeyW, m.ValueW, m.OutW}
}

// Init draws every weight uniformly in ±1/sqrt(fan-in).
func (m *MultiHead[T]) Init(rng *rand.Rand) {
	param.Uniform(m.QueryW, param.InvSqrt(m.QueryDim), rng)
	param.Uniform(m.KeyW, param.InvSqrt(m.MemDim), rng)
	param.Uniform(m.ValueW, param.InvSqrt(m.MemDim), rng)
	param.Uniform(m.OutW, param.InvSqrt(m.Heads*m.HeadDim), rng)
}

// KeyWidth is 2·Heads·HeadDim: every head's key, then every head's value.
func (m *MultiHead[T]) KeyWidth() int { return 2 * m.Heads * m.HeadDim }

// shape is the heads' shape for block's attention: each head's projections a block of its own, no biases.
func (m *MultiHead[T]) shape() block.Attention {
	return block.Attention{Heads: m.Heads, HeadDim: m.HeadDim, QueryDim: m.QueryDim, MemDim: m.MemDim, OutDim: m.MemDim, PerHead: true}
}

// Keys writes [K_i1 … K_ih ; V_i1 … V_ih] for every position.
func (m *MultiHead[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	n, kw, hd := rows*srcLen, m.KeyWidth(), m.Heads*m.HeadDim
	if len(memory) != n*m.MemDim || len(keys) != n*kw {
		panic(fmt.Sprintf("align: MultiHead.Keys got memory %d, keys %d for %d×%d×%d", len(memory), len(keys), rows, srcLen, m.MemDim))
	}
	block.Project(m.shape(), m.KeyW.Data, nil, memory, n, m.MemDim, keys, kw)
	block.Project(m.shape(), m.ValueW.Data, nil, memory, n, m.MemDim, keys[hd:], kw)
}

// KeysBackward adds the gradients of the key and value projections.
func (m *MultiHead[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	n, kw, hd := rows*srcLen, m.KeyWidth(), m.Heads*m.HeadDim
	for part, w := range []*param.Tensor[T]{m.KeyW, m.ValueW} {
		block.ProjectBackward(m.shape(), w.Data, memory, dKeys[part*hd:], n, m.MemDim, kw, dMemory, grads[1+part])
	}
}

// WorkSize: Q, the heads' contexts c and their gradients dQ, dc (rows, Heads·HeadDim each), the weights of every
// head (rows, Heads, srcLen) and one row of their gradients (srcLen).
func (m *MultiHead[T]) WorkSize(rows, srcLen int) int {
	return 4*rows*m.Heads*m.HeadDim + rows*m.Heads*srcLen + srcLen
}

// attention is the heads of a Step as block's attention over its keys, in the step's work: the query of one
// position per row over srcLen keys and values, KeyWidth apart.
func (m *MultiHead[T]) attention(s Step[T]) (block.Cache[T], block.Scratch[T]) {
	n, hd, work := s.Rows*m.Heads*m.HeadDim, m.Heads*m.HeadDim, s.Work
	kw := m.KeyWidth()
	c := block.Cache[T]{Attention: m.shape(), Rows: s.Rows, Lq: 1, Lk: s.SrcLen, KeyLen: s.Lengths,
		Q: work[:n], Ctx: work[n : 2*n], K: s.Keys, V: s.Keys[hd:], LdK: kw, KeyStride: s.SrcLen * kw,
		Att: work[4*n : 4*n+s.Rows*m.Heads*s.SrcLen]}
	return c, block.Scratch[T]{DQ: work[2*n : 3*n], DCtx: work[3*n : 4*n], DA: work[4*n+s.Rows*m.Heads*s.SrcLen:]}
}

// weights are the Attention's weights (or their gradients, in the order of Params) as block's attention takes
// them.
func (m *MultiHead[T]) weights(w [][]T) block.Weights[T] {
	if w == nil {
		return block.Weights[T]{QW: m.QueryW.Data, KW: m.KeyW.Data, VW: m.ValueW.Data, OW: m.OutW.Data}
	}
	return block.Weights[T]{QW: w[0], KW: w[1], VW: w[2], OW: w[3]}
}

// HeadCount is Heads.
func (m *MultiHead[T]) HeadCount() int { return m.Heads }

// HeadWeights returns each head's weights of the Step that filled work, (rows, Heads, srcLen).
func (m *MultiHead[T]) HeadWeights(work []T, rows, srcLen int) []T {
	at := 4 * rows * m.Heads * m.HeadDim
	return work[at : at+rows*m.Heads*srcLen]
}

// StateWidth is 0: the heads attend from the query alone.
func (m *MultiHead[T]) StateWidth() int { return 0 }

// Step writes the heads' average weights (rows, srcLen) and the context (rows, MemDim); it reads the memory
// through the keys only, and takes no noise. A row without a word gets weights and a context of 0.
func (m *MultiHead[T]) Step(s Step[T]) {
	rows, srcLen, weights := s.Rows, s.SrcLen, s.Weights
	if len(s.Query) != rows*m.QueryDim || len(s.Keys) != rows*srcLen*m.KeyWidth() || len(weights) != rows*srcLen || len(s.Context) != rows*m.MemDim || len(s.Work) != m.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: MultiHead.Step got query %d, keys %d, weights %d, ctx %d, work %d for %d×%d",
			len(s.Query), len(s.Keys), len(weights), len(s.Context), len(s.Work), rows, srcLen))
	}
	c, _ := m.attention(s)
	c.Forward(m.weights(nil), s.Query, nil, s.Context, false)
	clear(weights)
	for r := 0; r < rows; r++ {
		for j := 0; j < m.Heads; j++ {
			for i, a := range c.Att[(r*m.Heads+j)*srcLen:][:srcLen] {
				weights[r*srcLen+i] += a / T(m.Heads)
			}
		}
	}
}

// StepBackward adds the gradients of the context, given g.Context (rows, MemDim), into g.Query, g.Keys and
// g.Params (the memory is reached through the keys only).
func (m *MultiHead[T]) StepBackward(s Step[T], g StepGrad[T]) {
	c, scratch := m.attention(s)
	c.X = s.Query
	scratch.DK, scratch.DV = g.Keys, g.Keys[m.Heads*m.HeadDim:]
	c.Backward(m.weights(nil), m.weights(g.Params), g.Context, g.Query, nil, scratch)
}

// graphMultiHead is multi-head attention bound to one training graph.
type graphMultiHead[T kernels.Float] struct {
	m            *MultiHead[T]
	p            *graph.Params[T]
	rows, srcLen int
}

// Graph binds the heads' weights to p for batches of rows × srcLen.
func (m *MultiHead[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphAttention {
	return &graphMultiHead[T]{m: m, p: p, rows: rows, srcLen: srcLen}
}

// Keys returns the memory: the heads project it in Step.
func (g *graphMultiHead[T]) Keys(memory *G.Node, lengths *[]int) *G.Node { return memory }

// Step returns the heads' average weights (rows, srcLen) and the context (rows, MemDim): block.Graph of one
// query per row.
func (g *graphMultiHead[T]) Step(query, keys, memory, _, _ *G.Node, lengths *[]int) (weights, ctx, next *G.Node) {
	m := g.m
	flat := G.Must(G.Reshape(memory, []int{g.rows * g.srcLen, m.MemDim}))
	ctx, heads := block.Graph(g.p, m.shape(), block.Tensors[T]{QW: m.QueryW, KW: m.KeyW, VW: m.ValueW, OW: m.OutW}, query, flat,
		g.rows, 1, g.srcLen, func(scores *G.Node) *G.Node { return graph.MaskedSoftmax[T](scores, lengths) })
	weights = heads[0]
	for _, a := range heads[1:] {
		weights = G.Must(G.Add(weights, a))
	}
	if m.Heads > 1 {
		weights = G.Must(G.Mul(weights, G.NewConstant(T(1/float64(m.Heads)))))
	}
	return weights, ctx, nil
}
