package transformer

import (
	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// stackWeights is the encoder's or the decoder's weights (or their gradients) as slices, the output layer
// excluded.
type stackWeights[T kernels.Float] struct {
	emb, pos []T // pos nil with sinusoidal positions
	blocks   []block.BlockWeights[T]
	norm     block.NormWeights[T]
}

// encoderTensors lists the encoder's parameters in a fixed order: the order of the encoder op's inputs and of
// weightsOf's slices. The encoder's embeddings come first.
func (m *Model[T]) encoderTensors() []*param.Tensor[T] {
	var blocks []block.BlockTensors[T]
	for _, b := range m.Enc {
		blocks = append(blocks, b.tensors())
	}
	return m.stackTensors(false, m.SrcEmb, m.SrcPos, blocks, m.EncNorm)
}

// decoderTensors lists the decoder's parameters (without the output layer) in the order of weightsOf's slices.
// The target embeddings come first.
func (m *Model[T]) decoderTensors() []*param.Tensor[T] {
	var blocks []block.BlockTensors[T]
	for _, b := range m.Dec {
		blocks = append(blocks, b.tensors())
	}
	return m.stackTensors(true, m.TgtEmb, m.TgtPos, blocks, m.DecNorm)
}

// stackTensors lists a stack's parameters: the embeddings, the positions (when learned), every block's
// (block.List) and the final layer norm's.
func (m *Model[T]) stackTensors(decoder bool, emb, pos *param.Tensor[T], blocks []block.BlockTensors[T], norm Norm[T]) []*param.Tensor[T] {
	out := []*param.Tensor[T]{emb}
	if pos != nil {
		out = append(out, pos)
	}
	for _, b := range blocks {
		out = append(out, block.List(m.block(decoder), b)...)
	}
	return append(out, norm.Gain, norm.Bias)
}

// tensors is the block's parameters as package block takes them.
func (b *EncoderBlock[T]) tensors() block.BlockTensors[T] {
	return block.BlockTensors[T]{Norms: []block.NormTensors[T]{b.Norm1.tensors(), b.Norm2.tensors()}, Self: b.Self.tensors(), FF: b.FF.tensors()}
}

// tensors is the block's parameters as package block takes them.
func (b *DecoderBlock[T]) tensors() block.BlockTensors[T] {
	return block.BlockTensors[T]{Norms: []block.NormTensors[T]{b.Norm1.tensors(), b.Norm2.tensors(), b.Norm3.tensors()},
		Self: b.Self.tensors(), Cross: b.Cross.tensors(), FF: b.FF.tensors()}
}

func (n Norm[T]) tensors() block.NormTensors[T] { return block.NormTensors[T]{Gain: n.Gain, Bias: n.Bias} }

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

// weightsOf reads w, slices in the order of encoderTensors (or, with decoder, decoderTensors).
// (The stacks have as many blocks, and learned positions both or neither.)
func (m *Model[T]) weightsOf(decoder bool, w [][]T) stackWeights[T] {
	e := stackWeights[T]{emb: w[0]}
	w = w[1:]
	if m.SrcPos != nil {
		e.pos, w = w[0], w[1:]
	}
	for range m.Enc {
		var b block.BlockWeights[T]
		b, w = block.Read(m.block(decoder), w)
		e.blocks = append(e.blocks, b)
	}
	e.norm = block.NormWeights[T]{Gain: w[0], Bias: w[1]}
	return e
}
