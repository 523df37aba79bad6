package transformer

import (
	"fmt"

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
func (m *Model[T]) Graph(p *graph.Params[T], src, srcLengths, tgtIn, tgtOut *[]int, rows, srcLen, tgtLen int,
	mask func(name string, steps int) *G.Node, smoothing float64, pad int) *G.Node {
	encMaskNodes := []*G.Node{mask("drop.tf.src", srcLen)}
	for l := range m.Enc {
		encMaskNodes = append(encMaskNodes, mask(fmt.Sprintf("drop.tf.enc.%d.self", l), srcLen), mask(fmt.Sprintf("drop.tf.enc.%d.ff", l), srcLen))
	}
	decMaskNodes := []*G.Node{mask("drop.tf.tgt", tgtLen)}
	for l := range m.Dec {
		decMaskNodes = append(decMaskNodes, mask(fmt.Sprintf("drop.tf.dec.%d.self", l), tgtLen),
			mask(fmt.Sprintf("drop.tf.dec.%d.cross", l), tgtLen), mask(fmt.Sprintf("drop.tf.dec.%d.ff", l), tgtLen))
	}
	mem := m.encoderOp(p, src, srcLengths, rows, srcLen, encMaskNodes)
	out := m.decoderOp(p, mem, srcLengths, tgtIn, rows, srcLen, tgtLen, decMaskNodes)
	var w *G.Node
	if m.OutW != nil {
		w = p.Whole(m.OutW)
	} else {
		w = transposed(p, p.Whole(m.TgtEmb))
	}
	return graph.OutputXent(p.Arena, []*G.Node{out}, nil, w, p.Whole(m.OutB), tgtOut, pad, smoothing)
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

// maskValue is the mask at index i of at (the values of the op's inputs in), or nil.
func maskValue[T kernels.Float](in [][]T, at []int, i int) []T {
	if at[i] < 0 {
		return nil
	}
	return in[at[i]]
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
	var pass *encPass[T]
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TransformerEncoder(%d,%d,%d,%d,%d,%s,%d,%d,%s)", m.Cfg.Dim, m.Cfg.Heads, m.Cfg.FF, m.Cfg.Layers, m.Cfg.SrcVocab, m.Cfg.Positions, rows, srcLen, present),
		Shape: tensor.Shape{rows * srcLen, m.Cfg.Dim},
		Forward: func(in [][]T, out []T) {
			em := encMasks[T]{emb: maskValue(in, at, 0)}
			for l := range m.Enc {
				em.self = append(em.self, maskValue(in, at, 1+2*l))
				em.ff = append(em.ff, maskValue(in, at, 2+2*l))
			}
			pass = m.encodeForward(m.encWeightsOf(in[:len(tensors)]), *src, *lengths, rows, srcLen, em, out, p.Arena, name)
		},
		Backward: func(in [][]T, g []T) [][]T {
			grads := inputGrads(p.Arena, name, 0, tensors, in)
			pass.backward(m.encWeightsOf(in[:len(tensors)]), m.encWeightsOf(grads[:len(tensors)]), g)
			return grads
		},
	}, inputs...)
}

// decoderOp adds the decoder stack as one fused op over the memory node mem; its output is the final states
// (T·B, D), time-major.
func (m *Model[T]) decoderOp(p *graph.Params[T], mem *G.Node, srcLengths, tgtIn *[]int, rows, srcLen, tgtLen int, masks []*G.Node) *G.Node {
	tensors := m.decoderTensors()
	inputs := []*G.Node{mem}
	for _, t := range tensors {
		inputs = append(inputs, p.Whole(t))
	}
	inputs, at, present := maskInputs(inputs, masks)
	const name = "tf.dec"
	d, n := m.Cfg.Dim, rows*tgtLen
	var pass *decPass[T]
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("TransformerDecoder(%d,%d,%d,%d,%d,%s,%d,%d,%d,%s)", d, m.Cfg.Heads, m.Cfg.FF, m.Cfg.Layers, m.Cfg.TgtVocab, m.Cfg.Positions, rows, srcLen, tgtLen, present),
		Shape: tensor.Shape{n, d},
		Forward: func(in [][]T, out []T) {
			dm := decMasks[T]{emb: maskValue(in, at, 0)}
			for l := range m.Dec {
				dm.self = append(dm.self, maskValue(in, at, 1+3*l))
				dm.cross = append(dm.cross, maskValue(in, at, 2+3*l))
				dm.ff = append(dm.ff, maskValue(in, at, 3+3*l))
			}
			pass = m.decodeForward(m.decWeightsOf(in[1:1+len(tensors)]), in[0], *srcLengths, srcLen, *tgtIn, rows, tgtLen, dm, p.Arena, name)
			transpose(out, pass.final.h, rows, tgtLen, d)
		},
		Backward: func(in [][]T, g []T) [][]T {
			grads := inputGrads(p.Arena, name, 1, tensors, in)
			dOut := p.Arena.Get(name+".dout", n*d)
			transpose(dOut, g, tgtLen, rows, d)
			pass.backward(m.decWeightsOf(in[1:1+len(tensors)]), m.decWeightsOf(grads[1:1+len(tensors)]), dOut, grads[0])
			return grads
		},
	}, inputs...)
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
