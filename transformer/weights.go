package transformer

import (
	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// encWeights is the encoder's weights (or their gradients) as slices.
type encWeights[T kernels.Float] struct {
	emb, pos []T // pos nil with sinusoidal positions
	blocks   []block.BlockWeights[T]
	norm     block.NormWeights[T]
}

// decWeights is the decoder's weights (or their gradients) as slices, the output layer excluded.
type decWeights[T kernels.Float] struct {
	emb, pos []T
	blocks   []block.BlockWeights[T]
	norm     block.NormWeights[T]
}

// encoderTensors lists the encoder's parameters in a fixed order: the order of the encoder op's inputs and of
// encWeightsOf's slices. The encoder's embeddings come first.
func (m *Model[T]) encoderTensors() []*param.Tensor[T] {
	out := []*param.Tensor[T]{m.SrcEmb}
	if m.SrcPos != nil {
		out = append(out, m.SrcPos)
	}
	for _, b := range m.Enc {
		out = append(out, normTensors(b.Norm1)...)
		out = append(out, attnTensors(b.Self)...)
		out = append(out, normTensors(b.Norm2)...)
		out = append(out, ffTensors(b.FF)...)
	}
	return append(out, normTensors(m.EncNorm)...)
}

// decoderTensors lists the decoder's parameters (without the output layer) in the order of decWeightsOf's
// slices. The target embeddings come first.
func (m *Model[T]) decoderTensors() []*param.Tensor[T] {
	out := []*param.Tensor[T]{m.TgtEmb}
	if m.TgtPos != nil {
		out = append(out, m.TgtPos)
	}
	for _, b := range m.Dec {
		out = append(out, normTensors(b.Norm1)...)
		out = append(out, attnTensors(b.Self)...)
		out = append(out, normTensors(b.Norm2)...)
		out = append(out, attnTensors(b.Cross)...)
		out = append(out, normTensors(b.Norm3)...)
		out = append(out, ffTensors(b.FF)...)
	}
	return append(out, normTensors(m.DecNorm)...)
}

func normTensors[T kernels.Float](n Norm[T]) []*param.Tensor[T] {
	return []*param.Tensor[T]{n.Gain, n.Bias}
}

func attnTensors[T kernels.Float](a Attention[T]) []*param.Tensor[T] {
	return []*param.Tensor[T]{a.QueryW, a.QueryB, a.KeyW, a.KeyB, a.ValueW, a.ValueB, a.OutW, a.OutB}
}

func ffTensors[T kernels.Float](f FeedForward[T]) []*param.Tensor[T] {
	return []*param.Tensor[T]{f.W1, f.B1, f.W2, f.B2}
}

// tensors is the block's parameters as block.GraphBlock takes them.
func (b *EncoderBlock[T]) tensors() block.BlockTensors[T] {
	return block.BlockTensors[T]{Norms: []block.NormTensors[T]{b.Norm1.tensors(), b.Norm2.tensors()}, Self: b.Self.tensors(), FF: b.FF.tensors()}
}

// tensors is the block's parameters as block.GraphBlock takes them.
func (b *DecoderBlock[T]) tensors() block.BlockTensors[T] {
	return block.BlockTensors[T]{Norms: []block.NormTensors[T]{b.Norm1.tensors(), b.Norm2.tensors(), b.Norm3.tensors()},
		Self: b.Self.tensors(), Cross: b.Cross.tensors(), FF: b.FF.tensors()}
}

func (n Norm[T]) tensors() block.NormTensors[T] {
	return block.NormTensors[T]{Gain: n.Gain, Bias: n.Bias}
}

func (a Attention[T]) tensors() block.Tensors[T] {
	return block.Tensors[T]{QW: a.QueryW, QB: a.QueryB, KW: a.KeyW, KB: a.KeyB, VW: a.ValueW, VB: a.ValueB, OW: a.OutW, OB: a.OutB}
}

func (f FeedForward[T]) tensors() block.FFTensors[T] {
	return block.FFTensors[T]{W1: f.W1, B1: f.B1, W2: f.W2, B2: f.B2}
}

// dataOf returns the data of each tensor.
func dataOf[T kernels.Float](tensors []*param.Tensor[T]) [][]T {
	out := make([][]T, len(tensors))
	for i, t := range tensors {
		out[i] = t.Data
	}
	return out
}

// cursor reads slices in order.
type cursor[T kernels.Float] struct {
	w [][]T
	i int
}

func (c *cursor[T]) next() []T {
	c.i++
	return c.w[c.i-1]
}

func (c *cursor[T]) norm() block.NormWeights[T] {
	return block.NormWeights[T]{Gain: c.next(), Bias: c.next()}
}

func (c *cursor[T]) attention() block.Weights[T] {
	return block.Weights[T]{QW: c.next(), QB: c.next(), KW: c.next(), KB: c.next(), VW: c.next(), VB: c.next(), OW: c.next(), OB: c.next()}
}

func (c *cursor[T]) ff() block.FFWeights[T] {
	return block.FFWeights[T]{W1: c.next(), B1: c.next(), W2: c.next(), B2: c.next()}
}

// encWeightsOf reads w, slices in the order of encoderTensors.
func (m *Model[T]) encWeightsOf(w [][]T) encWeights[T] {
	c := &cursor[T]{w: w}
	e := encWeights[T]{emb: c.next()}
	if m.SrcPos != nil {
		e.pos = c.next()
	}
	for range m.Enc {
		n1, self, n2, ff := c.norm(), c.attention(), c.norm(), c.ff()
		e.blocks = append(e.blocks, block.BlockWeights[T]{Norms: []block.NormWeights[T]{n1, n2}, Self: self, FF: ff})
	}
	e.norm = c.norm()
	return e
}

// decWeightsOf reads w, slices in the order of decoderTensors.
func (m *Model[T]) decWeightsOf(w [][]T) decWeights[T] {
	c := &cursor[T]{w: w}
	e := decWeights[T]{emb: c.next()}
	if m.TgtPos != nil {
		e.pos = c.next()
	}
	for range m.Dec {
		n1, self, n2, cross, n3, ff := c.norm(), c.attention(), c.norm(), c.attention(), c.norm(), c.ff()
		e.blocks = append(e.blocks, block.BlockWeights[T]{Norms: []block.NormWeights[T]{n1, n2, n3}, Self: self, Cross: cross, FF: ff})
	}
	e.norm = c.norm()
	return e
}
