package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Graph adds the training loss of a batch to a gorgonia graph: the summed (label-smoothed) cross-entropy of
// the targets that are not pad, through fused ops whose hand-written backward passes give every parameter's
// gradient. The slices behind the pointers are refilled by the trainer before each run.
//
// mask(name, steps) returns the input node of a dropout mask of steps·rows·D values, time-major (steps, rows,
// D), or nil without dropout. It is called in this order: "drop.tf.src" (S), per encoder block l
// "drop.tf.enc.<l>.self" and "drop.tf.enc.<l>.ff" (S each), "drop.tf.tgt" (T), per decoder block l
// "drop.tf.dec.<l>.self", "drop.tf.dec.<l>.cross" and "drop.tf.dec.<l>.ff" (T each).
//
// The graph has three ops of this package: the encoder stack (the source embeddings, every encoder parameter
// and its masks in; the memory (B·S, D) out), the decoder stack (the memory, every decoder parameter and its
// masks in; the final states (T·B, D) time-major out), and, when the output layer is tied, the transposed
// target embeddings; graph.OutputXent then scores the final states. Scratch and caches live in p.Arena.
//
// With a guide (guided alignment: the gold (T, B, S) time-major, align.FillGuide's layout; nil without), guided
// is the guided-alignment cross-entropy −Σ_{t,r,i} guide_{t,r,i} log(a_{t,r,i} + ε) (align.GuideLoss) of the
// weights a of head Cfg.AlignmentHead of block Cfg.AttentionLayer's cross-attention, as Garg et al. (2019)
// train one head toward the links, and loss adds guideWeight times it; a fourth op computes it from the
// weights the decoder op kept and hands its gradient back to that op. guided is nil without a guide. A guide
// needs Cfg.AlignmentHead ≥ 1 (the model's config checks it; Graph panics otherwise).
//
// UnfusedGraph builds the same loss from gorgonia's own ops: the reference the tests hold this one to.
func (m *Model[T]) Graph(p *graph.Params[T], src, srcLengths, tgtIn, tgtOut *[]int, rows, srcLen, tgtLen int,
	mask func(name string, steps int) *G.Node, smoothing float64, pad int, guide *G.Node, guideWeight float64) (loss, guided *G.Node) {
	encMaskNodes, decMaskNodes := m.maskNodes(mask, srcLen, tgtLen)
	mem := m.encoderOp(p, src, srcLengths, rows, srcLen, encMaskNodes)
	out, pass := m.decoderOp(p, mem, srcLengths, tgtIn, rows, srcLen, tgtLen, decMaskNodes)
	var w *G.Node
	if m.OutW != nil {
		w = p.Whole(m.OutW)
	} else {
		w = transposed(p, p.Whole(m.TgtEmb))
	}
	loss = graph.OutputXent(p, []*G.Node{out}, nil, w, p.Whole(m.OutB), tgtOut, pad, smoothing)
	if guide == nil {
		return loss, nil
	}
	guided = m.guidedOp(p, out, guide, pass)
	return G.Must(G.Add(loss, G.Must(G.Mul(guided, G.NewConstant(T(guideWeight)))))), guided
}

// maskNodes asks mask for the dropout masks of Graph (and UnfusedGraph) in the order Graph's comment gives: the
// encoder's (the embeddings', then per block the self-attention's and the feed-forward layer's) and the
// decoder's (the embeddings', then per block the self-attention's, the cross-attention's and the feed-forward
// layer's). A mask may be nil (no dropout there).
func (m *Model[T]) maskNodes(mask func(name string, steps int) *G.Node, srcLen, tgtLen int) (enc, dec []*G.Node) {
	enc = []*G.Node{mask("drop.tf.src", srcLen)}
	for l := range m.Enc {
		enc = append(enc, mask(fmt.Sprintf("drop.tf.enc.%d.self", l), srcLen), mask(fmt.Sprintf("drop.tf.enc.%d.ff", l), srcLen))
	}
	dec = []*G.Node{mask("drop.tf.tgt", tgtLen)}
	for l := range m.Dec {
		dec = append(dec, mask(fmt.Sprintf("drop.tf.dec.%d.self", l), tgtLen),
			mask(fmt.Sprintf("drop.tf.dec.%d.cross", l), tgtLen), mask(fmt.Sprintf("drop.tf.dec.%d.ff", l), tgtLen))
	}
	return enc, dec
}

