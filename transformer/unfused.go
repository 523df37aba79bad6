package transformer

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// UnfusedGraph adds the training loss of a batch to a gorgonia graph as Graph does — the same loss, the same
// guided term, the same masks asked in the same order, the same layouts, the same arguments — but composed from
// gorgonia's own ops (products, sums, Hadamard products, ReLU, reshapes, transposes, layer norms written out as
// graph.LayerNorm) and graph's small ops (AddBias, AttentionSoftmax, SelfMaskedSoftmax, MaskPositions, Columns,
// Concat, SoftmaxCrossEntropy), whose gradients gorgonia's autodiff derives: the reference the fused stacks'
// hand-written backward passes are held to (train.unfused=true trains with it). Only the embedding lookup is the
// shared gather graph.Embed.
//
// Activations are batch-major (row r·L+i is position i of sentence r), as the fused passes keep them:
//
//	encoder: x = (√D · E_src[w] + P) ⊙ m;  per block: x += SelfAttn(LN1(x)) ⊙ m;  x += FFN(LN2(x)) ⊙ m;
//	         mem = LN(x), padded rows 0
//	decoder: y = (√D · E_tgt[w] + P) ⊙ m;  per block: y += CausalSelfAttn(LN1(y)) ⊙ m;
//	         y += CrossAttn(LN2(y), mem) ⊙ m;  y += FFN(LN3(y)) ⊙ m;  out = LN(y)
//	loss = Σ_t (smoothed) xent(out_t W_out + b_out, tgtOut_t) over the targets that are not pad
//
// The time-major masks and embeddings are transposed to batch-major, the final states back to time-major for
// the loss, and, with a guide, the weights of head Cfg.AlignmentHead of block Cfg.AttentionLayer's
// cross-attention to (T, B, S) for align.GuideGraph's −Σ guide log(a + ε).
func (m *Model[T]) UnfusedGraph(p *graph.Params[T], src, srcLengths, tgtIn, tgtOut *[]int, rows, srcLen, tgtLen int,
	mask func(name string, steps int) *G.Node, smoothing float64, pad int, guide *G.Node, guideWeight float64) (loss, guided *G.Node) {
	encMasks, decMasks := m.maskNodes(mask, srcLen, tgtLen)
	u := unfused[T]{m: m, p: p, rows: rows}
	d, ns, nt := m.Cfg.Dim, rows*srcLen, rows*tgtLen

	// encoder: x = (√D · E_src[w] + P) ⊙ m, then the blocks
	x := u.embed(m.SrcEmb, m.SrcPos, src, srcLen, encMasks[0])
	for l := range m.Enc {
		x, _ = block.GraphBlock(p, m.block(false), m.Enc[l], x, nil, rows, srcLen, 0, func(scores *G.Node) *G.Node {
			return graph.SelfMaskedSoftmax[T](scores, srcLengths, srcLen)
		}, nil, func(k int, y *G.Node) *G.Node { return u.drop(y, encMasks[1+2*l+k], srcLen) })
	}
	mem := graph.MaskPositions[T](graph.LayerNorm(p, x, m.EncNorm.Gain, m.EncNorm.Bias, ns, d), srcLengths, srcLen)

	// decoder: y = (√D · E_tgt[w] + P) ⊙ m, then the blocks
	y := u.embed(m.TgtEmb, m.TgtPos, tgtIn, tgtLen, decMasks[0])
	var guidedWeights *G.Node // (B·T, S): the weights guided alignment trains
	for l := range m.Dec {
		var weights []*G.Node
		y, weights = block.GraphBlock(p, m.block(true), m.Dec[l], y, mem, rows, tgtLen, srcLen, func(scores *G.Node) *G.Node {
			return graph.AttentionSoftmax[T](scores, nil, tgtLen, true)
		}, func(scores *G.Node) *G.Node {
			return graph.AttentionSoftmax[T](scores, srcLengths, tgtLen, false)
		}, func(k int, y *G.Node) *G.Node { return u.drop(y, decMasks[1+3*l+k], tgtLen) })
		if guide != nil && l == m.Cfg.AttentionLayer {
			guidedWeights = weights[m.guidedHead()]
		}
	}
	out := u.timeMajor(graph.LayerNorm(p, y, m.DecNorm.Gain, m.DecNorm.Bias, nt, d), tgtLen, d)

	// logits = out W_out + b_out (W_out = E_tgtᵀ when tied), scored against tgtOut as graph.OutputXent does
	var w *G.Node
	if m.OutW != nil {
		w = p.Whole(m.OutW)
	} else {
		w = G.Must(G.Transpose(p.Whole(m.TgtEmb)))
	}
	logits := graph.AddBias[T](G.Must(G.Mul(out, w)), p.Whole(m.OutB))
	loss = graph.SoftmaxCrossEntropy[T](logits, tgtOut, pad, smoothing)
	if guide == nil {
		return loss, nil
	}
	guided = align.GuideGraph[T](G.Must(G.Reshape(u.timeMajor(guidedWeights, tgtLen, srcLen), guide.Shape().Clone())), guide)
	return G.Must(G.Add(loss, G.Must(G.Mul(guided, G.NewConstant(T(guideWeight)))))), guided
}

