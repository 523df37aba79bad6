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

// Dot is the dot-product score, model.attention "dot" (Luong's dot), or with scaling "scaled-dot":
//
//	e_ti = qᵀ h_i        (dot)
//	e_ti = qᵀ h_i / √d   (scaled-dot, d = MemDim)
//
// where q = s_{t-1} when the decoder state is as wide as an encoder state, and q = W_q s_{t-1} otherwise. The
// keys are the encoder states themselves.
type Dot[T kernels.Float] struct {
	MemDim, QueryDim int
	Scaled           bool
	QueryW           *param.Tensor[T] // W_q (QueryDim, MemDim), nil when QueryDim == MemDim
}

var _ Scorer[float32] = (*Dot[float32])(nil)

// newDot is the registry's constructor of "dot" (scaled false) and "scaled-dot": NewDot's soft attention.
func newDot[T kernels.Float](scaled bool) func(*param.Set[T], Config) (Attention[T], error) {
	return func(set *param.Set[T], cfg Config) (Attention[T], error) {
		return NewSoft[T](NewDot(set, cfg.MemDim, cfg.QueryDim, scaled)), nil
	}
}

// NewDot registers "attn.w_q" in set when the widths differ.
func NewDot[T kernels.Float](set *param.Set[T], memDim, queryDim int, scaled bool) *Dot[T] {
	d := &Dot[T]{MemDim: memDim, QueryDim: queryDim, Scaled: scaled}
	if memDim != queryDim {
		d.QueryW = set.Add("attn.w_q", queryDim, memDim)
	}
	return d
}

func (d *Dot[T]) scale() T {
	if d.Scaled {
		return T(1 / math.Sqrt(float64(d.MemDim)))
	}
	return 1
}

// Params returns W_q, or nothing when the query is not projected.
func (d *Dot[T]) Params() []*param.Tensor[T] {
	if d.QueryW == nil {
		return nil
	}
	return []*param.Tensor[T]{d.QueryW}
}

// Init draws W_q uniformly in ±1/sqrt(QueryDim).
func (d *Dot[T]) Init(rng *rand.Rand) {
	if d.QueryW != nil {
		param.Uniform(d.QueryW, param.InvSqrt(d.QueryDim), rng)
	}
}

// KeyWidth is MemDim: the keys are the memory.
func (d *Dot[T]) KeyWidth() int { return d.MemDim }