// guidedHead is the 0-based head that guided alignment trains, Cfg.AlignmentHead − 1; it panics when
// Cfg.AlignmentHead names no head (a guide needs one; the model's config checks it).
func (m *Model[T]) guidedHead() int {
	if m.Cfg.AlignmentHead < 1 || m.Cfg.AlignmentHead > m.Cfg.Heads {
		panic(fmt.Sprintf("transformer: a guide for alignment head %d of %d heads", m.Cfg.AlignmentHead, m.Cfg.Heads))
	}
	return m.Cfg.AlignmentHead - 1
}

// guidedOp is the guided-alignment loss of the decoder op dec, whose last forward pass *pass is: the scalar
// −Σ guide log(a + ε) (align.GuideLoss) of the weights a of head Cfg.AlignmentHead of block
// Cfg.AttentionLayer's cross-attention, gathered (T, B, S) time-major like guide. Its backward pass runs before
// the decoder op's (it reads dec's output) and gives that attention the loss's gradient on those weights, which
// the decoder op's backward pass carries down; dec itself gets a zero gradient from it.
func (m *Model[T]) guidedOp(p *graph.Params[T], dec, guide *G.Node, pass **pass[T]) *G.Node {
	s := guide.Shape()
	const name = "tf.guided"
	head := m.guidedHead()
	var weights []T
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TransformerGuidedAlignment(%d,%d,%d,%d,%d)", s[0], s[1], s[2], m.Cfg.AttentionLayer, head),
		Shape: tensor.ScalarShape(),
		Forward: func(in [][]T, out []T) {
			weights = p.Arena.Get(name+".weights", len(in[1]))
			(*pass).blocks[m.Cfg.AttentionLayer].Cross.HeadWeights(weights, head)
			out[0] = T(align.GuideLoss(weights, in[1]))
		},
		Backward: func(in [][]T, g []T) [][]T {
			// forward: guided = −Σ guide log(a + ε), so da = −g · guide / (a + ε), for the decoder op to add
			dWeights := p.Arena.Get(name+".dweights", len(in[1]))
			clear(dWeights)
			align.GuideBackward(weights, in[1], g[0], dWeights)
			c := (*pass).blocks[m.Cfg.AttentionLayer].Cross
			c.DWeights, c.WeightHead = dWeights, head
			grads := [][]T{p.Arena.Get(name+".ddec", len(in[0])), p.Arena.Get(name+".dguide", len(in[1]))}
			clear(grads[0])
			clear(grads[1])
			return grads
		},
	}, dec, guide)
}

// maskInputs appends the masks that are not nil to inputs and returns, for each mask, its index in inputs
// (−1 for nil), and a name part telling which are present.
func maskInputs(inputs, masks []*G.Node) ([]*G.Node, []int, string) {
	at := make([]int, len(masks))
	present := make([]byte, len(masks))
	for i, n := range masks {
		at[i], present[i] = -1, '0'
		if n != nil {
			at[i], present[i] = len(inputs), '1'
			inputs = append(inputs, n)
		}
	}
	return inputs, at, string(present)
}

// maskValues is the masks at the indices at of the values of the op's inputs in (nil where −1), in order.
func maskValues[T kernels.Float](in [][]T, at []int) [][]T {
	masks := make([][]T, len(at))
	for i, k := range at {
		if k >= 0 {
			masks[i] = in[k]
		}
	}
	return masks
}

// inputGrads returns zeroed gradient buffers from the arena for the inputs of a fused op whose values are in:
// the tensors from index first on, and before and after them other inputs (the memory, the masks, whose
// gradient, if the op gives none, stays zero: they are inputs, not parameters).
func inputGrads[T kernels.Float](a *kernels.Arena[T], name string, first int, tensors []*param.Tensor[T], in [][]T) [][]T {
	grads := make([][]T, len(in))
	for i := range in {
		part := fmt.Sprintf("%s.din%d", name, i)
		if i >= first && i < first+len(tensors) {
			part = name + ".grad." + tensors[i-first].Name
		}
		grads[i] = a.Get(part, len(in[i]))
		clear(grads[i])
	}
	return grads
}

