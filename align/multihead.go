package align

import (
	"fmt"
	"math"
	"math/rand/v2"

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

// Keys writes [K_i1 … K_ih ; V_i1 … V_ih] for every position.
func (m *MultiHead[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	n, kw, dk, hd := rows*srcLen, m.KeyWidth(), m.HeadDim, m.Heads*m.HeadDim
	if len(memory) != n*m.MemDim || len(keys) != n*kw {
		panic(fmt.Sprintf("align: MultiHead.Keys got memory %d, keys %d for %d×%d×%d", len(memory), len(keys), rows, srcLen, m.MemDim))
	}
	for j := 0; j < m.Heads; j++ {
		kernels.Linear(memory, m.KeyW.Block(j), n, m.MemDim, dk, keys[j*dk:], kw)
		kernels.Linear(memory, m.ValueW.Block(j), n, m.MemDim, dk, keys[hd+j*dk:], kw)
	}
}

// KeysBackward adds the gradients of the key and value projections.
func (m *MultiHead[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	n, kw, dk, hd := rows*srcLen, m.KeyWidth(), m.HeadDim, m.Heads*m.HeadDim
	for j := 0; j < m.Heads; j++ {
		for part, w := range []*param.Tensor[T]{m.KeyW, m.ValueW} {
			off, g := part*hd+j*dk, grads[1+part][j*m.MemDim*dk:(j+1)*m.MemDim*dk]
			kernels.LinearBackward(memory, w.Block(j), dKeys[off:], n, m.MemDim, dk, kw, dMemory, g)
		}
	}
}

// WorkSize: Q, the heads' contexts c and their gradients dQ, dc (rows, Heads·HeadDim each) and the weights of
// every head (rows, Heads, srcLen).
func (m *MultiHead[T]) WorkSize(rows, srcLen int) int {
	return 4*rows*m.Heads*m.HeadDim + rows*m.Heads*srcLen
}

type multiHeadWork[T kernels.Float] struct{ q, c, dq, dc, att []T }

func (m *MultiHead[T]) work(work []T, rows int) multiHeadWork[T] {
	n := rows * m.Heads * m.HeadDim
	return multiHeadWork[T]{q: work[:n], c: work[n : 2*n], dq: work[2*n : 3*n], dc: work[3*n : 4*n], att: work[4*n:]}
}

// HeadCount is Heads.
func (m *MultiHead[T]) HeadCount() int { return m.Heads }

// HeadWeights returns each head's weights of the Step that filled work, (rows, Heads, srcLen).
func (m *MultiHead[T]) HeadWeights(work []T, rows, srcLen int) []T {
	return m.work(work, rows).att[:rows*m.Heads*srcLen]
}

// StateWidth is 0: the heads attend from the query alone.
func (m *MultiHead[T]) StateWidth() int { return 0 }

// Step writes the heads' average weights (rows, srcLen) and the context (rows, MemDim); it reads the memory
// through the keys only, and takes no noise.
func (m *MultiHead[T]) Step(s Step[T]) {
	query, keys, lengths, rows, srcLen, weights, ctx, work := s.Query, s.Keys, s.Lengths, s.Rows, s.SrcLen, s.Weights, s.Context, s.Work
	h, dk, kw := m.Heads, m.HeadDim, m.KeyWidth()
	hd := h * dk
	if len(query) != rows*m.QueryDim || len(keys) != rows*srcLen*kw || len(weights) != rows*srcLen || len(ctx) != rows*m.MemDim || len(work) != m.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: MultiHead.Step got query %d, keys %d, weights %d, ctx %d, work %d for %d×%d",
			len(query), len(keys), len(weights), len(ctx), len(work), rows, srcLen))
	}
	w := m.work(work, rows)
	scale := T(1 / math.Sqrt(float64(dk)))
	for j := 0; j < h; j++ {
		kernels.Linear(query, m.QueryW.Block(j), rows, m.QueryDim, dk, w.q[j*dk:], hd)
	}
	clear(weights)
	for r := 0; r < rows; r++ {
		for j := 0; j < h; j++ {
			q, c := w.q[r*hd+j*dk:][:dk], w.c[r*hd+j*dk:][:dk]
			a := w.att[(r*h+j)*srcLen:][:srcLen]
			for i := range a {
				k := keys[(r*srcLen+i)*kw+j*dk:][:dk]
				var e T
				for x, kx := range k {
					e += q[x] * kx
				}
				a[i] = scale * e
			}
			kernels.SoftmaxRow(a, lengths[r])
			clear(c)
			for i, ai := range a {
				v := keys[(r*srcLen+i)*kw+hd+j*dk:][:dk]
				for x, vx := range v {
					c[x] += ai * vx
				}
				weights[r*srcLen+i] += ai / T(h)
			}
		}
	}
	// context = Σ_j c_j W_O,j
	for j := 0; j < h; j++ {
		beta := T(1)
		if j == 0 {
			beta = 0
		}
		kernels.Gemm(false, false, rows, m.MemDim, dk, 1, w.c[j*dk:], hd, m.OutW.Block(j), m.MemDim, beta, ctx, m.MemDim)
	}
}