// Keys copies the memory.
func (d *Dot[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	if len(memory) != rows*srcLen*d.MemDim || len(keys) != len(memory) {
		panic(fmt.Sprintf("align: Dot.Keys got memory %d, keys %d for %d×%d×%d", len(memory), len(keys), rows, srcLen, d.MemDim))
	}
	copy(keys, memory)
}

// KeysBackward adds dKeys into dMemory.
func (d *Dot[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	for i, g := range dKeys {
		dMemory[i] += g
	}
}

// WorkSize is the projected query and its gradient, (rows, MemDim) each, when the query is projected.
func (d *Dot[T]) WorkSize(rows, srcLen int) int {
	if d.QueryW == nil {
		return 0
	}
	return 2 * rows * d.MemDim
}

// Score writes e (rows, srcLen).
func (d *Dot[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	if len(query) != rows*d.QueryDim || len(keys) != rows*srcLen*d.MemDim || len(scores) != rows*srcLen || len(work) != d.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: Dot.Score got query %d, keys %d, scores %d, work %d for %d×%d", len(query), len(keys), len(scores), len(work), rows, srcLen))
	}
	q := query
	if d.QueryW != nil {
		q = work[:rows*d.MemDim]
		kernels.Linear(query, d.QueryW.Data, rows, d.QueryDim, d.MemDim, q, d.MemDim)
	}
	dotScores(q, keys, rows, srcLen, d.MemDim, d.scale(), scores)
}

// ScoreBackward differentiates Score.
func (d *Dot[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	if d.QueryW == nil {
		dotScoresBackward(query, keys, dScores, rows, srcLen, d.MemDim, d.scale(), dQuery, dKeys)
		return
	}
	q, dq := work[:rows*d.MemDim], work[rows*d.MemDim:]
	clear(dq)
	dotScoresBackward(q, keys, dScores, rows, srcLen, d.MemDim, d.scale(), dq, dKeys)
	// forward: q = query W_q
	kernels.LinearBackward(query, d.QueryW.Data, dq, rows, d.QueryDim, d.MemDim, d.MemDim, dQuery, grads[0])
}

// projectKeys writes memory W for every position: (rows, srcLen, out) at a stride of kw values in keys, the
// keys of the scores whose key is a projection of the memory (in values a position). name names the score in
// the panic of a wrong shape.
func projectKeys[T kernels.Float](name string, w, memory []T, rows, srcLen, in, out, kw int, keys []T) {
	if len(memory) != rows*srcLen*in || len(keys) != rows*srcLen*kw {
		panic(fmt.Sprintf("align: %s.Keys got memory %d, keys %d for %d×%d×(%d→%d)", name, len(memory), len(keys), rows, srcLen, in, out))
	}
	kernels.Linear(memory, w, rows*srcLen, in, out, keys, kw)
}

// graphProject is projectKeys in a training graph: memory (rows, srcLen, in) times w (in, out…), reshaped to
// shape, (rows, srcLen, out) or (rows, srcLen) for a w of one column.
func graphProject(memory, w *G.Node, shape ...int) *G.Node {
	s := memory.Shape()
	flat := G.Must(G.Reshape(memory, []int{s[0] * s[1], s[2]}))
	return G.Must(G.Reshape(G.Must(G.Mul(flat, w)), shape))
}

// dotScores writes scores[r,i] = scale · q[r]·keys[r,i] for q (rows, width) and keys (rows, srcLen, width).
func dotScores[T kernels.Float](q, keys []T, rows, srcLen, width int, scale T, scores []T) {
	for r := 0; r < rows; r++ {
		qr := q[r*width : (r+1)*width]
		for i := 0; i < srcLen; i++ {
			k := keys[(r*srcLen+i)*width:][:width]
			var e T
			for j, kj := range k {
				e += qr[j] * kj
			}
			scores[r*srcLen+i] = scale * e
		}
	}
}

// dotScoresBackward is the backward pass of dotScores: dq[r] += scale Σ_i dScores[r,i] keys[r,i] and
// dKeys[r,i] += scale dScores[r,i] q[r].
func dotScoresBackward[T kernels.Float](q, keys, dScores []T, rows, srcLen, width int, scale T, dq, dKeys []T) {
	for r := 0; r < rows; r++ {
		qr, dqr := q[r*width:(r+1)*width], dq[r*width:(r+1)*width]
		for i := 0; i < srcLen; i++ {
			de := scale * dScores[r*srcLen+i]
			if de == 0 {
				continue
			}
			k, dk := keys[(r*srcLen+i)*width:][:width], dKeys[(r*srcLen+i)*width:][:width]
			for j := range k {
				dqr[j] += de * k[j]
				dk[j] += de * qr[j]
			}
		}
	}
}

// graphDot is the dot score bound to one training graph.
type graphDot[T kernels.Float] struct {
	queryW       *G.Node // nil without projection
	scale        T
	rows, srcLen int
}

// Graph binds the score to p for batches of rows × srcLen.
func (d *Dot[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	g := &graphDot[T]{scale: d.scale(), rows: rows, srcLen: srcLen}
	if d.QueryW != nil {
		g.queryW = p.Whole(d.QueryW)
	}
	return g
}

// Keys returns the memory.
func (g *graphDot[T]) Keys(memory *G.Node, lengths *[]int) *G.Node { return memory }

// Score returns scale · keys q (rows, srcLen).
func (g *graphDot[T]) Score(query, keys, _ *G.Node) *G.Node {
	q := query
	if g.queryW != nil {
		q = G.Must(G.Mul(query, g.queryW))
	}
	return graphDotScores(q, keys, g.rows, g.srcLen, g.scale)
}

// graphDotScores is dotScores in gorgonia ops: q (rows, width) against keys (rows, srcLen, width).
func graphDotScores[T kernels.Float](q, keys *G.Node, rows, srcLen int, scale T) *G.Node {
	width := keys.Shape()[2]
	e := G.Must(G.BatchedMatMul(keys, G.Must(G.Reshape(q, []int{rows, width, 1}))))
	e = G.Must(G.Reshape(e, []int{rows, srcLen}))
	if scale != 1 {
		e = G.Must(G.Mul(e, G.NewConstant(scale)))
	}
	return e
}
