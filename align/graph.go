package align

import (
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
)

// GraphMLP is the additive score bound to one training graph. The memory arrives as two halves (forward and
// backward encoder states, (rows, srcLen, half) each), so W_h is bound as its two row blocks.
type GraphMLP[T kernels.Float] struct {
	memW           [2]*G.Node // W_h rows reading the forward / backward half
	queryW, queryB *G.Node
	v              *G.Node
	rows, srcLen   int
	half, dim      int
}

// Graph binds the score's parameters to p for batches of rows × srcLen.
func (m *MLP[T]) Graph(p *graph.Params[T], rows, srcLen int) *GraphMLP[T] {
	half := m.MemDim / 2
	return &GraphMLP[T]{
		memW:   [2]*G.Node{p.View(m.MemW, 0, half, m.Dim), p.View(m.MemW, half*m.Dim, half, m.Dim)},
		queryW: p.Whole(m.QueryW), queryB: p.Whole(m.QueryB), v: p.Whole(m.V),
		rows: rows, srcLen: srcLen, half: half, dim: m.Dim,
	}
}

// Keys returns W_h h_i for every position, (rows, srcLen, Dim).
func (m *GraphMLP[T]) Keys(fwd, bwd *G.Node) *G.Node {
	flat := func(x *G.Node) *G.Node { return G.Must(G.Reshape(x, []int{m.rows * m.srcLen, m.half})) }
	keys := G.Must(G.Add(G.Must(G.Mul(flat(fwd), m.memW[0])), G.Must(G.Mul(flat(bwd), m.memW[1]))))
	return G.Must(G.Reshape(keys, []int{m.rows, m.srcLen, m.dim}))
}

// Score returns e (rows, srcLen) for the query s_{t-1} (rows, QueryDim): vᵀ tanh(W_s s + b_s + keys).
func (m *GraphMLP[T]) Score(query, keys *G.Node) *G.Node {
	q := graph.AddBias[T](G.Must(G.Mul(query, m.queryW)), m.queryB)
	pre := G.Must(G.Tanh(graph.AddQuery[T](keys, q)))
	e := G.Must(G.Mul(G.Must(G.Reshape(pre, []int{m.rows * m.srcLen, m.dim})), m.v))
	return G.Must(G.Reshape(e, []int{m.rows, m.srcLen}))
}

// AttendGraph is Attend in a training graph: masked softmax of scores (rows, srcLen), then the context of each
// memory half, (rows, half) each.
func AttendGraph[T kernels.Float](scores *G.Node, lengths *[]int, fwd, bwd *G.Node) (weights, ctxFwd, ctxBwd *G.Node) {
	rows, srcLen, half := fwd.Shape()[0], fwd.Shape()[1], fwd.Shape()[2]
	weights = graph.MaskedSoftmax[T](scores, lengths)
	w3 := G.Must(G.Reshape(weights, []int{rows, 1, srcLen}))
	ctx := func(mem *G.Node) *G.Node {
		return G.Must(G.Reshape(G.Must(G.BatchedMatMul(w3, mem)), []int{rows, half}))
	}
	return weights, ctx(fwd), ctx(bwd)
}
