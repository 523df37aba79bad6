package encoder

import (
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
)

// GraphOutput is the symbolic encoder output of a training graph.
type GraphOutput struct {
	// Fwd and Bwd are the unfused encoder's states of each direction, (rows, srcLen, Hidden) batch-major;
	// together they are the attention memory [fwd ; bwd] that Output.Memory holds in one tensor. With
	// self-attention layers they are the two halves of the last block's output (and Packed's states likewise).
	// Nil for the fused encoder.
	Fwd, Bwd *G.Node
	// FinalH and FinalC are the unfused encoder's forward and backward final states (rows, Hidden) each: index 0
	// forward, 1 backward.
	FinalH, FinalC [2]*G.Node
	// Packed holds, for the fused encoder, each direction's output as its op makes it — (srcLen+2, rows, Hidden):
	// states time-major, final h, final c — which the fused decoder reads. Nil for the unfused one.
	Packed [2]*G.Node
}

// GraphMasks are the dropout masks of the encoder in one training graph; a nil mask means no dropout there.
type GraphMasks struct {
	Emb *G.Node // (srcLen, rows, Emb) on the embeddings
	// Between[l-1] is (srcLen, rows, 2·Hidden) on the input of layer l+1 (Layers[l]): the states of the layer
	// below. It has one mask per layer above the first, or is nil.
	Between []*G.Node
}

// between returns the mask on the input of Layers[l], l ≥ 1, or nil.
func (m GraphMasks) between(l int) *G.Node {
	if m.Between == nil {
		return nil
	}
	return m.Between[l-1]
}

// Graph adds the encoder to a training graph for a batch of rows × srcLen time-major ids. src and lengths are
// read at run time, so the graph serves every batch of this shape. With fused, a direction is one op
// (fusedDirection, over recurrence) and so is the join of two directions into the next layer's input
// (joinDirections); otherwise every step is built from gorgonia's own ops. The
// self-attention blocks, if any, follow as one fused op with fused, from gorgonia's ops otherwise; the final
// states stay those of the last recurrent layer.
func (e *Encoder[T]) Graph(p *graph.Params[T], src, lengths *[]int, rows, srcLen int, masks GraphMasks, fused bool) *GraphOutput {
	emb := graph.Embed[T](p.Arena, p.Whole(e.Emb), src, masks.Emb, srcLen, rows, e.Cfg.Emb)
	out := &GraphOutput{}
	if fused {
		x := emb
		for l, layer := range e.Layers {
			if l > 0 {
				x = joinDirections[T](p.Arena, out.Packed[0], out.Packed[1], masks.between(l), l+1)
			}
			for dir, d := range layer.directions() {
				out.Packed[dir] = fusedDirection(p, e.Cfg.Cell, x, d, lengths, dir == 1, l+1)
			}
		}
		if e.Self != nil {
			out.Packed[0], out.Packed[1] = e.Self.fusedGraph(p, out.Packed[0], out.Packed[1], lengths, rows, srcLen)
		}
		return out
	}
	// inputs[t] is the current layer's input at position t: the embedding, then [fwd ; bwd] of the layer below.
	inputs := make([]*G.Node, srcLen)
	for t := range inputs {
		inputs[t] = graph.Select[T](emb, t)
	}
	var states [2][]*G.Node // each direction's state at every position
	for l, layer := range e.Layers {
		if l > 0 {
			mask := masks.between(l)
			for t := range inputs {
				inputs[t] = graph.Concat[T]([]*G.Node{states[0][t], states[1][t]})
				if mask != nil {
					inputs[t] = G.Must(G.HadamardProd(inputs[t], graph.Select[T](mask, t)))
				}
			}
		}
		for dir, d := range layer.directions() {
			cell := e.bindCell(p, d, e.Cfg.inputWidth(l))
			h := p.Zeros("h0", rows, e.Cfg.Hidden)
			c := h
			states[dir] = make([]*G.Node, srcLen)
			for step := 0; step < srcLen; step++ {
				t := step
				if dir == 1 {
					t = srcLen - 1 - step
				}
				hNew, cNew := cell.step(inputs[t], h, c)
				h = graph.MaskedUpdate[T](h, hNew, lengths, t)
				if e.Cfg.Cell == LSTM {
					c = graph.MaskedUpdate[T](c, cNew, lengths, t)
				} else {
					c = h
				}
				states[dir][t] = h
			}
			out.FinalH[dir], out.FinalC[dir] = h, c
		}
	}
	out.Fwd, out.Bwd = graph.Stack[T](states[0], true), graph.Stack[T](states[1], true)
	if e.Self != nil {
		out.Fwd, out.Bwd = e.Self.Graph(p, out.Fwd, out.Bwd, lengths, rows, srcLen)
	}
	return out
}