// unfused builds the parts of UnfusedGraph over a batch of rows sentences.
type unfused[T kernels.Float] struct {
	m    *Model[T]
	p    *graph.Params[T]
	rows int
}

// swap exchanges the first two axes of x (A, B, width): time-major to batch-major, or back.
func swap(x *G.Node) *G.Node { return G.Must(G.Transpose(x, 1, 0, 2)) }

// batchMajor is x (L·B, width) or (L, B, width) time-major as (B·L, width) batch-major.
func (u unfused[T]) batchMajor(x *G.Node, steps, width int) *G.Node {
	return G.Must(G.Reshape(swap(G.Must(G.Reshape(x, []int{steps, u.rows, width}))), []int{u.rows * steps, width}))
}

// timeMajor is x (B·L, width) batch-major as (L·B, width) time-major.
func (u unfused[T]) timeMajor(x *G.Node, steps, width int) *G.Node {
	return G.Must(G.Reshape(swap(G.Must(G.Reshape(x, []int{u.rows, steps, width}))), []int{steps * u.rows, width}))
}

// drop is x ⊙ mask, mask time-major (steps, B, D) as the trainer draws it, or x without a mask.
func (u unfused[T]) drop(x, mask *G.Node, steps int) *G.Node {
	if mask == nil {
		return x
	}
	return G.Must(G.HadamardProd(x, u.batchMajor(mask, steps, u.m.Cfg.Dim)))
}

// embed is one side's embedding layer, (√D · E[w] + P) ⊙ mask (B·L, D) batch-major over the ids (time-major
// L×B): the lookup is graph.Embed's, the positions P are sinusoids or the rows of the learned table pos (its
// last row for positions past it), picked by a constant one-hot matrix.
func (u unfused[T]) embed(table, pos *param.Tensor[T], ids *[]int, steps int, mask *G.Node) *G.Node {
	d := u.m.Cfg.Dim
	e := graph.Embed[T](u.p.Arena, u.p.Whole(table), ids, nil, steps, u.rows, d)
	e = G.Must(G.Reshape(swap(e), []int{u.rows, steps * d}))
	e = G.Must(G.Mul(e, G.NewConstant(T(math.Sqrt(float64(d))))))
	var positions *G.Node // (L·D)
	if pos == nil {
		sin := make([]T, steps*d)
		for i := 0; i < steps; i++ {
			Position(sin[i*d:(i+1)*d], i)
		}
		positions = G.NewConstant(tensor.New(tensor.WithShape(steps*d), tensor.WithBacking(sin)), G.WithName(fmt.Sprintf("sinusoids%d,%d", steps, d)))
	} else {
		count := pos.Shape[0]
		pick := make([]T, steps*count)
		for i := 0; i < steps; i++ {
			pick[i*count+min(i, count-1)] = 1 // later positions reuse the last
		}
		onehot := G.NewConstant(tensor.New(tensor.WithShape(steps, count), tensor.WithBacking(pick)), G.WithName(fmt.Sprintf("positions%d,%d", steps, count)))
		positions = G.Must(G.Reshape(G.Must(G.Mul(onehot, u.p.Whole(pos))), []int{steps * d}))
	}
	x := G.Must(G.Reshape(graph.AddBias[T](e, positions), []int{u.rows * steps, d}))
	return u.drop(x, mask, steps)
}
