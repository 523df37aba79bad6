package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Additive is the additive (Bahdanau) score, model.attention "additive" (or its alias "mlp")
//
//	e_ti = vᵀ tanh(W_s s_{t-1} + b_s + W_h h_i)
//
// where s_{t-1} is the decoder state (the query) and h_i the encoder state at source position i. W_h h_i is the
// key, computed once per sentence.
type Additive[T kernels.Float] struct {
	MemDim, QueryDim, Dim int
	MemW                  *param.Tensor[T] // W_h (MemDim, Dim), no bias
	QueryW                *param.Tensor[T] // W_s (QueryDim, Dim)
	QueryB                *param.Tensor[T] // b_s (Dim)
	V                     *param.Tensor[T] // v (Dim)
}

var _ Scorer[float32] = (*Additive[float32])(nil)

// newAdditive is the registry's constructor: NewAdditive's soft attention, which needs Dim ≥ 1.
func newAdditive[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	if cfg.Dim < 1 {
		return nil, fmt.Errorf("align: the additive score needs a hidden width (attn_dim) of at least 1, got %d", cfg.Dim)
	}
	return NewSoft[T](NewAdditive(set, cfg.MemDim, cfg.QueryDim, cfg.Dim)), nil
}

// NewAdditive registers the score's parameters in set as "attn.w_h", "attn.w_s", "attn.b_s" and "attn.v".
func NewAdditive[T kernels.Float](set *param.Set[T], memDim, queryDim, dim int) *Additive[T] {
	return &Additive[T]{MemDim: memDim, QueryDim: queryDim, Dim: dim,
		MemW:   set.Add("attn.w_h", memDim, dim),
		QueryW: set.Add("attn.w_s", queryDim, dim),
		QueryB: set.Add("attn.b_s", dim),
		V:      set.Add("attn.v", dim),
	}
}

// Params returns W_h, W_s, b_s and v.
func (m *Additive[T]) Params() []*param.Tensor[T] {
	return []*param.Tensor[T]{m.MemW, m.QueryW, m.QueryB, m.V}
}

// Init draws every weight uniformly in ±1/sqrt(fan-in), as PyTorch's nn.Linear does.
func (m *Additive[T]) Init(rng *rand.Rand) {
	param.Uniform(m.MemW, param.InvSqrt(m.MemDim), rng)
	param.Uniform(m.QueryW, param.InvSqrt(m.QueryDim), rng)
	param.Uniform(m.QueryB, param.InvSqrt(m.QueryDim), rng)
	param.Uniform(m.V, param.InvSqrt(m.Dim), rng)
}

// KeyWidth is Dim: a key is W_h h_i.
func (m *Additive[T]) KeyWidth() int { return m.Dim }