// graphCell is one direction's weights bound to a graph, gate by gate, so that no gate is sliced out of a wider
// node.
type graphCell[T kernels.Float] struct {
	lstm               bool
	inW, hidW, b, hidB []*G.Node
}

func (e *Encoder[T]) bindCell(p *graph.Params[T], d Direction[T], in int) *graphCell[T] {
	g, h := e.Cfg.Cell.Gates(), e.Cfg.Hidden
	c := &graphCell[T]{lstm: e.Cfg.Cell == LSTM}
	for k := 0; k < g; k++ {
		c.inW = append(c.inW, p.View(d.InputW, k*in*h, in, h))
		c.hidW = append(c.hidW, p.View(d.HiddenW, k*h*h, h, h))
		c.b = append(c.b, p.View(d.Bias, k*h, h))
		if d.HiddenBias != nil {
			c.hidB = append(c.hidB, p.View(d.HiddenBias, k*h, h))
		}
	}
	return c
}

// step is the unfused cell: every gate a pair of products, a bias and an activation, in gorgonia ops.
func (c *graphCell[T]) step(x, h, cPrev *G.Node) (hNew, cNew *G.Node) {
	pre := func(k int) *G.Node {
		return graph.AddBias[T](G.Must(G.Add(G.Must(G.Mul(x, c.inW[k])), G.Must(G.Mul(h, c.hidW[k])))), c.b[k])
	}
	if c.lstm {
		return LSTMGraph(pre(0), pre(1), pre(2), pre(3), cPrev)
	}
	// GRU: r and z see both biases; the candidate multiplies only the hidden part (with its bias) by r.
	xPart := func(k int) *G.Node { return graph.AddBias[T](G.Must(G.Mul(x, c.inW[k])), c.b[k]) }
	hPart := func(k int) *G.Node { return graph.AddBias[T](G.Must(G.Mul(h, c.hidW[k])), c.hidB[k]) }
	r := G.Must(G.Sigmoid(G.Must(G.Add(xPart(0), hPart(0)))))
	z := G.Must(G.Sigmoid(G.Must(G.Add(xPart(1), hPart(1)))))
	n := G.Must(G.Tanh(G.Must(G.Add(xPart(2), G.Must(G.HadamardProd(r, hPart(2)))))))
	// h = (1-z)*n + z*h = n + z*(h-n)
	hNew = G.Must(G.Add(n, G.Must(G.HadamardProd(z, G.Must(G.Sub(h, n))))))
	return hNew, hNew
}

// LSTMGraph is the LSTM pointwise step over gate pre-activations in gorgonia ops:
// c = σ(f)·cPrev + σ(i)·tanh(g);  h = σ(o)·tanh(c).
func LSTMGraph(i, f, g, o, cPrev *G.Node) (h, c *G.Node) {
	c = G.Must(G.Add(
		G.Must(G.HadamardProd(G.Must(G.Sigmoid(f)), cPrev)),
		G.Must(G.HadamardProd(G.Must(G.Sigmoid(i)), G.Must(G.Tanh(g))))))
	h = G.Must(G.HadamardProd(G.Must(G.Sigmoid(o)), G.Must(G.Tanh(c))))
	return h, c
}