// encoderOp adds the encoder stack as one fused op; its output is the memory (B·S, D), padded rows 0.
func (m *Model[T]) encoderOp(p *graph.Params[T], src, lengths *[]int, rows, srcLen int, masks []*G.Node) *G.Node {
	tensors := m.encoderTensors()
	var inputs []*G.Node
	for _, t := range tensors {
		inputs = append(inputs, p.Whole(t))
	}
	inputs, at, present := maskInputs(inputs, masks)
	const name = "tf.enc"
	var pass *pass[T]
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TransformerEncoder(%d,%d,%d,%d,%d,%s,%d,%d,%s)", m.Cfg.Dim, m.Cfg.Heads, m.Cfg.FF, m.Cfg.Layers, m.Cfg.SrcVocab, m.Cfg.Positions, rows, srcLen, present),
		Shape: tensor.Shape{rows * srcLen, m.Cfg.Dim},
		Forward: func(in [][]T, out []T) {
			pass = m.encodeForward(m.weightsOf(false, in[:len(tensors)]), *src, *lengths, rows, srcLen, maskValues(in, at), out, p.Arena, name)
		},
		Backward: func(in [][]T, g []T) [][]T {
			grads := inputGrads(p.Arena, name, 0, tensors, in)
			pass.backward(m.weightsOf(false, in[:len(tensors)]), m.weightsOf(false, grads[:len(tensors)]), g, nil)
			return grads
		},
	}, inputs...)
}

// decoderOp adds the decoder stack as one fused op over the memory node mem; its output is the final states
// (T·B, D), time-major. The op's last forward pass is returned too, for guidedOp.
func (m *Model[T]) decoderOp(p *graph.Params[T], mem *G.Node, srcLengths, tgtIn *[]int, rows, srcLen, tgtLen int, masks []*G.Node) (*G.Node, **pass[T]) {
	tensors := m.decoderTensors()
	inputs := []*G.Node{mem}
	for _, t := range tensors {
		inputs = append(inputs, p.Whole(t))
	}
	inputs, at, present := maskInputs(inputs, masks)
	const name = "tf.dec"
	d, n := m.Cfg.Dim, rows*tgtLen
	pass := new(*pass[T])
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TransformerDecoder(%d,%d,%d,%d,%d,%s,%d,%d,%d,%s)", d, m.Cfg.Heads, m.Cfg.FF, m.Cfg.Layers, m.Cfg.TgtVocab, m.Cfg.Positions, rows, srcLen, tgtLen, present),
		Shape: tensor.Shape{n, d},
		Forward: func(in [][]T, out []T) {
			*pass = m.decodeForward(m.weightsOf(true, in[1:1+len(tensors)]), in[0], *srcLengths, srcLen, *tgtIn, rows, tgtLen, maskValues(in, at), p.Arena, name)
			transpose(out, (*pass).final.H, rows, tgtLen, d)
		},
		Backward: func(in [][]T, g []T) [][]T {
			grads := inputGrads(p.Arena, name, 1, tensors, in)
			dOut := p.Arena.Get(name+".dout", n*d)
			transpose(dOut, g, tgtLen, rows, d)
			(*pass).backward(m.weightsOf(true, in[1:1+len(tensors)]), m.weightsOf(true, grads[1:1+len(tensors)]), dOut, grads[0])
			return grads
		},
	}, inputs...), pass
}

// transposed is the (D, V) transpose of the embeddings node emb (V, D), the tied output layer's weights; its
// gradient goes back to the embeddings transposed, where it adds to the embedding layer's own.
func transposed[T kernels.Float](p *graph.Params[T], emb *G.Node) *G.Node {
	v, d := emb.Shape()[0], emb.Shape()[1]
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TiedOutput(%d,%d)", v, d),
		Shape: tensor.Shape{d, v},
		Forward: func(in [][]T, out []T) {
			transpose2(out, in[0], v, d)
		},
		Backward: func(_ [][]T, g []T) [][]T {
			// forward: out[u][i] = emb[i][u]
			grad := p.Arena.Get("tf.tied.grad", v*d)
			transpose2(grad, g, d, v)
			return [][]T{grad}
		},
	}, emb)
}

// transpose2 writes the transpose of src (a, b) into dst (b, a), in tiles of 32×32 so that both stay in cache.
func transpose2[T kernels.Float](dst, src []T, a, b int) {
	const tile = 32
	for i0 := 0; i0 < a; i0 += tile {
		for j0 := 0; j0 < b; j0 += tile {
			for i := i0; i < min(i0+tile, a); i++ {
				for j := j0; j < min(j0+tile, b); j++ {
					dst[j*a+i] = src[i*b+j]
				}
			}
		}
	}
}
