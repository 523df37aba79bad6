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

// Cosine is the cosine-similarity score with a learned temperature, model.attention "cosine":
//
//	e_ti = τ · qᵀ h_i / (‖q‖ ‖h_i‖)
//
// where q = s_{t-1}, projected as W_q s_{t-1} when the widths differ (as for Dot), and ‖x‖ = sqrt(xᵀx + ε).
// Cosines lie in [−1, 1], too flat a range for a softmax over a sentence to pick one word; τ, learned and
// started at cosineTau, lets the model sharpen them. The key of a position is h_i/‖h_i‖ followed by ‖h_i‖.
type Cosine[T kernels.Float] struct {
	MemDim, QueryDim int
	QueryW           *param.Tensor[T] // W_q (QueryDim, MemDim), nil when QueryDim == MemDim
	Tau              *param.Tensor[T] // τ (1)
}

var _ Scorer[float32] = (*Cosine[float32])(nil)

const (
	cosineTau = 10    // τ at initialisation: softmax over cosines × 10 spans e^20 between best and worst word
	cosineEps = 1e-12 // ε in ‖x‖ = sqrt(xᵀx + ε): keeps the norm of a zero vector away from 0
)

// newCosine is the registry's constructor: NewCosine's soft attention.
func newCosine[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	return NewSoft[T](NewCosine(set, cfg.MemDim, cfg.QueryDim)), nil
}

// NewCosine registers "attn.tau", and "attn.w_q" when the widths differ, in set.
func NewCosine[T kernels.Float](set *param.Set[T], memDim, queryDim int) *Cosine[T] {
	c := &Cosine[T]{MemDim: memDim, QueryDim: queryDim}
	if memDim != queryDim {
		c.QueryW = set.Add("attn.w_q", queryDim, memDim)
	}
	c.Tau = set.Add("attn.tau", 1)
	return c
}

// Params returns W_q (when the query is projected) and τ.
func (c *Cosine[T]) Params() []*param.Tensor[T] {
	if c.QueryW == nil {
		return []*param.Tensor[T]{c.Tau}
	}
	return []*param.Tensor[T]{c.QueryW, c.Tau}
}

// Init draws W_q uniformly in ±1/sqrt(QueryDim) and sets τ to cosineTau.
func (c *Cosine[T]) Init(rng *rand.Rand) {
	if c.QueryW != nil {
		param.Uniform(c.QueryW, param.InvSqrt(c.QueryDim), rng)
	}
	c.Tau.Data[0] = cosineTau
}

// KeyWidth is MemDim + 1: the unit vector, then the norm.
func (c *Cosine[T]) KeyWidth() int { return c.MemDim + 1 }

// norm returns ‖x‖ = sqrt(xᵀx + ε).
func norm[T kernels.Float](x []T) T {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	return T(math.Sqrt(ss + cosineEps))
}

// normalize writes x/‖x‖ into unit and returns ‖x‖.
func normalize[T kernels.Float](x, unit []T) T {
	n := norm(x)
	for j, v := range x {
		unit[j] = v / n
	}
	return n
}

// unnormalizeGrad adds into dx the gradient through unit = x/‖x‖, given ‖x‖ (n): (dUnit − unit (unitᵀ dUnit)) / n,
// each unit value taken afresh as x/n.
func unnormalizeGrad[T kernels.Float](x, dUnit []T, n T, dx []T) {
	var dot T
	for j, v := range x {
		dot += v / n * dUnit[j]
	}
	for j, v := range x {
		dx[j] += (dUnit[j] - v/n*dot) / n
	}
}

