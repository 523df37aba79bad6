package block

import (
	"math"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Tensors is one attention's parameters, laid out as Weights says (a nil bias is none).
type Tensors[T kernels.Float] struct{ QW, QB, KW, KB, VW, VB, OW, OB *param.Tensor[T] }

// Graph adds the multi-head attention a to a gorgonia training graph, built from gorgonia's own ops for the
// autodiff reference (train.unfused=true): the queries from x (B·Lq, QueryDim) over the keys and values from
// mem (B·Lk, MemDim), both batch-major, head j's weights softmax(Q_j K_jᵀ / √HD) as the caller's softmax
// masks them ((B·Lq, Lk) scores in, weights out), and out = [A_1 V_1 … A_NH V_NH] W_O + b_O (B·Lq, OutDim), as
// Cache.Forward computes. It returns out and every head's weights.
func Graph[T kernels.Float](p *graph.Params[T], a Attention, w Tensors[T], x, mem *G.Node, rows, lq, lk int, softmax func(scores *G.Node) *G.Node) (*G.Node, []*G.Node) {
	hd, width := a.HeadDim, a.Width()
	reshape := func(n *G.Node, shape ...int) *G.Node { return G.Must(G.Reshape(n, shape)) }
	// project returns head j's projection (B, steps, HD) of in (B·steps, dim) for every j.
	project := func(in *G.Node, weight, bias *param.Tensor[T], dim, steps int) func(j int) *G.Node {
		if a.PerHead {
			return func(j int) *G.Node {
				y := G.Must(G.Mul(in, p.View(weight, j*dim*hd, dim, hd)))
				if bias != nil {
					y = graph.AddBias[T](y, p.View(bias, j*hd, hd))
				}
				return reshape(y, rows, steps, hd)
			}
		}
		y := G.Must(G.Mul(in, p.View(weight, 0, dim, width)))
		if bias != nil {
			y = graph.AddBias[T](y, p.View(bias, 0, width))
		}
		return func(j int) *G.Node { return reshape(graph.Columns[T](y, j*hd, (j+1)*hd), rows, steps, hd) }
	}
	q, k, v := project(x, w.QW, w.QB, a.QueryDim, lq), project(mem, w.KW, w.KB, a.MemDim, lk), project(mem, w.VW, w.VB, a.MemDim, lk)
	scale := G.NewConstant(T(1 / math.Sqrt(float64(hd))))
	contexts := make([]*G.Node, a.Heads)
	weights := make([]*G.Node, a.Heads)
	for j := range contexts {
		scores := G.Must(G.Mul(G.Must(G.BatchedMatMul(q(j), k(j), false, true)), scale))
		weights[j] = softmax(reshape(scores, rows*lq, lk))
		contexts[j] = reshape(G.Must(G.BatchedMatMul(reshape(weights[j], rows, lq, lk), v(j))), rows*lq, hd)
	}
	ctx := contexts[0]
	if len(contexts) > 1 {
		ctx = graph.Concat[T](contexts)
	}
	out := G.Must(G.Mul(ctx, p.View(w.OW, 0, width, a.OutDim)))
	if w.OB != nil {
		out = graph.AddBias[T](out, p.View(w.OB, 0, a.OutDim))
	}
	return out, weights
}

// NormTensors is one layer norm's gain and bias.
type NormTensors[T kernels.Float] struct{ Gain, Bias *param.Tensor[T] }

// FFTensors is one feed-forward layer's parameters, as FFWeights.
type FFTensors[T kernels.Float] struct{ W1, B1, W2, B2 *param.Tensor[T] }

// BlockTensors is one block's parameters, as BlockWeights.
type BlockTensors[T kernels.Float] struct {
	Norms       []NormTensors[T]
	Self, Cross Tensors[T]
	FF          FFTensors[T]
}

// GraphBlock adds the block b to a gorgonia training graph, built from gorgonia's own ops as BlockCache.Forward
// computes it: x (B·L, D) batch-major, over the memory mem (B·memSteps, D; read with Cross only); the
// self-attention's scores masked by selfSoftmax and the cross-attention's by crossSoftmax (Graph); drop(k, y)
// the dropout of sub-layer k's output y (nil: none). It returns the block's output and the cross-attention's
// heads' weights (nil without Cross).
func GraphBlock[T kernels.Float](p *graph.Params[T], b Block, w BlockTensors[T], x, mem *G.Node, rows, steps, memSteps int,
	selfSoftmax, crossSoftmax func(scores *G.Node) *G.Node, drop func(k int, y *G.Node) *G.Node) (*G.Node, []*G.Node) {
	n := rows * steps
	var crossWeights []*G.Node
	sublayer := func(k int, h *G.Node) *G.Node {
		var y *G.Node
		switch {
		case k == 0:
			y, _ = Graph(p, b.Attention, w.Self, h, h, rows, steps, steps, selfSoftmax)
		case k == 1 && b.Cross:
			y, crossWeights = Graph(p, b.Attention, w.Cross, h, mem, rows, steps, memSteps, crossSoftmax)
		default: // ReLU(h W_1 + b_1) W_2 + b_2
			act := G.Must(G.Rectify(graph.AddBias[T](G.Must(G.Mul(h, p.Whole(w.FF.W1))), p.Whole(w.FF.B1))))
			y = graph.AddBias[T](G.Must(G.Mul(act, p.Whole(w.FF.W2))), p.Whole(w.FF.B2))
		}
		if drop != nil {
			y = drop(k, y)
		}
		return y
	}
	for k := 0; k < b.sublayers(); k++ {
		norm := func(x *G.Node) *G.Node { return graph.LayerNorm(p, x, w.Norms[k].Gain, w.Norms[k].Bias, n, b.OutDim) }
		if b.PostNorm { // x = LN(x + Drop(f(x)))
			x = norm(G.Must(G.Add(x, sublayer(k, x))))
		} else { // x += Drop(f(LN(x)))
			x = G.Must(G.Add(x, sublayer(k, norm(x))))
		}
	}
	return x, crossWeights
}

// List lists t's tensors in the order of the block's weights: pre-norm, each sub-layer's layer norm (gain,
// bias) and then its tensors; post-norm, its tensors and then its layer norm. An attention's are W_Q, b_Q, W_K,
// b_K, W_V, b_V, W_O, b_O; the feed-forward layer's W1, B1, W2, B2.
func List[T kernels.Float](b Block, t BlockTensors[T]) []*param.Tensor[T] {
	var out []*param.Tensor[T]
	for k := 0; k < b.sublayers(); k++ {
		norm := []*param.Tensor[T]{t.Norms[k].Gain, t.Norms[k].Bias}
		a := t.Self
		if k == 1 && b.Cross {
			a = t.Cross
		}
		sub := []*param.Tensor[T]{a.QW, a.QB, a.KW, a.KB, a.VW, a.VB, a.OW, a.OB}
		if k == b.sublayers()-1 {
			sub = []*param.Tensor[T]{t.FF.W1, t.FF.B1, t.FF.W2, t.FF.B2}
		}
		if b.PostNorm {
			norm, sub = sub, norm
		}
		out = append(append(out, norm...), sub...)
	}
	return out
}

// Read returns one block's weights (or their gradients) from the front of w, slices in List's order, and the
// rest of w.
func Read[T kernels.Float](b Block, w [][]T) (BlockWeights[T], [][]T) {
	var bw BlockWeights[T]
	next := func() []T {
		v := w[0]
		w = w[1:]
		return v
	}
	norm := func() { bw.Norms = append(bw.Norms, NormWeights[T]{Gain: next(), Bias: next()}) }
	for k := 0; k < b.sublayers(); k++ {
		if !b.PostNorm {
			norm()
		}
		switch {
		case k == b.sublayers()-1:
			bw.FF = FFWeights[T]{W1: next(), B1: next(), W2: next(), B2: next()}
		default:
			a := Weights[T]{QW: next(), QB: next(), KW: next(), KB: next(), VW: next(), VB: next(), OW: next(), OB: next()}
			if k == 0 {
				bw.Self = a
			} else {
				bw.Cross = a
			}
		}
		if b.PostNorm {
			norm()
		}
	}
	return bw, w
}
