package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// General is Luong's bilinear score, model.attention "general":
//
//	e_ti = s_{t-1}ᵀ W h_i
//
// The key W h_i (QueryDim wide) is computed once per sentence, so a step costs what the dot score does.
type General[T kernels.Float] struct {
	MemDim, QueryDim int
	W                *param.Tensor[T] // (MemDim, QueryDim): key_i = h_i W
}

var _ Scorer[float32] = (*General[float32])(nil)

// newGeneral is the registry's constructor: NewGeneral's soft attention.
func newGeneral[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	return NewSoft[T](NewGeneral(set, cfg.MemDim, cfg.QueryDim)), nil
}

// NewGeneral registers "attn.w" in set.
func NewGeneral[T kernels.Float](set *param.Set[T], memDim, queryDim int) *General[T] {
	return &General[T]{MemDim: memDim, QueryDim: queryDim, W: set.Add("attn.w", memDim, queryDim)}
}

// Params returns W.
func (g *General[T]) Params() []*param.Tensor[T] { return []*param.Tensor[T]{g.W} }

// Init draws W uniformly in ±1/sqrt(MemDim).
func (g *General[T]) Init(rng *rand.Rand) { param.Uniform(g.W, param.InvSqrt(g.MemDim), rng) }

// KeyWidth is QueryDim.
func (g *General[T]) KeyWidth() int { return g.QueryDim }

// Keys writes h_i W for every position, (rows, srcLen, QueryDim).
func (g *General[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	projectKeys("General", g.W.Data, memory, rows, srcLen, g.MemDim, g.QueryDim, g.QueryDim, keys)
}

// KeysBackward adds dW = memoryᵀ dKeys and dMemory = dKeys Wᵀ.
func (g *General[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	kernels.LinearBackward(memory, g.W.Data, dKeys, rows*srcLen, g.MemDim, g.QueryDim, g.QueryDim, dMemory, grads[0])
}

// WorkSize is 0: the score needs no scratch.
func (g *General[T]) WorkSize(rows, srcLen int) int { return 0 }

// Score writes e (rows, srcLen).
func (g *General[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	if len(query) != rows*g.QueryDim || len(keys) != rows*srcLen*g.QueryDim || len(scores) != rows*srcLen {
		panic(fmt.Sprintf("align: General.Score got query %d, keys %d, scores %d for %d×%d", len(query), len(keys), len(scores), rows, srcLen))
	}
	dotScores(query, keys, rows, srcLen, g.QueryDim, 1, scores)
}

// ScoreBackward differentiates Score.
func (g *General[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	dotScoresBackward(query, keys, dScores, rows, srcLen, g.QueryDim, 1, dQuery, dKeys)
}

// graphGeneral is the bilinear score bound to one training graph.
type graphGeneral[T kernels.Float] struct {
	w                      *G.Node
	rows, srcLen, queryDim int
}

// Graph binds W to p for batches of rows × srcLen.
func (g *General[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	return &graphGeneral[T]{w: p.Whole(g.W), rows: rows, srcLen: srcLen, queryDim: g.QueryDim}
}

// Keys returns h_i W, (rows, srcLen, QueryDim).
func (g *graphGeneral[T]) Keys(memory *G.Node, lengths *[]int) *G.Node {
	return graphProject(memory, g.w, g.rows, g.srcLen, g.queryDim)
}

// Score returns keys s_{t-1} (rows, srcLen).
func (g *graphGeneral[T]) Score(query, keys, _ *G.Node) *G.Node {
	return graphDotScores[T](query, keys, g.rows, g.srcLen, 1)
}