// Keys writes W_h h_i for every position: (rows, srcLen, Dim).
func (m *Additive[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	projectKeys("Additive", m.MemW.Data, memory, rows, srcLen, m.MemDim, m.Dim, m.Dim, keys)
}

// KeysBackward adds dW_h = memoryᵀ dKeys and dMemory = dKeys W_hᵀ.
func (m *Additive[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	// forward: keys = memory W_h
	kernels.LinearBackward(memory, m.MemW.Data, dKeys, rows*srcLen, m.MemDim, m.Dim, m.Dim, dMemory, grads[0])
}

// WorkSize is q (rows, Dim), room for its gradient dq (rows, Dim), and one row of the hidden layer
// tanh(q + k_i) (Dim). The hidden layer is not kept: ScoreBackward recomputes it, which costs a tanh per value
// and spares the fused decoder a (steps, rows, srcLen, Dim) buffer, the largest of a training step.
func (m *Additive[T]) WorkSize(rows, srcLen int) int { return 2*rows*m.Dim + m.Dim }

// Score writes e (rows, srcLen) for the queries (rows, QueryDim).
func (m *Additive[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	d := m.Dim
	if len(query) != rows*m.QueryDim || len(keys) != rows*srcLen*d || len(scores) != rows*srcLen || len(work) != m.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: Additive.Score got query %d, keys %d, scores %d, work %d for %d×%d", len(query), len(keys), len(scores), len(work), rows, srcLen))
	}
	q, p := work[:rows*d], work[2*rows*d:]
	kernels.Linear(query, m.QueryW.Data, rows, m.QueryDim, d, q, d)
	kernels.AddBias(q, rows, d, m.QueryB.Data)
	for r := 0; r < rows; r++ {
		qr := q[r*d : (r+1)*d]
		for i := 0; i < srcLen; i++ {
			m.hidden(keys[(r*srcLen+i)*d:][:d], qr, p)
			var e T
			for a, v := range m.V.Data {
				e += v * p[a]
			}
			scores[r*srcLen+i] = e
		}
	}
}

// hidden writes p = tanh(k + q), one position's hidden layer.
func (m *Additive[T]) hidden(k, q, p []T) {
	for a := range p {
		p[a] = k[a] + q[a]
	}
	kernels.TanhSlice(p)
}

// ScoreBackward differentiates Score, recomputing the hidden layer from the q that Score left in work.
func (m *Additive[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	d := m.Dim
	q, dq, p := work[:rows*d], work[rows*d:2*rows*d], work[2*rows*d:]
	clear(dq)
	gQueryW, gQueryB, gV := grads[1], grads[2], grads[3]
	for r := 0; r < rows; r++ {
		dqr := dq[r*d : (r+1)*d]
		for i := 0; i < srcLen; i++ {
			de := dScores[r*srcLen+i]
			if de == 0 { // masked positions
				continue
			}
			// forward: p = tanh(k + q); e = v·p
			m.hidden(keys[(r*srcLen+i)*d:][:d], q[r*d:(r+1)*d], p)
			dk := dKeys[(r*srcLen+i)*d:][:d]
			kernels.Axpy(de, p, gV)
			for a, pa := range p {
				dz := de * m.V.Data[a] * (1 - pa*pa)
				dk[a] += dz
				dqr[a] += dz
			}
		}
	}
	// forward: q = query W_s + b_s
	kernels.LinearBackward(query, m.QueryW.Data, dq, rows, m.QueryDim, d, d, dQuery, gQueryW)
	for r := 0; r < rows; r++ {
		for a, g := range dq[r*d : (r+1)*d] {
			gQueryB[a] += g
		}
	}
}

// graphAdditive is the additive score bound to one training graph.
type graphAdditive[T kernels.Float] struct {
	memW, queryW, queryB, v *G.Node
	rows, srcLen, dim       int
}

// Graph binds the score's parameters to p for batches of rows × srcLen.
func (m *Additive[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	return &graphAdditive[T]{memW: p.Whole(m.MemW), queryW: p.Whole(m.QueryW), queryB: p.Whole(m.QueryB), v: p.Whole(m.V),
		rows: rows, srcLen: srcLen, dim: m.Dim}
}

// Keys returns W_h h_i for every position, (rows, srcLen, Dim).
func (m *graphAdditive[T]) Keys(memory *G.Node, lengths *[]int) *G.Node {
	return graphProject(memory, m.memW, m.rows, m.srcLen, m.dim)
}

// Score returns e (rows, srcLen) for the query s_{t-1} (rows, QueryDim): vᵀ tanh(W_s s + b_s + keys).
func (m *graphAdditive[T]) Score(query, keys, _ *G.Node) *G.Node {
	q := graph.AddBias[T](G.Must(G.Mul(query, m.queryW)), m.queryB)
	pre := G.Must(G.Tanh(graph.AddQuery[T](keys, q)))
	e := G.Must(G.Mul(G.Must(G.Reshape(pre, []int{m.rows * m.srcLen, m.dim})), m.v))
	return G.Must(G.Reshape(e, []int{m.rows, m.srcLen}))
}
