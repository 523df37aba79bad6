package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Concat is the plain concatenation score, model.attention "concat":
//
//	e_ti = wᵀ [s_{t-1} ; h_i] = w_qᵀ s_{t-1} + w_kᵀ h_i
//
// Being linear, it adds the same query term to every position of a row, which the softmax cancels: the weights
// depend on the source alone (the same at every decoder step), and w_q never receives a gradient. It is the
// baseline that shows what the other scores gain by letting the query interact with the keys. The key of a
// position is w_kᵀ h_i, one number.
type Concat[T kernels.Float] struct {
	MemDim, QueryDim int
	QueryW           *param.Tensor[T] // w_q (QueryDim)
	MemW             *param.Tensor[T] // w_k (MemDim)
}

var _ Scorer[float32] = (*Concat[float32])(nil)

// newConcat is the registry's constructor: NewConcat's soft attention.
func newConcat[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	return NewSoft[T](NewConcat(set, cfg.MemDim, cfg.QueryDim)), nil
}

// NewConcat registers "attn.w_q" and "attn.w_k" in set.
func NewConcat[T kernels.Float](set *param.Set[T], memDim, queryDim int) *Concat[T] {
	return &Concat[T]{MemDim: memDim, QueryDim: queryDim,
		QueryW: set.Add("attn.w_q", queryDim), MemW: set.Add("attn.w_k", memDim)}
}

// Params returns w_q and w_k.
func (c *Concat[T]) Params() []*param.Tensor[T] { return []*param.Tensor[T]{c.QueryW, c.MemW} }

// Init draws w uniformly in ±1/sqrt(QueryDim + MemDim), as nn.Linear does for the concatenated input.
func (c *Concat[T]) Init(rng *rand.Rand) {
	bound := param.InvSqrt(c.QueryDim + c.MemDim)
	param.Uniform(c.QueryW, bound, rng)
	param.Uniform(c.MemW, bound, rng)
}

// KeyWidth is 1: the key is w_kᵀ h_i.
func (c *Concat[T]) KeyWidth() int { return 1 }

// Keys writes w_kᵀ h_i for every position, (rows, srcLen).
func (c *Concat[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	if len(memory) != rows*srcLen*c.MemDim || len(keys) != rows*srcLen {
		panic(fmt.Sprintf("align: Concat.Keys got memory %d, keys %d for %d×%d×%d", len(memory), len(keys), rows, srcLen, c.MemDim))
	}
	kernels.Gemm(false, false, rows*srcLen, 1, c.MemDim, 1, memory, c.MemDim, c.MemW.Data, 1, 0, keys, 1)
}

// KeysBackward adds dw_k = Σ_i dKeys_i h_i and dh_i = dKeys_i w_k.
func (c *Concat[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	gMemW := grads[1]
	for p, g := range dKeys[:rows*srcLen] {
		if g == 0 {
			continue
		}
		h, dh := memory[p*c.MemDim:(p+1)*c.MemDim], dMemory[p*c.MemDim:(p+1)*c.MemDim]
		for j, w := range c.MemW.Data {
			gMemW[j] += g * h[j]
			dh[j] += g * w
		}
	}
}

// WorkSize is 0: the score needs no scratch.
func (c *Concat[T]) WorkSize(rows, srcLen int) int { return 0 }

// Score writes e (rows, srcLen).
func (c *Concat[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	if len(query) != rows*c.QueryDim || len(keys) != rows*srcLen || len(scores) != rows*srcLen {
		panic(fmt.Sprintf("align: Concat.Score got query %d, keys %d, scores %d for %d×%d", len(query), len(keys), len(scores), rows, srcLen))
	}
	for r := 0; r < rows; r++ {
		var qTerm T
		for j, w := range c.QueryW.Data {
			qTerm += w * query[r*c.QueryDim+j]
		}
		for i := 0; i < srcLen; i++ {
			scores[r*srcLen+i] = qTerm + keys[r*srcLen+i]
		}
	}
}

// ScoreBackward differentiates Score.
func (c *Concat[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	gQueryW := grads[0]
	for r := 0; r < rows; r++ {
		// forward: e_i = qTerm + key_i, qTerm = w_qᵀ q
		var sum T
		for i := 0; i < srcLen; i++ {
			sum += dScores[r*srcLen+i]
			dKeys[r*srcLen+i] += dScores[r*srcLen+i]
		}
		if sum == 0 {
			continue
		}
		q, dq := query[r*c.QueryDim:(r+1)*c.QueryDim], dQuery[r*c.QueryDim:(r+1)*c.QueryDim]
		for j, w := range c.QueryW.Data {
			gQueryW[j] += sum * q[j]
			dq[j] += sum * w
		}
	}
}

// graphConcat is the concatenation score bound to one training graph.
type graphConcat[T kernels.Float] struct {
	queryW, memW *G.Node
	rows, srcLen int
}

// Graph binds w_q and w_k to p for batches of rows × srcLen.
func (c *Concat[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	return &graphConcat[T]{queryW: p.Whole(c.QueryW), memW: p.Whole(c.MemW), rows: rows, srcLen: srcLen}
}

// Keys returns w_kᵀ h_i, (rows, srcLen).
func (g *graphConcat[T]) Keys(memory *G.Node, lengths *[]int) *G.Node {
	return graphProject(memory, g.memW, g.rows, g.srcLen)
}

// Score returns w_qᵀ s_{t-1} + keys (rows, srcLen).
func (g *graphConcat[T]) Score(query, keys, _ *G.Node) *G.Node {
	qTerm := G.Must(G.Reshape(G.Must(G.Mul(query, g.queryW)), []int{g.rows, 1}))
	return G.Must(G.BroadcastAdd(keys, qTerm, nil, []byte{1}))
}