// Keys writes [h_i/‖h_i‖ ; ‖h_i‖] for every position.
func (c *Cosine[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	m, kw := c.MemDim, c.KeyWidth()
	if len(memory) != rows*srcLen*m || len(keys) != rows*srcLen*kw {
		panic(fmt.Sprintf("align: Cosine.Keys got memory %d, keys %d for %d×%d×%d", len(memory), len(keys), rows, srcLen, m))
	}
	for p := 0; p < rows*srcLen; p++ {
		keys[p*kw+m] = normalize(memory[p*m:(p+1)*m], keys[p*kw:p*kw+m])
	}
}

// KeysBackward adds the gradient of the unit vectors into dMemory (the norms get none: Score does not read
// them), recomputing each norm from the memory.
func (c *Cosine[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	m, kw := c.MemDim, c.KeyWidth()
	for p := 0; p < rows*srcLen; p++ {
		x := memory[p*m : (p+1)*m]
		unnormalizeGrad(x, dKeys[p*kw:p*kw+m], norm(x), dMemory[p*m:(p+1)*m])
	}
}

// WorkSize: the projected query and its gradient (rows, MemDim each, only when projected), the unit query and its
// gradient (rows, MemDim each), the query norms (rows) and the cosines (rows, srcLen).
func (c *Cosine[T]) WorkSize(rows, srcLen int) int {
	n := 2*rows*c.MemDim + rows + rows*srcLen
	if c.QueryW != nil {
		n += 2 * rows * c.MemDim
	}
	return n
}

// cosineWork is Score's work, cut into its parts.
type cosineWork[T kernels.Float] struct{ q, dq, unit, dUnit, norm, cos []T }

func (c *Cosine[T]) work(work []T, rows, srcLen int) cosineWork[T] {
	rm := rows * c.MemDim
	var w cosineWork[T]
	if c.QueryW != nil {
		w.q, w.dq, work = work[:rm], work[rm:2*rm], work[2*rm:]
	}
	w.unit, w.dUnit, w.norm, w.cos = work[:rm], work[rm:2*rm], work[2*rm:2*rm+rows], work[2*rm+rows:]
	return w
}

// Score writes e (rows, srcLen).
func (c *Cosine[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	m, kw := c.MemDim, c.KeyWidth()
	if len(query) != rows*c.QueryDim || len(keys) != rows*srcLen*kw || len(scores) != rows*srcLen || len(work) != c.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: Cosine.Score got query %d, keys %d, scores %d, work %d for %d×%d", len(query), len(keys), len(scores), len(work), rows, srcLen))
	}
	w := c.work(work, rows, srcLen)
	q := query
	if c.QueryW != nil {
		q = w.q
		kernels.Linear(query, c.QueryW.Data, rows, c.QueryDim, m, q, m)
	}
	tau := c.Tau.Data[0]
	for r := 0; r < rows; r++ {
		unit := w.unit[r*m : (r+1)*m]
		w.norm[r] = normalize(q[r*m:(r+1)*m], unit)
		for i := 0; i < srcLen; i++ {
			k := keys[(r*srcLen+i)*kw:][:m]
			var cos T
			for j, u := range unit {
				cos += u * k[j]
			}
			w.cos[r*srcLen+i] = cos
			scores[r*srcLen+i] = tau * cos
		}
	}
}

// ScoreBackward differentiates Score.
func (c *Cosine[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	m, kw := c.MemDim, c.KeyWidth()
	w := c.work(work, rows, srcLen)
	dTau := grads[len(grads)-1]
	tau := c.Tau.Data[0]
	clear(w.dUnit)
	q, dq := query, dQuery
	if c.QueryW != nil {
		q, dq = w.q, w.dq
		clear(dq)
	}
	for r := 0; r < rows; r++ {
		unit, dUnit := w.unit[r*m:(r+1)*m], w.dUnit[r*m:(r+1)*m]
		for i := 0; i < srcLen; i++ {
			de := dScores[r*srcLen+i]
			if de == 0 {
				continue
			}
			// forward: e = τ cos, cos = unitᵀ k
			dTau[0] += de * w.cos[r*srcLen+i]
			k, dk := keys[(r*srcLen+i)*kw:][:m], dKeys[(r*srcLen+i)*kw:][:m]
			for j := range k {
				dUnit[j] += tau * de * k[j]
				dk[j] += tau * de * unit[j]
			}
		}
		unnormalizeGrad(q[r*m:(r+1)*m], dUnit, w.norm[r], dq[r*m:(r+1)*m])
	}
	if c.QueryW != nil {
		// forward: q = query W_q
		kernels.LinearBackward(query, c.QueryW.Data, dq, rows, c.QueryDim, m, m, dQuery, grads[0])
	}
}

// graphCosine is the cosine score bound to one training graph.
type graphCosine[T kernels.Float] struct {
	queryW, tau  *G.Node
	rows, srcLen int
	memDim       int
}

// Graph binds the score to p for batches of rows × srcLen.
func (c *Cosine[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	g := &graphCosine[T]{tau: p.Whole(c.Tau), rows: rows, srcLen: srcLen, memDim: c.MemDim}
	if c.QueryW != nil {
		g.queryW = p.Whole(c.QueryW)
	}
	return g
}

// graphUnit divides x (…, d) by sqrt(Σ_d x² + ε) along its last axis; shape is x's shape with the last axis 1.
func graphUnit[T kernels.Float](x *G.Node, shape []int) *G.Node {
	last := x.Dims() - 1
	norm := G.Must(G.Sqrt(G.Must(G.Add(G.Must(G.Sum(G.Must(G.Square(x)), last)), G.NewConstant(T(cosineEps))))))
	return G.Must(G.BroadcastHadamardDiv(x, G.Must(G.Reshape(norm, shape)), nil, []byte{byte(last)}))
}

// Keys returns the unit vectors h_i/‖h_i‖, (rows, srcLen, MemDim).
func (g *graphCosine[T]) Keys(memory *G.Node, lengths *[]int) *G.Node {
	return graphUnit[T](memory, []int{g.rows, g.srcLen, 1})
}

// Score returns τ · unit(q) · keys (rows, srcLen).
func (g *graphCosine[T]) Score(query, keys, _ *G.Node) *G.Node {
	q := query
	if g.queryW != nil {
		q = G.Must(G.Mul(query, g.queryW))
	}
	cos := graphDotScores[T](graphUnit[T](q, []int{g.rows, 1}), keys, g.rows, g.srcLen, 1)
	return G.Must(G.BroadcastHadamardProd(cos, G.Must(G.Reshape(g.tau, []int{1, 1})), nil, []byte{0, 1}))
}