// StepBackward adds the gradients of the context, given g.Context (rows, MemDim), into g.Query, g.Keys and
// g.Params (the memory is reached through the keys only).
func (m *MultiHead[T]) StepBackward(s Step[T], g StepGrad[T]) {
	query, keys, lengths, rows, srcLen, work := s.Query, s.Keys, s.Lengths, s.Rows, s.SrcLen, s.Work
	dCtx, dQuery, dKeys, grads := g.Context, g.Query, g.Keys, g.Params
	h, dk, kw := m.Heads, m.HeadDim, m.KeyWidth()
	hd := h * dk
	w := m.work(work, rows)
	scale := T(1 / math.Sqrt(float64(dk)))
	// forward: context = Σ_j c_j W_O,j
	for j := 0; j < h; j++ {
		kernels.Gemm(false, true, rows, dk, m.MemDim, 1, dCtx, m.MemDim, m.OutW.Block(j), m.MemDim, 0, w.dc[j*dk:], hd)
		kernels.Gemm(true, false, dk, m.MemDim, rows, 1, w.c[j*dk:], hd, dCtx, m.MemDim, 1, grads[3][j*dk*m.MemDim:(j+1)*dk*m.MemDim], m.MemDim)
	}
	clear(w.dq)
	for r := 0; r < rows; r++ {
		for j := 0; j < h; j++ {
			q, dq, dc := w.q[r*hd+j*dk:][:dk], w.dq[r*hd+j*dk:][:dk], w.dc[r*hd+j*dk:][:dk]
			a := w.att[(r*h+j)*srcLen:][:srcLen]
			// forward: c = Σ_i a_i V_i, so da_i = dcᵀ V_i and dV_i += a_i dc
			var dot T
			for i, ai := range a {
				v, dv := keys[(r*srcLen+i)*kw+hd+j*dk:][:dk], dKeys[(r*srcLen+i)*kw+hd+j*dk:][:dk]
				var da T
				for x, g := range dc {
					da += g * v[x]
					dv[x] += ai * g
				}
				dot += ai * da
			}
			if lengths[r] <= 0 { // uniform weights, whatever the scores
				continue
			}
			// forward: a = softmax(e), e_i = scale · qᵀ K_i, so de_i = a_i (da_i − Σ a da)
			for i, ai := range a {
				if ai == 0 {
					continue
				}
				v := keys[(r*srcLen+i)*kw+hd+j*dk:][:dk]
				var da T // (recomputed rather than kept: no scratch per position)
				for x, g := range dc {
					da += g * v[x]
				}
				de := scale * ai * (da - dot)
				k, dkey := keys[(r*srcLen+i)*kw+j*dk:][:dk], dKeys[(r*srcLen+i)*kw+j*dk:][:dk]
				for x := range k {
					dq[x] += de * k[x]
					dkey[x] += de * q[x]
				}
			}
		}
	}
	// forward: Q_j = query W_Q,j
	for j := 0; j < h; j++ {
		kernels.LinearBackward(query, m.QueryW.Block(j), w.dq[j*dk:], rows, m.QueryDim, dk, hd, dQuery, grads[0][j*m.QueryDim*dk:(j+1)*m.QueryDim*dk])
	}
}

// graphMultiHead is multi-head attention bound to one training graph.
type graphMultiHead[T kernels.Float] struct {
	m                          *MultiHead[T]
	queryW, keyW, valueW, outW []*G.Node // per head
	rows, srcLen               int
}

// Graph binds every head's weights to p for batches of rows × srcLen.
func (m *MultiHead[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphAttention {
	g := &graphMultiHead[T]{m: m, rows: rows, srcLen: srcLen}
	dk := m.HeadDim
	for j := 0; j < m.Heads; j++ {
		g.queryW = append(g.queryW, p.View(m.QueryW, j*m.QueryDim*dk, m.QueryDim, dk))
		g.keyW = append(g.keyW, p.View(m.KeyW, j*m.MemDim*dk, m.MemDim, dk))
		g.valueW = append(g.valueW, p.View(m.ValueW, j*m.MemDim*dk, m.MemDim, dk))
		g.outW = append(g.outW, p.View(m.OutW, j*dk*m.MemDim, dk, m.MemDim))
	}
	return g
}

// Keys returns the memory: the heads project it in Attend.
func (g *graphMultiHead[T]) Keys(memory *G.Node, lengths *[]int) *G.Node { return memory }

// Step returns the heads' average weights (rows, srcLen) and the context (rows, MemDim).
func (g *graphMultiHead[T]) Step(query, keys, memory, _, _ *G.Node, lengths *[]int) (weights, ctx, next *G.Node) {
	m, rows, srcLen, dk := g.m, g.rows, g.srcLen, g.m.HeadDim
	flat := G.Must(G.Reshape(memory, []int{rows * srcLen, m.MemDim}))
	project := func(w *G.Node) *G.Node {
		return G.Must(G.Reshape(G.Must(G.Mul(flat, w)), []int{rows, srcLen, dk}))
	}
	for j := 0; j < m.Heads; j++ {
		q := G.Must(G.Mul(query, g.queryW[j]))
		a := graph.MaskedSoftmax[T](graphDotScores(q, project(g.keyW[j]), rows, srcLen, T(1/math.Sqrt(float64(dk)))), lengths)
		c := G.Must(G.Reshape(G.Must(G.BatchedMatMul(G.Must(G.Reshape(a, []int{rows, 1, srcLen})), project(g.valueW[j]))), []int{rows, dk}))
		term := G.Must(G.Mul(c, g.outW[j]))
		if j == 0 {
			weights, ctx = a, term
		} else {
			weights, ctx = G.Must(G.Add(weights, a)), G.Must(G.Add(ctx, term))
		}
	}
	if m.Heads > 1 {
		weights = G.Must(G.Mul(weights, G.NewConstant(T(1/float64(m.Heads)))))
	}
	return weights, ctx, nil
}
